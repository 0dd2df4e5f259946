"""The contract's own code (factory import and module, exports, the eager PyTorch reference,
the task metric) runs in one child process per contract check, never in the gate's interpreter.

The parent (``UserCode``) sends one JSON request per line on the child's stdin; the child
answers with a JSON status file in its own temporary folder and then the request's number on
a private pipe. What the parent takes back is only data it validates: ONNX files (read with
onnx), ``.npz`` arrays (``allow_pickle=False``) and that JSON status (log lines, errors as one
line, seconds). Nothing the child writes is unpickled. A crash, an exit, a hang past the time
limit or an unreadable status is a ``WorkerFailed`` with one line; the caller makes it a finding.
The verdict is decided by the parent, from that data only.

The child runs ``python -I`` with the parent's ``sys.path`` and working directory (so the
contract's relative paths and its imports resolve as they did in the gate's own process: the
contract folder first while a factory imports), in its own session (its processes are stopped
with it), and with ``isolation.child_environment``: without the CI's token, the workflow-file
variables and secret-looking ones. When the gate runs as root it runs as an unprivileged user
(``isolation.child_user``), so it cannot read the environment of the processes above it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import weakref
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from npu_gate.contract.spec import Contract
from npu_gate.errors import GateError, ModelError
from npu_gate.process import interrupt
from npu_gate.process.isolation import ChildUser, child_environment, child_user, hide_environment

LIMIT_SECONDS = 900.0  # one request (a build, an export, the reference, a metric call): generous
STATUS_BYTES = 64 * 1024 * 1024  # a status file larger than this is garbage
OUT = "out"  # the subfolder of the child's folder it writes in (statuses, outputs); the rest is the gate's
# sys.path as the parent has it (its PYTHONPATH too), this npu_gate first; -I ignores PYTHON* variables.
BOOT = "import json, sys; sys.path[:] = json.loads(sys.argv[1]); from npu_gate.model.worker import serve; serve()"


class WorkerFailed(Exception):
    """The child crashed, exited, hung or answered garbage: one line saying which."""


@dataclass
class Reply:
    """A validated status: ``error`` (one line) when the user's code failed, ``bad_input``
    when that is a problem of the contract (exit 2 as before: a factory that cannot be imported)."""

    error: str | None = None
    bad_input: bool = False
    details: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)  # the contract's code files imported so far

    def raise_bad_input(self) -> None:
        if self.bad_input and self.error:
            raise ModelError(self.error, details=self.details)


MAX_CODE_FILES = 2000


class UserCode:
    """The child process of one contract check, started on the first request."""

    def __init__(self, contract: Contract, limit: float | None = None) -> None:
        self.contract = contract
        self.limit = LIMIT_SECONDS if limit is None else limit
        self._proc: subprocess.Popen[bytes] | None = None
        self._folder: Path | None = None
        self._count = 0
        self._dead: str | None = None  # once it failed, every later request fails the same way
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self.user = ChildUser(None, None, None)  # who the child runs as (isolation.child_user), once started
        self.sources: set[str] = set()  # as the child reports them: see code_files_read

    def code_files_read(self) -> list[str] | None:
        """The contract's own code files the child imported (the cache's dependencies), checked
        here: regular files under the contract's import folders, at most MAX_CODE_FILES of them;
        None when the child named anything else (then nothing may be cached)."""
        homes = [str(f) + os.sep for f in code_folders(self.contract)]
        files = sorted(self.sources)
        if len(files) > MAX_CODE_FILES:
            return None
        for file in files:
            resolved = os.path.realpath(file)
            if resolved != file or not any(file.startswith(h) for h in homes) or not Path(file).is_file():
                return None
        return files

    # -- the process ------------------------------------------------------------------
    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None:
            return self._proc
        with interrupt.deferred():  # a child started must be recorded, to be stopped
            return self._spawn()

    def _spawn(self) -> subprocess.Popen[bytes]:
        folder = Path(tempfile.mkdtemp(prefix="npu-gate-user-"))
        self._folder = folder
        with (folder / "contract.pickle").open("wb") as f:  # the parent's own data, read by the child
            pickle.dump(replace(self.contract, file_samples=None), f)
        paths = [str(Path(p).resolve()) if p else os.getcwd() for p in sys.path]
        root = str(Path(__file__).resolve().parents[2])  # this npu_gate, first
        (folder / OUT).mkdir()  # what the child writes; the folder itself stays the gate's
        self.user = child_user([sys.executable, os.getcwd(), root, *paths], [str(folder / OUT)])
        env = child_environment()
        if self.user.uid is not None:  # another user: a home it can write in (caches)
            env["HOME"] = str(folder / OUT)
        hide_environment()
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOT, json.dumps([root, *paths]), str(folder)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, start_new_session=True, **self.user.popen_args())  # the gate's working directory, as before
        self._finalizer = weakref.finalize(self, _stop, self._proc, folder)
        return self._proc

    def close(self) -> None:
        with interrupt.deferred():  # the child stopped whole
            if self._finalizer is not None:
                self._finalizer()
            self._proc = None

    def __enter__(self) -> UserCode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def folder(self) -> Path:
        self._start()
        assert self._folder is not None
        return self._folder

    # -- requests -----------------------------------------------------------------------
    def request(self, op: str, **args: Any) -> Reply:
        """Run ``op`` in the child; WorkerFailed when it does not answer with a valid status."""
        if self._dead is not None:
            raise WorkerFailed(self._dead)
        try:
            return self._request(op, args)
        except WorkerFailed as exc:
            self._dead = str(exc)
            self.close()
            raise
        except interrupt.Interrupted:  # the run's time limit, mid-request: the child is stopped now
            self._dead = "stopped at the run's time limit (--timeout)"
            self.close()
            raise

    def _request(self, op: str, args: dict[str, Any]) -> Reply:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None and self._folder is not None
        self._count += 1
        number = self._count
        try:
            proc.stdin.write((json.dumps({"id": number, "op": op, "args": args}) + "\n").encode())
            proc.stdin.flush()
        except OSError:
            raise WorkerFailed(self._ended(proc)) from None
        line = _read_line(proc, time.monotonic() + self.limit)
        if line is None:
            raise WorkerFailed(f"the model code did not answer within {self.limit:g} s (stopped)")
        if line == b"":
            raise WorkerFailed(self._ended(proc))
        if line.strip() != str(number).encode():
            raise WorkerFailed("the model code's process answered garbage")
        reply = read_status(self._folder / OUT / f"status-{number}.json")
        self.sources.update(reply.sources)
        return reply

    def _ended(self, proc: subprocess.Popen[bytes]) -> str:
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "the model code's process closed its pipe without answering"
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return f"the model code's process ended ({how}) before answering"

    # -- the operations ------------------------------------------------------------------
    def imports(self) -> None:
        """The metric and a torch replacement's factory import (a ModelError when not)."""
        try:
            reply = self.request("imports")
        except WorkerFailed as exc:
            raise ModelError(f"{self.contract.path}: importing the contract's code: {exc}") from None
        reply.raise_bad_input()

    def build(self, key: str) -> Reply:
        """Build the module of ``key`` (``model.torch`` or ``replacement.torch``) in the child."""
        reply = self.request("build", key=key)
        reply.raise_bad_input()
        return reply

    def export(self, key: str, exporter: str, folder: Path) -> Reply:
        """Export the module of ``key`` with ``exporter`` to ``folder/model.onnx``; ``data["onnx"]``
        the path when it was written."""
        target = folder
        if self._dead is None:
            self._start()
            if self.user.uid is not None:  # another user's folder, in the gate's; copied from once written
                target = self.folder / f"export-{self._count + 1}"
                target.mkdir()
                self.user.hand_over(target)
        reply = self.request("export", key=key, exporter=exporter, folder=str(target))
        if target != folder:
            copy_regular_files(target, folder)
        path = folder / "model.onnx"
        written = reply.error is None and path.is_file() and not path.is_symlink()
        reply.data["onnx"] = path if written else None
        if reply.error is None and reply.data["onnx"] is None:
            reply.error = "the exporter returned without writing a model"
        return reply

    def reference(self, key: str, samples: list[dict[str, np.ndarray]]) -> tuple[list[list[np.ndarray]], Reply]:
        """The eager module's outputs on ``samples`` (flattened tensors, per sample)."""
        names = [i.name for i in self.contract.inputs]
        tag = self._count + 1
        inputs = self.folder / f"samples-{tag}.npz"
        save_rows(inputs, samples, names)
        out = self.folder / OUT / f"outputs-{tag}.npz"
        reply = self.request("reference", key=key, samples=inputs.name, names=names, count=len(samples),
                             out=f"{OUT}/{out.name}")
        if reply.error is not None:
            return [], reply
        counts = reply.data.get("counts")
        if not (isinstance(counts, list) and len(counts) == len(samples)
                and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 100_000 for c in counts)):
            raise WorkerFailed("the model code's process answered garbage (reference output counts)")
        arrays = load_arrays(out)
        try:
            outputs = [[arrays[f"s{k}o{i}"] for i in range(c)] for k, c in enumerate(counts)]
        except KeyError:
            raise WorkerFailed("the model code's process answered garbage (reference outputs missing)") from None
        return outputs, reply

    def metric(self, reference: list[dict[str, np.ndarray]], candidate: list[dict[str, np.ndarray]],
               samples: list[dict[str, np.ndarray]]) -> Reply:
        """The contract's metric on these arrays; ``data["values"]``: name -> number."""
        tag = self._count + 1
        files = {}
        for label, rows in (("reference", reference), ("candidate", candidate), ("samples", samples)):
            names = sorted({n for row in rows for n in row})
            path = self.folder / f"metric-{label}-{tag}.npz"
            save_rows(path, rows, names)
            files[label] = {"file": path.name, "names": names, "keys": [sorted(row) for row in rows]}
        reply = self.request("metric", **files)
        if reply.error is None:
            values = reply.data.get("values")
            if not (isinstance(values, dict) and all(
                    isinstance(v, int | float) and not isinstance(v, bool) for v in values.values())):
                raise WorkerFailed("the model code's process answered garbage (metric values)")
            reply.data["values"] = {str(k): float(v) for k, v in values.items()}
        return reply


