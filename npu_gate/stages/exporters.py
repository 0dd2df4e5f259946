"""``compare_exporters``: export with the exporter the contract does not gate, analyse that
graph the same way, and diff it against the gated one (only the gated graph is judged)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from npu_gate.compare.diff import diff_results
from npu_gate.contract.spec import Contract
from npu_gate.graph.model_file import load_onnx
from npu_gate.result.types import GateResult
from npu_gate.stages import verdict
from npu_gate.stages.analyse import analysed
from npu_gate.stages.context import Settings, new_result


def compare(contract: Contract, module: Any, settings: Settings, work: Path, gated: GateResult,
            timings: dict[str, float]) -> dict[str, Any]:
    """The result's ``exporter_comparison``: the other exporter's verdict and the diff."""
    from npu_gate.model import export as exporter

    assert contract.torch is not None
    spec = contract.torch
    other = "torchscript" if spec.exporter == "dynamo" else "dynamo"
    alt_contract = dataclasses.replace(contract, torch=dataclasses.replace(spec, exporter=other))
    folder = work / other
    folder.mkdir()
    outcome = exporter.export(alt_contract, module, folder)
    timings[f"export_{other}_s"] = outcome.seconds
    gated.log.extend(f"[{other}] {line}" for line in outcome.log)
    if outcome.error or outcome.onnx_path is None:
        return {"exporter": other, "status": "failed", "reason": outcome.error}
    model, sha256 = load_onnx(outcome.onnx_path, f"{other} export", weights=False)
    alt = new_result(contract.name, contract.profile,
                     {"source": "torch", "factory": spec.factory, "exporter": other,
                      "opset_requested": spec.opset, "sha256": sha256})
    analysed(model, settings, alt)
    verdict.decide(alt, settings)
    diff = diff_results(gated.to_dict(), alt.to_dict(), (f"{spec.exporter} (gated)", f"{other} (compared)"))
    return {"exporter": other, "status": "ok", "verdict": alt.verdict, "diff": diff}
