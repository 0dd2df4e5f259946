"""``npu-gate probe setup COMPILER VENV``: the compiler's own venv, from the package registry.

A compiler's pins conflict with ours (RKNN-Toolkit2 wants numpy<=1.26.4, onnx<=1.18.0),
so it gets a venv of its own. The venv records what it holds in ``npu-gate-probe.json``;
running setup again with the same request reuses it (cache-friendly CI), ``--force``
recreates it.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from npu_gate.errors import GateError
from npu_gate.probe.base import Compiler

MANIFEST = "npu-gate-probe.json"
STUB = Path(__file__).resolve().parent / "torch_stub.py"
_LIST = ("import json, importlib.metadata as m; "
         "print(json.dumps(sorted((d.metadata['Name'], d.version) for d in m.distributions())))")


def manifest(venv: Path) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = json.loads((venv / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc


def setup(compiler: Compiler, venv: Path, *, torch: bool = False, python: str | None = None,
          force: bool = False, log: Any = None) -> dict[str, Any]:
    """Create (or reuse) ``venv`` for ``compiler``; returns the manifest, with timings and size."""
    steps = compiler.setup_steps(torch=torch)
    stub = compiler.stub_torch(torch=torch)
    real = torch or compiler.needs_torch
    wanted = {"compiler": compiler.name, "steps": steps, "torch": "real" if real else ("stub" if stub else "none")}
    tracked = _tracked_by_git(venv) if steps else None
    if tracked:
        raise GateError(f"{venv}: {tracked} is tracked by git; a compiler venv is made here, not committed: "
                        "choose a folder outside the repository's files")
    found = manifest(venv)
    if found is not None and found.get("complete") and not force and compiler.python(venv).exists() and \
            all(found.get(k) == v for k, v in wanted.items()) and venv_problem(compiler, venv) is None:
        return {**found, "reused": True}
    if venv.exists():
        if found is None and any(venv.iterdir()):
            raise GateError(f"{venv}: exists and is not an npu-gate probe venv; choose another folder")
        shutil.rmtree(venv)

    start = time.perf_counter()
    interpreter = python or sys.executable
    _require_python(compiler, interpreter)
    _run([interpreter, "-m", "venv", *([] if steps else ["--without-pip"]), str(venv)], log)
    (venv / MANIFEST).write_text(json.dumps({**wanted, "complete": False}) + "\n", encoding="utf-8")  # ours, unfinished
    py = str(compiler.python(venv))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    for step in steps:
        _run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *step], log, env)
    if stub:
        site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True, env=env).stdout.strip())
        (site / "torch").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(STUB, site / "torch" / "__init__.py")
    listed = subprocess.run([py, "-c", _LIST], check=True, capture_output=True, text=True, env=env).stdout
    doc = {
        **wanted,
        "product": compiler.product,
        "python": subprocess.run([py, "-c", "import platform; print(platform.python_version())"],
                                 check=True, capture_output=True, text=True, env=env).stdout.strip(),
        "packages": {name: version for name, version in json.loads(listed)},
        "setup_s": round(time.perf_counter() - start, 1),
        "size_bytes": folder_size(venv),
        "complete": True,
    }
    (venv / MANIFEST).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return {**doc, "reused": False}


def _require_python(compiler: Compiler, interpreter: str) -> None:
    """Refuse an interpreter the compiler's pins have no wheels for before creating anything:
    pip would fail minutes later with a wall of "Requires-Python" lines (npu-gate itself runs
    on 3.10 and 3.13, where the rknn venv cannot)."""
    if not compiler.pythons:
        return
    try:
        out = subprocess.run([interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise GateError(f"--python {interpreter}: cannot run it: {exc}") from None
    wanted = [f"{major}.{minor}" for major, minor in compiler.pythons]
    if out not in wanted:
        raise GateError(f"{interpreter} is Python {out}; the {compiler.name} venv needs Python "
                        f"{' or '.join(wanted)}: pass --python python{wanted[-1]}")


def _run(argv: list[str], log: Any, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if log is not None and (proc.stdout or proc.stderr):
        log.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise GateError(f"{' '.join(argv[:6])} ...: failed (exit {proc.returncode}): {' | '.join(tail)}")


def folder_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


RECORD_BYTES = 16 * 1024 * 1024  # a RECORD file larger than this is not pip's


def venv_problem(compiler: Compiler, venv: Path) -> str | None:
    """Why ``venv`` is not a compiler venv that ``probe setup`` made (None: it is one), for a venv a
    contract names (or the default ``.venv-COMPILER``), which a pull request could have committed:
    no file of it tracked by git; its manifest complete, for this compiler and its setup steps; the
    compiler package installed at the version the steps pin, every file its ``.dist-info/RECORD``
    lists present with that digest; ``bin/python`` the base interpreter ``venv`` links to, not a
    file of the venv. A plug-in without a package (the fake) runs no venv: nothing to check."""
    if not compiler.setup_steps(torch=False):
        return None
    tracked = _tracked_by_git(venv)
    if tracked:
        return f"{tracked} is tracked by git: a compiler venv is made by `npu-gate probe setup`, not committed"
    found = manifest(venv)
    if found is None or not found.get("complete"):
        return f"no complete {MANIFEST} (not made by `npu-gate probe setup`)"
    if found.get("compiler") != compiler.name or \
            found.get("steps") not in (compiler.setup_steps(torch=False), compiler.setup_steps(torch=True)):
        return f"{MANIFEST} is for another compiler or setup (`npu-gate probe setup {compiler.name} {venv} --force`)"
    python = compiler.python(venv)
    if python.exists() and os.path.realpath(python).startswith(os.path.realpath(venv) + os.sep):
        return f"{python} is a file of the venv, not the interpreter `python -m venv` links to"
    return _package_problem(compiler, venv, found)


def _package_problem(compiler: Compiler, venv: Path, found: dict[str, Any]) -> str | None:
    """The compiler package's ``.dist-info``: the pinned version, and its RECORD's files digested."""
    pinned = _pinned_version(compiler)
    installed = compiler.installed_version(venv)
    if installed is None:
        return f"{compiler.product} is not installed there"
    if pinned is not None and installed != pinned:
        return f"{compiler.product} {installed} is installed there, the plug-in pins {pinned}"
    dist = re.sub(r"[-_.]+", "_", compiler.product).lower()
    infos = sorted(venv.glob(f"lib/python*/site-packages/{dist}-{installed}.dist-info"))
    record = infos[-1] / "RECORD" if infos else None
    if record is None or not record.is_file() or record.stat().st_size > RECORD_BYTES:
        return f"{compiler.product} {installed}: no RECORD in its .dist-info (not installed by pip)"
    site = record.parent.parent
    checked = 0
    for row in csv.reader(record.read_text(encoding="utf-8", errors="replace").splitlines()):
        if len(row) < 2 or not row[1].startswith("sha256="):
            continue  # RECORD itself and compiled files carry no digest
        path = (site / row[0]).resolve()
        if not path.is_file() or _digest(path) != row[1][len("sha256="):]:
            return f"{compiler.product} {installed}: {row[0]} is missing or not the file pip installed"
        checked += not row[0].startswith(record.parent.name + "/")
    if not checked:
        return f"{compiler.product} {installed}: its RECORD lists no file of the package"
    return None


def _pinned_version(compiler: Compiler) -> str | None:
    """The version the plug-in's setup steps pin its product to (``NAME==VERSION``), if they do."""
    dist = re.sub(r"[-_.]+", "-", compiler.product).lower()
    for step in compiler.setup_steps(torch=False):
        for arg in step:
            name, sep, version = arg.partition("==")
            if sep and re.sub(r"[-_.]+", "-", name.strip()).lower() == dist:
                return version.strip()
    return None


def _digest(path: Path) -> str:
    """sha256 of a file as a RECORD writes it (urlsafe base64 without padding)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")


def _tracked_by_git(venv: Path) -> str | None:
    """The first file git tracks in ``venv`` (or ``venv`` itself, a committed link); None when git
    tracks nothing there, or there is no git or no repository to ask."""
    start = venv if venv.is_dir() and not venv.is_symlink() else venv.parent
    try:
        # safe.directory: a checkout owned by another user (a container job) still answers
        proc = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(start), "ls-files", "-z", "--",
                               str(venv.absolute())],
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = proc.stdout.split(b"\0") if proc.returncode == 0 else []
    return str(start / os.fsdecode(names[0])) if names and names[0] else None