def copy_regular_files(source: Path, folder: Path) -> None:
    """The regular files another user's child wrote in ``source`` (an export: the model and its
    external data), copied into ``folder``, each opened without following a link."""
    for entry in os.scandir(source):
        if entry.is_file(follow_symlinks=False):
            with contextlib.suppress(WorkerFailed), _open_regular(Path(entry.path)) as f, \
                    (folder / entry.name).open("wb") as out:
                shutil.copyfileobj(f, out)


def _stop(proc: subprocess.Popen[bytes], folder: Path) -> None:
    """End the child and every process of its session, then remove its folder."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    # Every request was answered (or given up on): nothing is lost by not waiting for its exit.
    with contextlib.suppress(OSError, AttributeError):  # ended already; no killpg (Windows)
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: what it started goes too
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    if proc.stdout is not None:
        proc.stdout.close()
    shutil.rmtree(folder, ignore_errors=True)


def _read_line(proc: subprocess.Popen[bytes], deadline: float) -> bytes | None:
    """One short line from the child's pipe: b"" when it closed or the child ended (a process
    it forked may hold the pipe open), None past the deadline."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    got = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while b"\n" not in got:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not selector.select(min(left, 0.5)):
                if proc.poll() is not None:
                    return b""
                continue
            chunk = os.read(fd, 64)
            if not chunk:
                return b""
            got += chunk
            if len(got) > 64:
                return b"garbage"
    return got


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading when it is a regular file the child wrote (not a FIFO that
    would block, a device or a symlink to one); WorkerFailed otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        raise WorkerFailed(f"the model code's process did not write its {path.suffix[1:]} file") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WorkerFailed(f"the model code's process wrote a {path.suffix[1:]} file that is not a regular file")
    return os.fdopen(fd, "rb")


