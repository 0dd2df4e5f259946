"""``npu-gate probe --factory MOD:FN``: the gate's own ONNX export of a torch factory, which a
compiler working on the PyTorch module (Ethos-U) is compared against node by node.

The factory is user code: it is imported, built and exported in the contract code's child process
(``model/worker.py``), never in the gate's own interpreter, as for a contract's ``model.torch``."""

from __future__ import annotations

from pathlib import Path

from npu_gate.contract.spec import Contract, Gates, InputSpec, Numerics, TorchModel
from npu_gate.errors import GateError, ModelError

OPSET = 18  # the dynamo exporter's own default


def factory_contract(spec: str, inputs: dict[str, list[int]], folder: Path, seed: int = 0) -> Contract:
    """A contract-like description of ``spec`` (float32 inputs in [0, 1]) for the child to build."""
    from npu_gate.profile.spec import load_profile

    return Contract(path=folder / "--factory", name=spec, onnx_path=None, onnx_ref=None,
                    torch=TorchModel(factory=spec, kwargs={}, exporter="dynamo", opset=OPSET),
                    inputs=[InputSpec(name, shape, "float32", None, (0.0, 1.0)) for name, shape in inputs.items()],
                    profile=load_profile("demo"), numerics=Numerics(seed=seed), gates=Gates())


def export_factory(spec: str, inputs: dict[str, list[int]], folder: Path, out: Path, seed: int = 0) -> Path:
    """Build ``spec``'s module (eval mode) and export it with the dynamo exporter to ``out``
    (a ``model.onnx`` in its own folder), in the child process."""
    if ":" not in spec:
        raise GateError(f"--factory {spec}: expected MODULE:FUNCTION")
    if not inputs:
        raise GateError(f"--factory {spec}: give every input's shape with --inputs NAME:DIMS")
    from npu_gate.model.worker import UserCode, WorkerFailed

    if out.name != "model.onnx":
        raise ValueError(f"{out}: the export is written as model.onnx")
    contract = factory_contract(spec, inputs, folder, seed)
    label = f"{contract.path}: model.torch.factory"  # how the child names a contract's factory
    with UserCode(contract) as user:
        try:
            user.build("model.torch")
            reply = user.export("model.torch", "dynamo", out.parent)
        except ModelError as exc:  # the import or the factory call: worded with where it looked
            raise GateError(*(p.replace(label, f"--factory {spec}") for p in exc.problems)) from None
        except WorkerFailed as exc:
            raise GateError(f"--factory {spec}: {exc}") from None
    if reply.error is not None:
        raise GateError(f"--factory {spec}: the ONNX export failed: {reply.error}")
    return out
