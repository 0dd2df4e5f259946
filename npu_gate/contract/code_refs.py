"""Which modules a contract's code references (``model.torch.factory``,
``replacement.torch.factory``, ``metric.callable``) may name.

A contract is code by design: the callables it names run with the user's permissions. What a
JSON-only change must not do is run a command through a well-known callable that is already
installed (``"factory": "subprocess:run"`` with ``kwargs``, ``os:system``, ``sh:bash``): the
modules of the standard library (``sys.stdlib_module_names``: ``os``, ``subprocess``,
``builtins``, ``shutil``, ``pty``...), the known process, shell and installer packages below,
and npu-gate itself (``npu_gate.cli:main`` runs ``reduce --check COMMAND``) are refused, with
their submodules. A module of the contract's folder named like one of them is refused too
(it would not be the one imported: the standard library's is already loaded); rename it.
"""

from __future__ import annotations

import sys

# Third-party modules that run commands, shells or remote code given only arguments.
PROCESS_MODULES = frozenset({
    "sh", "plumbum", "pexpect", "ptyprocess", "invoke", "fabric", "sarge", "delegator", "envoy",
    "paramiko", "pip", "setuptools", "pkg_resources", "pytest", "torch.hub", "torch.utils.cpp_extension",
    "npu_gate",
})


def refused(module: str) -> str | None:
    """Why a contract may not name a callable of ``module`` (None: it may)."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        return f"{top!r} is a module of the Python standard library"
    for name in PROCESS_MODULES:
        if module == name or module.startswith(name + "."):
            return f"{name!r} runs commands or code given as arguments"
    return None


def refused_problem(ref: str, where: str) -> str | None:
    """The problem line for ``where`` (e.g. "npu-gate.json: model.torch.factory") naming
    ``ref`` (``module:function``), or None."""
    why = refused(ref.split(":")[0])
    if why is None:
        return None
    return (f"{where}: {ref!r}: refused: {why} (a contract names the project's own code or a model "
            "library's; README: Security)")