def read_status(path: Path) -> Reply:
    """The child's status file, validated field by field (WorkerFailed when it is not one)."""
    with _open_regular(path) as f:
        raw = f.read(STATUS_BYTES + 1)
    try:
        if len(raw) > STATUS_BYTES:
            raise ValueError("too large")
        status = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        raise WorkerFailed("the model code's process wrote an unreadable status") from None
    if not isinstance(status, dict):
        raise WorkerFailed("the model code's process wrote an unreadable status")
    error, log, details = status.get("error"), status.get("log", []), status.get("details", [])
    seconds, data = status.get("seconds", 0.0), status.get("data", {})
    valid = ((error is None or isinstance(error, str)) and isinstance(status.get("bad_input", False), bool)
             and _strings(log) and _strings(details) and isinstance(data, dict)
             and isinstance(seconds, int | float) and not isinstance(seconds, bool))
    if not valid:
        raise WorkerFailed("the model code's process wrote an unreadable status")
    sources = status.get("sources", [])
    if not _strings(sources):
        raise WorkerFailed("the model code's process wrote an unreadable status")
    return Reply(" ".join(error.splitlines()) if error is not None else None, bool(status.get("bad_input")),
                 details, log, float(seconds), data, sources)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def save_rows(path: Path, rows: list[dict[str, np.ndarray]], names: list[str]) -> None:
    """Rows of named arrays as ``s{k}i{j}`` (sample k, the j-th of ``names``)."""
    arrays = {f"s{k}i{j}": np.asarray(row[n]) for k, row in enumerate(rows)
              for j, n in enumerate(names) if n in row}
    np.savez(path, **arrays)  # type: ignore[arg-type]  # the stubs fear a key named allow_pickle


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of an .npz the child wrote, never unpickling (object arrays are garbage)."""
    with _open_regular(path) as f:
        return _arrays(f)


# The arrays one answer of the child may hold (the outputs of every numerics sample): a file of
# the child's declaring more is refused before it is decompressed.
MAX_ARRAY_BYTES = 2 << 30


def _arrays(f: BinaryIO) -> dict[str, np.ndarray]:
    """Read as a samples file is: headers and declared sizes checked before any decompression,
    so a zip bomb from the model code costs the gate nothing (samples_file.read_arrays)."""
    from npu_gate.contract.samples_file import read_arrays

    try:
        with zipfile.ZipFile(f) as zf:
            return read_arrays(zf, "arrays", MAX_ARRAY_BYTES, "one answer")
    except GateError as exc:  # a bomb, an object array, a lying header
        raise WorkerFailed(f"the model code's process wrote unreadable arrays ({exc.problems[0]})") from None
    except Exception as exc:  # a zip file can fail in many ways
        raise WorkerFailed(f"the model code's process wrote unreadable arrays ({type(exc).__name__})") from None


def load_rows(path: Path, names: list[str], keys: list[list[str]]) -> list[dict[str, np.ndarray]]:
    arrays = load_arrays(path)
    return [{n: arrays[f"s{k}i{names.index(n)}"] for n in row} for k, row in enumerate(keys)]


# ---------------------------------------------------------------- the child

def serve() -> None:
    """The child's loop: one request per stdin line, a status file, then its number on the pipe."""
    reply = os.dup(1)  # the private answer channel; user code's prints go nowhere
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    folder = Path(sys.argv[2])
    with (folder / "contract.pickle").open("rb") as f:
        contract: Contract = pickle.load(f)  # written by the parent, not by user code
    modules: dict[str, Any] = {}
    for line in sys.stdin:
        request = json.loads(line)
        start = time.perf_counter()
        status: dict[str, Any] = {"error": None, "log": [], "details": [], "data": {}}
        try:
            _handle(contract, folder, modules, request["op"], request["args"], status)
        except BaseException as exc:  # user code may raise anything, sys.exit too
            from npu_gate.errors import one_line

            status["error"] = status["error"] or one_line(exc)
        status["seconds"] = time.perf_counter() - start
        status["sources"] = code_files(code_folders(contract))
        path = folder / OUT / f"status-{request['id']}.json"
        path.write_text(json.dumps(status), encoding="utf-8")
        os.write(reply, f"{request['id']}\n".encode())


