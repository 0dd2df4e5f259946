"""PyTorch → ONNX export. The only module that imports torch (lazily, inside functions)."""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_gate.contract.spec import Contract
from npu_gate.errors import ModelError, one_line
from npu_gate.model.capture import capture_output
from npu_gate.model.samples import make_samples
from npu_gate.model.user_code import import_callable


@dataclass
class ExportOutcome:
    onnx_path: Path | None  # None when the export failed
    module: Any  # the eval-mode nn.Module, kept for numerics
    exporter: str
    opset: int
    log: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def build_module(contract: Contract, key: str = "model.torch", log: list[str] | None = None) -> Any:
    """Import the factory (contract folder on sys.path) and build the eval-mode module.
    ``key``: where ``contract.torch`` sits in the contract, for messages (the replacement
    model is built from ``replacement.torch``). ``log`` receives what the factory's module
    and the factory print or warn (the start of the conversion log)."""
    assert contract.torch is not None
    label = f"{contract.path}: {key}.factory"
    try:
        import torch
    except ImportError:
        raise ModelError(
            f"{contract.path}: {key} needs PyTorch: pip install 'npu-gate[torch]'"
        ) from None
    factory = import_callable(contract.torch.factory, contract.import_folders, label, log)
    torch.manual_seed(contract.numerics.seed)
    try:
        with capture_output() as captured:
            module = factory(**contract.torch.kwargs)
    except (Exception, SystemExit) as exc:  # sys.exit() in user code must not end the gate
        raise ModelError(f"{label}: {contract.torch.factory}() raised {one_line(exc)}") from None
    if log is not None:
        log.extend(captured.lines)
    if not isinstance(module, torch.nn.Module):
        raise ModelError(
            f"{label}: {contract.torch.factory}() returned {type(module).__name__}, "
            "not a torch.nn.Module"
        )
    order = _order_problem(module, contract)
    if order:
        raise ModelError(f"{contract.path}: {order}")
    return module.eval()


def _order_problem(module: Any, contract: Contract) -> str | None:
    """The contract's inputs go to forward() by position: an input named like one of
    forward()'s parameters but declared at another position would silently feed the wrong
    one (other names are free: ``images`` for ``forward(self, x)``)."""
    import inspect

    try:
        parameters = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a C extension)
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in parameters if p.kind in positional]
    for i, spec in enumerate(contract.inputs):
        if spec.name in names and names.index(spec.name) != i:
            goes_to = repr(names[i]) if i < len(names) else f"position {i}"
            return (f"inputs[{i}].name: {spec.name!r} is a parameter of forward({', '.join(names)}), which "
                    f"takes the contract's inputs by position: inputs[{i}] would feed {goes_to}; declare "
                    "the inputs in forward()'s order")
    return None


def export(contract: Contract, module: Any, workdir: Path) -> ExportOutcome:
    """Export with the contract's inputs (seeded, eval mode); never raises for
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
            # Grad stays on, as with a plain torch.onnx.export: under no_grad, modules take
            # PyTorch's inference fast paths (MultiheadAttention's _native_multi_head_attention),
            # which torchscript cannot export.
            torch.onnx.export(
                module,
                args,
                str(path),
                opset_version=spec.opset,
                dynamo=spec.exporter == "dynamo",
                input_names=[i.name for i in contract.inputs],
                # named dims (dynamic_dims) are exported dynamic: what the compiler would get
                dynamic_axes={i.name: {k: d for k, d in enumerate(i.dim_names) if d} for i in contract.inputs
                              if any(i.dim_names)} or None,
            )
            outcome.onnx_path = path
        except (Exception, SystemExit) as exc:  # forward() may call sys.exit()
            outcome.error = export_error(exc)
            captured.lines.extend(traceback.format_exc().splitlines())
    outcome.seconds = time.perf_counter() - start
    outcome.log = captured.lines
    if outcome.error is None and not path.is_file():
        outcome.error = "the exporter returned without writing a model"
        outcome.onnx_path = None
    return outcome


_SGR = re.compile(r"\x1b\[[0-9;]*m")  # colour codes the dynamo exporter puts in its messages


def export_error(exc: BaseException) -> str:
    """One line for an export failure, naming its cause. The dynamo exporter wraps the real
    error (``raise ... from``) in one whose first line is boilerplate ("Failed to export the
    model with torch.export. This is step 1/3 ... Next steps:"): the innermost explicit cause
    says what went wrong, the wrapper at which step."""
    root = exc
    for _ in range(20):  # a bounded walk: a cause chain could loop
        if root.__cause__ is None:
            break
        root = root.__cause__
    wrapper = _SGR.sub("", one_line(exc))
    if root is exc:
        return wrapper
    wrapper = wrapper.removesuffix(" Next steps:")
    return f"{_SGR.sub('', one_line(root))} (from {wrapper})"
