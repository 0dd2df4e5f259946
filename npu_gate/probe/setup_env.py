"""``npu-gate probe setup COMPILER VENV``: the compiler's own venv, from the package registry.

A compiler's pins conflict with ours (RKNN-Toolkit2 wants numpy<=1.26.4, onnx<=1.18.0),
so it gets a venv of its own. The venv records what it holds in ``npu-gate-probe.json``;
running setup again with the same request reuses it (cache-friendly CI), ``--force``
recreates it.
"""

from __future__ import annotations

import contextlib
import json
import os
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
    found = manifest(venv)
    if found is not None and found.get("complete") and not force and compiler.python(venv).exists() and \
            all(found.get(k) == v for k, v in wanted.items()):
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