def code_folders(contract: Contract) -> list[Path]:
    """Where the contract's own code may come from: its import folders, and the working folder
    (on ``sys.path`` under ``python -m``, which the child keeps): a module found there is code
    whose change must miss the cache too."""
    return [*contract.import_folders, Path(os.path.realpath(os.getcwd()))]


def code_files(folders: list[Path]) -> list[str]:
    """The files of the modules imported so far from ``folders`` (the contract's own code, not
    installed packages): what a cached result of this contract depends on besides its key."""
    homes = [str(f) + os.sep for f in folders]
    out = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or "site-packages" in file or "dist-packages" in file:
            continue
        resolved = os.path.realpath(file)
        if any(resolved.startswith(home) for home in homes) and os.path.isfile(resolved):
            out.add(resolved)
    return sorted(out)


def _handle(contract: Contract, folder: Path, modules: dict[str, Any], op: str, args: dict[str, Any],
            status: dict[str, Any]) -> None:
    from npu_gate.model import export as exporter

    if op == "imports":
        _bad_input(status, lambda: _imports(contract))
    elif op == "build":
        log: list[str] = []
        key = args["key"]
        built = _bad_input(status, lambda: exporter.build_module(_as_model(contract, key), key, log))
        status["log"] = log
        if built is not None:
            modules[key] = built
    elif op == "export":
        as_model = _as_model(contract, args["key"])
        assert as_model.torch is not None
        as_model = replace(as_model, torch=replace(as_model.torch, exporter=args["exporter"]))
        outcome = exporter.export(as_model, modules[args["key"]], Path(args["folder"]))
        status.update(error=outcome.error, log=outcome.log)
        status["data"]["seconds"] = outcome.seconds
    elif op == "reference":
        from npu_gate.model.capture import capture_output
        from npu_gate.model.numerics import run_torch

        names = args["names"]
        with np.load(folder / args["samples"], allow_pickle=False) as data:
            samples = [{n: data[f"s{k}i{j}"] for j, n in enumerate(names)} for k in range(args["count"])]
        with capture_output() as captured:
            try:
                outputs = run_torch(modules[args["key"]], contract, samples)
            except (Exception, SystemExit) as exc:  # forward() may call sys.exit()
                from npu_gate.errors import one_line

                status["error"] = one_line(exc)
                outputs = []
        status["log"] = captured.lines
        if status["error"] is None:
            np.savez(folder / args["out"], **{f"s{k}o{i}": o for k, row in enumerate(outputs)
                                              for i, o in enumerate(row)})  # type: ignore[arg-type]
            status["data"]["counts"] = [len(row) for row in outputs]
    elif op == "metric":
        _metric(contract, folder, args, status)
    else:
        raise ValueError(f"unknown request {op!r}")


