"""The export stage: build the contract's PyTorch module and export it to ONNX (torch only)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onnx import ModelProto

from npu_gate.contract.spec import Contract
from npu_gate.graph.model_file import load_onnx
from npu_gate.result.types import GateResult, make_finding


@dataclass
class Exported:
    module: Any  # the eager nn.Module (numerics compares with it)
    onnx_path: Path
    model: ModelProto  # loaded without external weights (``load_onnx(weights=False)``)
    sha256: str


def build(contract: Contract, result: GateResult) -> Any:
    """The contract's module (seeded, eval mode); what its code printed goes to the log."""
    from npu_gate.model import export as exporter  # the torch path only

    log: list[str] = []
    module = exporter.build_module(contract, log=log)
    result.log.extend(log)
    return module


def run(contract: Contract, module: Any, work: Path, result: GateResult, timings: dict[str, float]) -> Exported | None:
    """Export ``module`` into ``work``: the stage row and, on failure, an export-failed finding
    (then None: nothing downstream runs)."""
    from npu_gate.model import export as exporter

    spec = contract.torch
    assert spec is not None
    outcome = exporter.export(contract, module, work)
    timings["export_s"] = outcome.seconds
    result.log.extend(outcome.log)
    error = scrub(outcome.error, str(work))
    if error or outcome.onnx_path is None:
        result.stages["export"] = {"status": "failed", "reason": error}
        result.stages["numerics"] = {"status": "skipped", "reason": "export failed"}
        result.findings.append(make_finding("export-failed", f"{spec.exporter} export failed: {error}"))
        return None
    result.stages["export"] = {"status": "ok", "exporter": spec.exporter, "log_lines": len(outcome.log)}
    model, sha256 = load_onnx(outcome.onnx_path, "exported model", weights=False)
    result.model["sha256"] = sha256
    return Exported(module, outcome.onnx_path, model, sha256)


def scrub(text: str | None, workdir: str) -> str | None:
    """Messages that quote the temporary export folder name it "<export dir>": the result
    must not change from run to run (the evidence bundle compares them byte for byte)."""
    if text is None:
        return None
    for form in {workdir, str(Path(workdir).resolve())}:
        text = text.replace(form, "<export dir>")
    return text
