"""An inert ``torch`` for a compiler venv (installed as ``site-packages/torch/__init__.py``).

Some compilers (RKNN-Toolkit2) import torch at module level but never call it on the
ONNX load + build path. This stub satisfies the imports (any ``torch.x.y`` submodule,
any attribute, classes to subclass, ``@torch.no_grad()``) and raises as soon as
something is really computed, naming the call, so a build that needs torch fails with
a clear message instead of a silent wrong answer. Install real torch instead with
``npu-gate probe setup ... --torch``.

This file is never imported by npu_gate itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any, Literal

__version__ = "0.0.0+npu-gate-stub"
STUB_MESSAGE = "npu-gate torch stub: {} was called; recreate the venv with `npu-gate probe setup ... --torch`"


class _Inert:
    """Subclassable, usable as a decorator or a context manager; raises when used for data."""

    _where = "torch"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs or len(args) > 1 or (args and not callable(args[0])):
            raise RuntimeError(STUB_MESSAGE.format(self._where))
        self._wrapped = args[0] if args else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # @torch.no_grad() and friends
        raise RuntimeError(STUB_MESSAGE.format(self._where))

    def __enter__(self) -> _Inert:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        return False


def _module_getattr(module_name: str) -> Callable[[str], type]:
    def __getattr__(name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (_Inert,), {"_where": f"{module_name}.{name}"})

    return __getattr__


class _SubmoduleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith("torch."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _module_getattr(spec.name)  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


sys.meta_path.insert(0, _SubmoduleFinder())
__getattr__ = _module_getattr("torch")