def _as_model(contract: Contract, key: str) -> Contract:
    if key == "model.torch":
        return contract
    assert contract.replacement is not None and contract.replacement.torch is not None
    return replace(contract, torch=contract.replacement.torch, onnx_path=None)


def _bad_input(status: dict[str, Any], work: Any) -> Any:
    try:
        return work()
    except ModelError as exc:
        status.update(error=" ".join(exc.problems), bad_input=True, details=exc.details)
        return None


def _imports(contract: Contract) -> None:
    from npu_gate.model.user_code import import_callable

    spec = contract.replacement
    if contract.metric is not None:
        import_callable(contract.metric.callable, contract.import_folders, f"{contract.path}: metric.callable")
    if spec is not None and spec.torch is not None:
        import_callable(spec.torch.factory, contract.import_folders, f"{contract.path}: replacement.torch.factory")


def _metric(contract: Contract, folder: Path, args: dict[str, Any], status: dict[str, Any]) -> None:
    """``fn(reference, candidate, samples)`` -> {name: number}, as ``rewrites.metric`` describes it."""
    from npu_gate.errors import one_line
    from npu_gate.model.user_code import import_callable

    assert contract.metric is not None
    rows = {label: load_rows(folder / args[label]["file"], args[label]["names"], args[label]["keys"])
            for label in ("reference", "candidate", "samples")}
    fn = import_callable(contract.metric.callable, contract.import_folders, "metric.callable")
    added = str(contract.folder.resolve())
    sys.path.insert(0, added)  # the metric may import its folder's modules when it runs
    try:
        values = fn(rows["reference"], rows["candidate"], rows["samples"])
        if not isinstance(values, dict):
            raise TypeError(f"returned {type(values).__name__}, not a dict of name -> number")
        status["data"]["values"] = {str(k): float(v) for k, v in values.items()}
    except (Exception, SystemExit) as exc:  # the metric may call sys.exit()
        status["error"] = f"{contract.metric.callable}: {one_line(exc)}"
    finally:
        if added in sys.path:
            sys.path.remove(added)
