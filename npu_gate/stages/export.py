"""The export stage: build the contract's PyTorch module and export it to ONNX (torch only), in
the child process that runs the contract's code (``model.worker``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onnx import ModelProto

from npu_gate.contract.spec import Contract
from npu_gate.findings.model import export_failed
from npu_gate.graph.model_file import load_onnx
from npu_gate.model.worker import UserCode, WorkerFailed
from npu_gate.result.types import GateResult


@dataclass
class Exported:
    onnx_path: Path
    model: ModelProto  # loaded without external weights (``load_onnx(weights=False)``)
    sha256: str


def run(contract: Contract, user: UserCode, work: Path, result: GateResult,
        timings: dict[str, float]) -> Exported | None:
    """Build the contract's module (seeded, eval mode) and export it into ``work``, both in the
    child process of ``user``: the stage row and, on failure, an export-failed finding (then
    None: nothing downstream runs). What the factory's code printed starts the log. A factory
    that cannot be imported or returns no module is a ModelError, as a contract problem."""
    spec = contract.torch
    assert spec is not None
    error: str | None
    try:
        built = user.build("model.torch")
        result.log.extend(built.log)
        error, onnx_path = built.error, None
        if error is None:
            outcome = user.export("model.torch", spec.exporter, work)
            timings["export_s"] = seconds(outcome.data, outcome.seconds)
            result.log.extend(outcome.log)
            error, onnx_path = outcome.error, outcome.data["onnx"]
    except WorkerFailed as exc:
        error, onnx_path = str(exc), None
    error = scrub(error, str(work))
    if error or onnx_path is None:
        result.stages["export"] = {"status": "failed", "reason": error}
        result.stages["numerics"] = {"status": "skipped", "reason": "export failed"}
        result.findings.append(export_failed(spec.exporter, error))
        return None
    result.stages["export"] = {"status": "ok", "exporter": spec.exporter, "log_lines": len(outcome.log)}
    model, sha256 = load_onnx(onnx_path, "exported model", weights=False)
    result.model["sha256"] = sha256
    return Exported(onnx_path, model, sha256)


def seconds(data: dict[str, Any], default: float) -> float:
    """The exporter's own time as the child measured it (a number, else the request's)."""
    value = data.get("seconds")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def scrub(text: str | None, workdir: str) -> str | None:
    """Messages that quote the temporary export folder name it "<export dir>": the result
    must not change from run to run (the evidence bundle compares them byte for byte)."""
    if text is None:
        return None
    for form in {workdir, str(Path(workdir).resolve())}:
        text = text.replace(form, "<export dir>")
    return text
