"""Import the user's own code named in a contract as ``module:function`` (a torch factory,
a task metric), with the contract folder first on sys.path."""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from npu_gate.contract.code_refs import refused_problem
from npu_gate.contract.spec import searched
from npu_gate.errors import ModelError, one_line


def import_callable(spec: str, folders: Sequence[Path], label: str,
                    log: list[str] | None = None) -> Callable[..., Any]:
    """The callable ``spec`` (``module:function``) names, imported from ``folders`` first (in
    order: ``Contract.import_folders``), then the installed packages; a module that cannot be
    imported or has no such callable is a ModelError naming ``label`` and the folders searched.
    What the module prints or warns while it is imported goes to ``log`` (when given), never
    to the terminal."""
    from npu_gate.model.capture import capture_output

    refusal = refused_problem(spec, label)  # the contract's load said so already; never import it
    if refusal is not None:
        raise ModelError(refusal)
    module_name, attr = spec.split(":")
    top = module_name.split(".")[0]
    folders = [f.resolve() for f in folders]
    # When a folder has the module, one of the same name imported earlier (from another
    # contract's folder) must not be reused. A module no folder has is an installed package
    # (torchvision:..., timm:...): it is imported as usual, never evicted and reloaded.
    home = next((f for f in folders if (f / f"{top}.py").is_file() or (f / top / "__init__.py").is_file()), None)
    if home is not None:
        for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if not Path(file).resolve().is_relative_to(home):
                del sys.modules[name]
    added = [str(f) for f in folders]
    sys.path[:0] = added
    try:
        # A module (or what it imports: torchvision, timm) may print or warn at import time.
        with capture_output() as captured:
            module = importlib.import_module(module_name)
    except ImportError as exc:
        # where it was looked for, when the module itself was not found (not one it imports)
        missing = isinstance(exc, ModuleNotFoundError) and exc.name is not None and (
            exc.name == top or module_name.startswith(exc.name + ".") or exc.name == module_name)
        where = searched(folders, folders[0]) if folders and missing else ""
        raise ModelError(f"{label}: cannot import {module_name!r}: {exc} {where}".rstrip(),
                         details=captured.lines + traceback.format_exc().splitlines()) from None
    except (Exception, SystemExit) as exc:  # sys.exit() in user code must not end the gate (exit 0: "pass")
        raise ModelError(f"{label}: importing {module_name!r} raised {one_line(exc)}",
                         details=captured.lines + traceback.format_exc().splitlines()) from None
    finally:
        if sys.path[:len(added)] == added:
            del sys.path[:len(added)]
    if log is not None:
        log.extend(captured.lines)
    found: object = getattr(module, attr, None)
    if not callable(found):
        raise ModelError(f"{label}: {module_name!r} has no callable {attr!r}")
    return found
