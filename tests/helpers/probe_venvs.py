"""Compiler venvs for tests: what `npu-gate probe setup` leaves, without installing anything."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
from pathlib import Path

from npu_gate.probe import get_compiler
from npu_gate.probe.setup_env import MANIFEST


def record_digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def setup_like_venv(folder: Path, compiler_name: str, version: str, *, python: str = sys.executable) -> Path:
    """A venv as `probe setup` makes it: ``bin/python`` linking to ``python``, the compiler package
    at ``version`` (one module, a METADATA and a RECORD with their digests) and a complete manifest."""
    compiler = get_compiler(compiler_name)
    (folder / "bin").mkdir(parents=True)
    os.symlink(python, folder / "bin" / "python")
    site = folder / "lib" / "python3.11" / "site-packages"
    dist = re.sub(r"[-_.]+", "_", compiler.product).lower()
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir(parents=True)
    files = {f"{dist}/__init__.py": b"VERSION = 1\n",
             f"{info.name}/METADATA": f"Name: {compiler.product}\nVersion: {version}\n".encode()}
    for name, data in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    rows = [f"{name},{record_digest(data)},{len(data)}" for name, data in files.items()]
    (info / "RECORD").write_text("\n".join([*rows, f"{info.name}/RECORD,,"]) + "\n", encoding="utf-8")
    manifest = {"compiler": compiler.name, "steps": compiler.setup_steps(torch=False), "torch": "none",
                "product": compiler.product, "packages": {compiler.product: version}, "complete": True}
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return folder
