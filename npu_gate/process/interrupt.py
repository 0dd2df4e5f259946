"""An interruption at a time limit inside the code that runs, and the sections it waits for.

``after(seconds)`` raises ``Interrupted`` inside its block once the time has passed: a SIGALRM
(``signal.setitimer``) whose handler raises. Python runs a signal handler between two bytecodes
of the main thread, so a Python loop, a ``time.sleep`` or a wait on a child's pipe is stopped; a
long call into C code (a regular expression of ``re``, onnxruntime, protobuf) is stopped only once
it returns. Where SIGALRM cannot be used (not POSIX, not the main thread, or a timer of the
caller's is already set) the block runs to its end: ``after`` yields False.

``deferred()`` marks a section the interruption must not break (starting or stopping a child
process: a child started but not recorded would be left running): a ring inside it raises at its end.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Interrupted(BaseException):
    """Raised inside the running code at the time limit. A BaseException, as KeyboardInterrupt is:
    the ``except Exception`` of the code it stops (a stage recording its own failures) lets it through."""


class _State:
    armed = False  # a ring raises (once): set by ``after``, cleared by the ring and when the block ends
    deferring = 0  # ``deferred`` sections open
    pending = False  # a ring came inside one: it raises when the last ends


def available() -> bool:
    """Whether ``after`` can interrupt here (POSIX, the main thread)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def after(seconds: float) -> Iterator[bool]:
    """Interrupt the block (``Interrupted``) once ``seconds`` have passed; True when it can."""
    if not available() or _State.armed or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        yield False  # elsewhere, nested, or the caller's own timer runs: never replace it
        return
    previous = signal.signal(signal.SIGALRM, _ring)
    _State.armed, _State.pending = True, False
    try:
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
        yield True
    finally:
        try:
            _State.armed = False  # a ring from here on is ignored (one before it raises, and this still runs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)  # None: not Python's
            _State.pending = False


@contextmanager
def deferred() -> Iterator[None]:
    """A section an interruption waits for: it raises when the section ends."""
    _State.deferring += 1
    try:
        yield
    finally:
        _State.deferring -= 1
        if _State.deferring == 0 and _State.pending:
            _State.pending = False
            raise Interrupted


def _ring(signum: int, frame: FrameType | None) -> None:
    if not _State.armed:
        return
    _State.armed = False
    if _State.deferring:
        _State.pending = True
        return
    raise Interrupted
