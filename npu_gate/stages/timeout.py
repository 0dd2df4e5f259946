"""The run's time limit (``--timeout``): a deadline on the ``Settings`` every stage is given,
checked by the pipeline before each stage it limits (``pipeline.run_stages``), by folding
between nodes and given to the compiler probe as the upper bound of its own timeout.

A stage still running ``GRACE`` seconds past it is interrupted (``stopping``: a SIGALRM raising
``npu_gate.process.interrupt.Interrupted`` inside it, on POSIX in the main thread; elsewhere only the
checks between stages and the stages' own bounds hold). The grace lets what bounds itself by the
deadline (folding, the compiler's timeout) end on its own and say what it did; an interrupted
stage is recorded as one the deadline stopped.

Once it has passed, the stages not yet run are recorded as skipped (reason ``timeout: ...``)
and one ``gate-timeout`` finding (an error: a run that did not finish never passes) names the
stage that was running and the limit; the verdict is decided from what was analysed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from npu_gate.findings.gates import gate_timeout
from npu_gate.process import interrupt
from npu_gate.result.types import GateResult

DEFAULT_SECONDS = 1800.0  # `--timeout`'s default, and the pipeline's for callers that give none
RULE = "gate-timeout"
GRACE = 1.0  # seconds past the deadline a stage is interrupted at (within the +2 s a run may overrun)
Interrupted = interrupt.Interrupted


@dataclass
class Deadline:
    """``seconds`` (the limit) after the run started: ``at``, a ``time.monotonic()``.
    ``running``: the stage started last, which a ``gate-timeout`` finding names."""

    seconds: float
    at: float
    running: str = "load"

    @classmethod
    def after(cls, seconds: float | None, first: str = "load") -> Deadline | None:
        """The deadline ``seconds`` from now, ``first`` the stage that starts now; None (no
        limit) for None or 0."""
        return cls(seconds, time.monotonic() + seconds, first) if seconds else None

    def left(self) -> float:
        """Seconds until the deadline (0 once it has passed)."""
        return max(self.at - time.monotonic(), 0.0)

    def passed(self) -> bool:
        return time.monotonic() >= self.at


@contextmanager
def stopping(deadline: Deadline) -> Iterator[bool]:
    """The block (one stage) interrupted with ``Interrupted`` ``GRACE`` seconds past the deadline;
    False when it cannot be (``interrupt.after``)."""
    with interrupt.after(deadline.left() + GRACE) as armed:
        yield armed


def skip_reason(deadline: Deadline) -> str:
    """The reason of the rows of the stages the deadline stops (``pipeline.run_stages`` writes them)."""
    return f"timeout: the run reached its {deadline.seconds:g} s limit (--timeout) during {deadline.running}"


def finish(deadline: Deadline | None, result: GateResult, before: str | None = None) -> None:
    """Before the verdict (or as the deadline stops stage ``before``): if the deadline has passed, the
    run's ``gate-timeout`` finding (once), naming the stage that was running and the limit."""
    if deadline is None or not deadline.passed() or timed_out(result):
        return
    after = (f"{before} and the stages after it did not run" if before is not None
             else "what it computed may be incomplete (folding and rewrite trials stop at the limit)")
    result.findings.append(gate_timeout(deadline.seconds, deadline.running, after))


def timed_out(result: GateResult) -> bool:
    """Whether the run that made ``result`` reached its time limit (such a result is never cached)."""
    return any(f.rule == RULE for f in result.findings)
