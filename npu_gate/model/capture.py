"""Capture everything a noisy library prints or warns, at the file-descriptor level too.

Exporters print progress lines, Python warnings, logging records and C++ messages; none
of it may spill onto the user's terminal unstructured. It goes into the conversion log.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator


class Captured:
    def __init__(self) -> None:
        self.lines: list[str] = []


@contextlib.contextmanager
def capture_output() -> Iterator[Captured]:
    captured = Captured()
    py_out, py_err = io.StringIO(), io.StringIO()
    log_stream = io.StringIO()
    handler = logging.StreamHandler(log_stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    with tempfile.TemporaryFile(mode="w+b") as fd_sink:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        os.dup2(fd_sink.fileno(), 1)
        os.dup2(fd_sink.fileno(), 2)
        try:
            with (
                warnings.catch_warnings(record=True) as caught,
                contextlib.redirect_stdout(py_out),
                contextlib.redirect_stderr(py_err),
            ):
                warnings.simplefilter("always")
                yield captured
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            _flush_c_stdio()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            root.removeHandler(handler)
            fd_sink.seek(0)
            fd_text = fd_sink.read().decode("utf-8", errors="replace")
            for text in (fd_text, py_out.getvalue(), py_err.getvalue(), log_stream.getvalue()):
                captured.lines.extend(line.rstrip() for line in text.splitlines() if line.strip())
            for w in caught:
                captured.lines.append(f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})")


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers (C++ std::cout shares them): torch's C++ messages sit there
    when stdout is not a terminal and would otherwise reach the real stdout at exit."""
    with contextlib.suppress(OSError, AttributeError, TypeError):  # no C library handle (Windows)
        ctypes.CDLL(None).fflush(None)
