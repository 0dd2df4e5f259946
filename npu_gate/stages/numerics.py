"""The numerics stage: onnxruntime (CPU) against the eager PyTorch module on seeded samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from npu_gate.findings.numerics import comparison_findings, numerics_failed
from npu_gate.model.worker import WorkerFailed
from npu_gate.stages.export import scrub
from npu_gate.stages.run import Run, Stage


class Numerics(Stage):
    """A torch contract's exported graph (the rewritten one once rewrites apply) against its module."""

    name = "numerics"

    def applies(self, run: Run) -> bool:
        return run.model_path is not None

    def unapplied(self, run: Run) -> str | None:
        return "export failed"

    def run(self, run: Run) -> None:
        compare_with_module(run, run.the_rewriting().numerics_path(run.the_model_path(), run.the_work()))


def compare_with_module(run: Run, onnx_path: Path) -> None:
    """Compare ``onnx_path`` (onnxruntime, here) with the eager module (its outputs computed in
    the child process of the contract's code) into the result (stage row, comparisons, findings)."""
    contract, user, work, result, timings, keep = (run.the_contract(), run.the_user(), run.the_work(), run.result,
                                                   run.timings, run.keep)
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
