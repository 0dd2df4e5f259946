"""The numerics stage: onnxruntime (CPU) against the eager PyTorch module on seeded samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from npu_gate.contract.spec import Contract
from npu_gate.findings.numerics import comparison_findings, numerics_failed
from npu_gate.model.worker import UserCode, WorkerFailed
from npu_gate.result.types import GateResult
from npu_gate.stages.context import Artifacts
from npu_gate.stages.export import scrub


def run(contract: Contract, user: UserCode, onnx_path: Path, work: Path, result: GateResult,
        timings: dict[str, float], keep: Artifacts | None = None) -> None:
    """Compare ``onnx_path`` (onnxruntime, here) with the eager module (its outputs computed in
    the child process of ``user``) into ``result`` (stage row, comparisons, findings)."""
    if contract.numerics.samples == 0:
        result.stages["numerics"] = {"status": "skipped", "reason": "numerics.samples is 0"}
        return
    from npu_gate.model.numerics import ReferenceFailed, compare

    def reference(samples: list[dict[str, np.ndarray]]) -> tuple[list[list[np.ndarray]], list[str]]:
        try:
            outputs, reply = user.reference("model.torch", samples)
        except WorkerFailed as exc:
            raise ReferenceFailed(str(exc)) from None
        if reply.error is not None:
            raise ReferenceFailed(reply.error, reply.log)
        return outputs, reply.log

    numerics = compare(contract, reference, onnx_path)
    timings["numerics_s"] = numerics.seconds
    if keep is not None:
        keep.samples = numerics.samples
    result.log.extend(numerics.log)
    error = scrub(numerics.error, str(work))
    if error:
        result.stages["numerics"] = {"status": "failed", "reason": error}
        result.findings.append(numerics_failed(error))
        return
    result.stages["numerics"] = {"status": "ok", "samples": contract.numerics.samples}
    result.numerics = [c.to_dict() for c in numerics.comparisons]
    result.findings += comparison_findings(numerics.comparisons)
