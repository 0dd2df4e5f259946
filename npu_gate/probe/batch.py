"""One long-lived driver process that builds many models (calibration sweeps).

A compiler's import costs far more than a small build (RKNN-Toolkit2: ~0.6 s import,
~0.05 s per single-op model), so a sweep sends its models to one child that serves the
batch mode of the driver protocol (drivers/_protocol.py). Each model still gets its own
work folder with its own request, response, log and compiler dumps, laid out as a
single-process run's, so the same parsing and node mapping read it. Crash isolation stays:
when the child dies (a SIGSEGV in the compiler) or does not answer in time, that model's
run is ``crashed``/timed out, the child is gone, and the next model starts a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from npu_gate.errors import GateError
from npu_gate.probe.base import ChildRun, Compiler
from npu_gate.probe.runner import DRIVERS, child_env, driver_user, kill_group, read_run, write_request
from npu_gate.process.isolation import ChildUser, reclaim


class BatchChild:
    """The child process of a batch; ``run`` starts (or restarts) it as needed."""

    def __init__(self, compiler: Compiler, python: Path, root: Path, timeout: float | None = None) -> None:
        if not compiler.batch:
            raise GateError(f"--compiler {compiler.name}: its driver has no batch mode")
        self.compiler, self.python, self.root = compiler, python, root
        self.timeout = timeout or compiler.timeout_s
        self.starts = 0  # processes started so far (1 + the restarts after crashes and timeouts)
        self.jobs = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: int | None = None
        self._log: IO[bytes] | None = None
        self.user = ChildUser(None, None, None)  # who the child runs as, once started

    def __enter__(self) -> BatchChild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        self.starts += 1
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        read_end, write_end = os.pipe()
        argv = [os.path.abspath(self.python), "-u", str(DRIVERS / self.compiler.driver), "--batch", str(write_end)]
        # what the child prints between jobs (its imports' warnings) goes to the child's own log
        self._log = open(self.root / f"child-{self.starts}.log", "wb")  # noqa: SIM115 (closed in _stop)
        # the root stays the gate's (the jobs' folders are made there); each job's is handed over in run
        self.user = driver_user(self.python, self.root / "tmp")
        try:
            proc = subprocess.Popen(argv, cwd=self.root, env=child_env(self.root, self.user), stdin=subprocess.PIPE,
                                    stdout=self._log, stderr=subprocess.STDOUT, pass_fds=(write_end,),
                                    start_new_session=True, **self.user.popen_args())
        except OSError as exc:
            os.close(read_end)
            raise GateError(f"{self.python}: cannot run the {self.compiler.product} Python: {exc.strerror}") from None
        finally:
            os.close(write_end)
        self._proc, self._control = proc, read_end
        return proc

    def run(self, request: dict[str, Any], work: Path) -> ChildRun:
        """Build one request in ``work``; never raises for what the child does."""
        request_path, response_path, _ = write_request(work, request)
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        self.user.hand_over(work, work / "tmp")  # the driver writes its response and dumps there
        self.jobs += 1
        job = {"id": self.jobs, "work": str(work.resolve()), "request": str(request_path.resolve()),
               "response": str(response_path.resolve())}
        start = time.perf_counter()
        assert proc.stdin is not None and self._control is not None
        try:
            proc.stdin.write((json.dumps(job) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:  # it died between jobs: the next wait sees the end of its control pipe
            pass
        answer = self._wait(self._control, start + self.timeout)
        seconds = time.perf_counter() - start
        if answer == "timeout":
            kill_group(proc)
            self._stop()
            reclaim(self.user, work)  # the gate's again before it reads the driver's files
            return read_run(work, None, seconds, self.timeout)
        returncode = 0
        if answer == "eof":
            returncode = proc.wait()
            self._stop()
        reclaim(self.user, work)
        return read_run(work, returncode, seconds)

    @staticmethod
    def _wait(fd: int, deadline: float) -> str:
        """``done`` when the child answered, ``eof`` when it died, ``timeout``."""
        buffer = b""
        while b"\n" not in buffer:
            left = deadline - time.perf_counter()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return "timeout"
            chunk = os.read(fd, 4096)
            if not chunk:
                return "eof"
            buffer += chunk
        return "done"

    def _stop(self) -> None:
        if self._proc is not None and self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        if self._control is not None:
            os.close(self._control)
        if self._log is not None:
            self._log.close()
        self._proc, self._control, self._log = None, None, None

    def close(self) -> None:
        """End the child: close its stdin (it exits after its current job), kill it if it lingers."""
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(proc)
        self._stop()
