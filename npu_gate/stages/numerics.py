"""The numerics stage: onnxruntime (CPU) against the eager PyTorch module on seeded samples."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from npu_gate.model.worker import WorkerFailed
from npu_gate.result.types import make_finding
from npu_gate.stages.export import scrub
from npu_gate.stages.run import Run, Stage

if TYPE_CHECKING:
    from npu_gate.model.numerics import OutputComparison


def uninformative_message(c: OutputComparison) -> str:
    """Why an output's comparison tells little, with its range and what judged it instead."""
    assert c.reference_range is not None
    low, high = c.reference_range
    if c.uninformative == "zero":
        return (f"output {c.output}: the reference is all zero over {c.samples} samples: a model that outputs zeros "
                "passes too; check the weights and inputs (an untrained net, a dead branch)")
    if c.uninformative == "constant":
        return (f"output {c.output}: the reference is constant ({low:.3g}) over {c.samples} samples: the "
                "comparison cannot tell whether the export still depends on its inputs")
    detail = f"{c.scale_rel_err:.3g} vs rtol {c.rtol:g}" if c.scale_rel_err is not None else "unknown"
    return (f"output {c.output}: every reference value lies within [{low:.3g}, {high:.3g}], inside atol {c.atol:g} "
            f"of zero, so atol alone cannot fail; judged by the error relative to the output's scale "
            f"(max abs error / max |reference| = {detail})")


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
        result.findings.append(make_finding("numerics-failed", error))
        return
    result.stages["numerics"] = {"status": "ok", "samples": contract.numerics.samples}
    result.numerics = [c.to_dict() for c in numerics.comparisons]
    for c in numerics.comparisons:
        if not c.passed:
            detail = c.problem or (
                f"max abs error {c.max_abs_err:.3g}, max rel error {c.max_rel_err:.3g} "
                f"(atol {c.atol:g}, rtol {c.rtol:g})"
            )
            if c.scale_rel_err is not None and not c.problem:
                detail += f"; relative to the output's scale {c.scale_rel_err:.3g} > rtol {c.rtol:g}"
            result.findings.append(make_finding("numeric-mismatch", f"output {c.output}: {detail}",
                                                subject=f"output {c.output}"))
        if c.uninformative is not None and c.reference_range is not None:
            result.findings.append(make_finding("numerics-uninformative", uninformative_message(c),
                                                subject=f"output {c.output}"))
