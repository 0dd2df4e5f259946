"""Probes: put a real compiler in the loop and compare its placement with npu_gate's prediction.

One compiler is one module here; ``npu_gate.profile.compilers`` maps each ``--compiler``
name to its class.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from npu_gate.errors import GateError
from npu_gate.probe.base import Compiler
from npu_gate.profile.compilers import COMPILERS, KNOWN


def get_compiler(name: str) -> Compiler:
    if name not in COMPILERS:
        raise GateError(f"--compiler {name}: unknown compiler (known: {', '.join(KNOWN)})")
    module, _, cls = COMPILERS[name].partition(":")
    compiler: Compiler = getattr(import_module(module), cls)()
    return compiler


def venv_for(venv: Path | None, compiler: Compiler) -> Path:
    """The compiler venv a probe uses: the one given, else ``.venv-COMPILER`` in the working folder."""
    return venv if venv is not None else Path.cwd() / f".venv-{compiler.name}"
