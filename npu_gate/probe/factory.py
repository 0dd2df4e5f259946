"""``npu-gate probe --factory MOD:FN``: the gate's own ONNX export of a torch factory, which a
compiler working on the PyTorch module (Ethos-U) is compared against node by node."""

from __future__ import annotations

from pathlib import Path

from npu_gate.errors import GateError, one_line


def export_factory(spec: str, inputs: dict[str, list[int]], folder: Path, out: Path, seed: int = 0) -> Path:
    """Build ``spec``'s module (eval mode) and export it with the dynamo exporter to ``out``."""
    if ":" not in spec:
        raise GateError(f"--factory {spec}: expected MODULE:FUNCTION")
    if not inputs:
        raise GateError(f"--factory {spec}: give every input's shape with --inputs NAME:DIMS")
    import torch

    from npu_gate.contract.spec import import_folders
    from npu_gate.model.capture import capture_output
    from npu_gate.model.user_code import import_callable

    # as a contract's code imports: the folder, then the repository root above it
    factory = import_callable(spec, import_folders(folder), f"--factory {spec}")
    torch.manual_seed(seed)
    try:
        with capture_output():
            module = factory().eval()
            generator = torch.Generator().manual_seed(seed)
            args = tuple(torch.rand(shape, generator=generator) for shape in inputs.values())
            torch.onnx.export(module, args, str(out), dynamo=True, input_names=list(inputs))
    except (Exception, SystemExit) as exc:
        raise GateError(f"--factory {spec}: the ONNX export failed: {one_line(exc)}") from None
    return out
