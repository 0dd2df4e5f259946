"""PyTorch → ONNX export. The only module that imports torch (lazily, inside functions)."""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_gate.capture import capture_output
from npu_gate.contract import Contract
from npu_gate.errors import ModelError
from npu_gate.samples import make_samples
from npu_gate.versions import installed


@dataclass
class ExportOutcome:
    onnx_path: Path | None  # None when the export failed
    module: Any  # the eval-mode nn.Module, kept for numerics
    exporter: str
    opset: int
    log: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def torch_version() -> str | None:
    return installed("torch")


def build_module(contract: Contract, key: str = "model.torch") -> Any:
    """Import the factory (contract folder on sys.path) and build the eval-mode module.
    ``key``: where ``contract.torch`` sits in the contract, for messages (the replacement
    model is built from ``replacement.torch``)."""
    assert contract.torch is not None
    label = f"{contract.path}: {key}.factory"
    try:
        import torch
    except ImportError:
        raise ModelError(
            f"{contract.path}: {key} needs PyTorch: pip install 'npu-gate[torch]'"
        ) from None
    module_name, attr = contract.torch.factory.split(":")
    factory = _import_factory(module_name, attr, contract.folder.resolve(), label)
    torch.manual_seed(contract.numerics.seed)
    try:
        with capture_output():
            module = factory(**contract.torch.kwargs)
    except Exception as exc:
        raise ModelError(f"{label}: {contract.torch.factory}() raised {_one_line(exc)}") from None
    if not isinstance(module, torch.nn.Module):
        raise ModelError(
            f"{label}: {contract.torch.factory}() returned {type(module).__name__}, "
            "not a torch.nn.Module"
        )
    return module.eval()


def _import_factory(module_name: str, attr: str, folder: Path, label: str) -> Any:
    top = module_name.split(".")[0]
    # A module of the same name imported from another contract's folder must not be reused.
    for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
        file = getattr(sys.modules[name], "__file__", None) or ""
        if not Path(file).resolve().is_relative_to(folder):
            del sys.modules[name]
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelError(f"{label}: cannot import {module_name!r}: {exc}") from None
    except Exception as exc:
        raise ModelError(f"{label}: importing {module_name!r} raised {_one_line(exc)}") from None
    finally:
        if sys.path and sys.path[0] == str(folder):
            sys.path.pop(0)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ModelError(f"{label}: {module_name!r} has no callable {attr!r}")
    return factory


def export(contract: Contract, module: Any, workdir: Path) -> ExportOutcome:
    """Export with the contract's inputs (seeded, eval mode, no grad); never raises for
    exporter failures: those become ``error`` (an ``export-failed`` finding)."""
    import torch

    assert contract.torch is not None
    spec = contract.torch
    sample = make_samples(contract.inputs, 1, contract.numerics.seed)[0]
    args = tuple(torch.from_numpy(sample[i.name]) for i in contract.inputs)
    path = workdir / "model.onnx"
    outcome = ExportOutcome(None, module, spec.exporter, spec.opset)
    start = time.perf_counter()
    with capture_output() as captured:
        try:
            torch.manual_seed(contract.numerics.seed)
            with torch.no_grad():
                torch.onnx.export(
                    module,
                    args,
                    str(path),
                    opset_version=spec.opset,
                    dynamo=spec.exporter == "dynamo",
                    input_names=[i.name for i in contract.inputs],
                )
            outcome.onnx_path = path
        except Exception as exc:
            outcome.error = _one_line(exc)
            captured.lines.extend(traceback.format_exc().splitlines())
    outcome.seconds = time.perf_counter() - start
    outcome.log = captured.lines
    if outcome.error is None and not path.is_file():
        outcome.error = "the exporter returned without writing a model"
        outcome.onnx_path = None
    return outcome


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
