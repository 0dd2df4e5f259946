"""``compare_exporters``: export with the exporter the contract does not gate, analyse that
graph the same way, and diff it against the gated one (only the gated graph is judged)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from npu_gate.compare.diff import diff_results
from npu_gate.contract.spec import Contract
from npu_gate.graph.model_file import load_onnx
from npu_gate.model.worker import UserCode, WorkerFailed
from npu_gate.result.types import GateResult
from npu_gate.stages import verdict
from npu_gate.stages.analyse import analyse_with_findings
from npu_gate.stages.context import Settings, new_result
from npu_gate.stages.export import seconds


def compare(contract: Contract, user: UserCode, settings: Settings, work: Path, gated: GateResult,
            timings: dict[str, float]) -> dict[str, Any]:
    """The result's ``exporter_comparison``: the other exporter's verdict and the diff (the
    module is exported again in the child process of ``user``)."""
    assert contract.torch is not None
    spec = contract.torch
    other = "torchscript" if spec.exporter == "dynamo" else "dynamo"
    folder = work / other
    folder.mkdir()
    try:
        outcome = user.export("model.torch", other, folder)
    except WorkerFailed as exc:
        return {"exporter": other, "status": "failed", "reason": str(exc)}
    timings[f"export_{other}_s"] = seconds(outcome.data, outcome.seconds)
    gated.log.extend(f"[{other}] {line}" for line in outcome.log)
    path = outcome.data["onnx"]
    if outcome.error or path is None:
        return {"exporter": other, "status": "failed", "reason": outcome.error}
    model, sha256 = load_onnx(path, f"{other} export", weights=False)
    alt = new_result(contract.name, contract.profile,
                     {"source": "torch", "factory": spec.factory, "exporter": other,
                      "opset_requested": spec.opset, "sha256": sha256})
    analyse_with_findings(model, settings, alt)
    verdict.decide(alt, settings)
    diff = diff_results(gated.to_dict(), alt.to_dict(), (f"{spec.exporter} (gated)", f"{other} (compared)"))
    return {"exporter": other, "status": "ok", "verdict": alt.verdict, "diff": diff}
