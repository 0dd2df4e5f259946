"""The driver side of the probe protocol, shared by every driver script (stdlib only).

A driver defines ``build(request, save)``: it reads the request, calls ``save(stage=...)``
before each stage and ``save(status="ok", ...)`` when the compiler built the model; an
exception is a failed build. ``main(build)`` then serves one of two modes:

- single: ``python -u DRIVER.py REQUEST.json RESPONSE.json`` builds one model and exits;
- batch: ``python -u DRIVER.py --batch FD`` builds many models in one process (compilers
  import slowly and build fast). Each stdin line is a job ``{"id", "work", "request",
  "response"}``; for the job the process moves into ``work``, points TMPDIR at ``work/tmp``
  and file descriptors 1 and 2 at ``work/compiler.log`` (so C output lands in the job's own
  log), builds, flushes Python's and C's buffers, and writes ``{"done": id}`` on the
  control file descriptor FD. The parent waits for that line with a timeout; a crash or a
  hang kills this process and the parent starts a new one for the next job.

Drivers live in the compiler's own venv without npu_gate: Python finds this module because
it sits in the driver's folder (sys.path[0]).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from typing import Any

Save = Callable[..., None]
Build = Callable[[dict[str, Any], Save], None]


def main(build: Build, initial: dict[str, Any]) -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        return serve(build, initial, int(sys.argv[2]))
    run_one(build, initial, sys.argv[1], sys.argv[2])
    return 0


def run_one(build: Build, initial: dict[str, Any], request_path: str, response_path: str) -> None:
    """One build; the response file is rewritten at every stage so a crash still says where it died."""
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    response = dict(initial)

    def save(**changes: Any) -> None:
        response.update(changes)
        _flush()
        with open(response_path, "w", encoding="utf-8") as f:
            json.dump(response, f)

    save()
    try:
        build(request, save)
    except Exception as exc:  # the compiler raises (or returns non-zero) on models it rejects
        save(status="failed", error=f"{response.get('stage')}: {error_line(exc)}")


def serve(build: Build, initial: dict[str, Any], control_fd: int) -> int:
    control = os.fdopen(control_fd, "w", encoding="utf-8", buffering=1)
    home_out, home_err = os.dup(1), os.dup(2)
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        work = job["work"]
        tmp = os.path.join(work, "tmp")
        os.makedirs(tmp, exist_ok=True)
        os.chdir(work)
        os.environ["TMPDIR"] = tmp
        tempfile.tempdir = tmp
        log = os.open(os.path.join(work, "compiler.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        _flush()
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        try:
            run_one(build, initial, job["request"], job["response"])
        finally:
            _flush()
            os.dup2(home_out, 1)
            os.dup2(home_err, 2)
        control.write(json.dumps({"done": job["id"]}) + "\n")
    return 0


_libc: list[Any] = []


def _flush() -> None:
    """Python's buffers and C stdio's: the compiler's C code prints through the latter."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if not _libc:
            import ctypes

            _libc.append(ctypes.CDLL(None))
        _libc[0].fflush(None)
    except (OSError, AttributeError):
        pass


def error_line(exc: BaseException) -> str:
    """The compiler's whole error on one line. Compilers wrap their tracebacks into the message:
    what follows the last frame (and that frame's code line) is the error, and a message that
    goes on over several lines is kept whole ("Node (If_3) input 'h' / is not output of any
    previous nodes."), not cut to its last fragment."""
    # Python 3.11+ marks the failing expression under a frame's code line with ^ and ~: not the error
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not _MARKERS.match(line)]
    frames = [i for i, line in enumerate(lines) if line.startswith('File "')]
    if frames:
        rest = lines[frames[-1] + 1:]
        if len(rest) > 1 and not _EXCEPTION.match(rest[0]):
            rest = rest[1:]  # the frame's source line
        lines = rest
    text = " ".join(line for line in lines if not line.startswith("Traceback (most recent call last)"))
    if len(text) > _MAX_ERROR:
        text = text[:_MAX_ERROR - 1] + "…"
    return text or type(exc).__name__


_MARKERS = re.compile(r"^\s*[\^~]+\s*$")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Warning|Exit|Interrupt)\b")
_MAX_ERROR = 2000
