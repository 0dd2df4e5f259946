"""Rewrites and the task metric: ``rewrite-mismatch``, ``rewrite-unmatched``, ``rewrite-unverified``,
``task-metric``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from npu_gate.findings.doc import RuleDoc
from npu_gate.result.types import Finding, make_finding

if TYPE_CHECKING:  # rewrites.verify is not imported by `inspect`
    from npu_gate.rewrites.verify import Check

REWRITE_MISMATCH = RuleDoc(
    "rewrite-mismatch",
    finds="A rewrite named in the contract (or its replacement model) changes the numbers beyond tolerance. "
          "The original and the rewritten model run with onnxruntime (CPU, graph optimizations off) on the "
          "contract's seeded samples and the rows of numerics.samples_file; every graph output and the "
          "output tensor of every replaced region (layer-wise) is compared: an element passes when "
          "|rewritten - original| <= atol + rtol * |original|.",
    why="A rewrite makes an op the NPU runs; if it computes other numbers, the NPU build is wrong however "
        "well it is placed. A wrong rewrite often hides end to end and shows at its region.",
    example="None in the model itself: the rewrite is named in the contract's `rewrites` (or `replacement`).",
    fix="Drop the rewrite, or loosen its tolerance in the contract if the difference is expected.",
    evidence="onnxruntime CPU runs of the original and the rewritten model on the same samples. A "
             "`replacement` model is compared end to end only (outputs paired by position).",
    fields="`node`: the region's original node (a region check), or `subject` `output <name>` (`replacement "
           "output <name>`); the message gives max abs and rel error with atol and rtol.",
)


def number_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def mismatch_text(c: Check) -> str:
    """A failed check's numbers against its tolerance, then its problem (if any)."""
    numbers = None if c.max_abs_err is None else (
        f"max abs error {number_text(c.max_abs_err)}, max rel error {number_text(c.max_rel_err)} "
        f"(atol {c.atol:g}, rtol {c.rtol:g})")
    return "; ".join(part for part in (numbers, c.problem) if part)


def rewrite_mismatch(c: Check, who: str) -> Finding:
    """A failed check of the contract's rewrites: ``who`` names the rewrite (or all applied)."""
    where = f"region {c.node} (tensor {c.where})" if c.kind == "region" else f"output {c.where}"
    return make_finding("rewrite-mismatch", f"{who} at {where}: {mismatch_text(c)}",
                        node=c.node if c.kind == "region" else None,
                        subject=None if c.kind == "region" else f"output {c.where}")


def replacement_mismatch(c: Check) -> Finding:
    return make_finding("rewrite-mismatch", f"replacement at output {c.where}: {mismatch_text(c)}",
                        subject=f"replacement output {c.where}")


REWRITE_UNMATCHED = RuleDoc(
    "rewrite-unmatched",
    finds="A rewrite named in the contract matched no node: nothing was rewritten for it.",
    why="The CPU fallback it was meant to remove may still be there.",
    example="None in the model itself: the model no longer has the pattern (see `npu-gate rewrites` for what "
            "each one matches).",
    fix="Remove it from the contract, or check that the model still has the pattern.",
    evidence="The rewrite's own matcher on the graph.",
    fields="`subject`: the rewrite's name.",
)


def rewrite_unmatched(name: str) -> Finding:
    return make_finding("rewrite-unmatched", f"rewrite {name} matched no node", subject=name)


REWRITE_UNVERIFIED = RuleDoc(
    "rewrite-unverified",
    finds="The contract's rewrites (or replacement) were applied with no numerical proof: numerics.samples "
          "is 0 and there is no numerics.samples_file, so the original and the rewritten model never ran "
          "side by side.",
    why="The gate judged a graph nobody compared.",
    example="None in the model itself: it is the contract's `numerics.samples: 0`.",
    fix="Give numerics.samples (or a samples_file of real inputs) so the rewrite is verified.",
    evidence="None: that is the point of the warning.",
    fields="`message` only.",
)


def rewrite_unverified(applied: list[str]) -> Finding:
    return make_finding("rewrite-unverified", f"rewrites {', '.join(applied)} applied but not verified: "
                        "numerics.samples is 0 and no samples_file")


def replacement_unverified() -> Finding:
    return make_finding("rewrite-unverified", "replacement not compared with the model: numerics.samples is 0 and "
                        "no samples_file")


TASK_METRIC = RuleDoc(
    "task-metric",
    finds="The contract's task metric missed its threshold or could not be computed. "
          "metric.callable(reference_outputs, candidate_outputs, samples) compares the original and the "
          "rewritten (or quantized) model's outputs; every value named in metric.threshold must lie within "
          "its min/max.",
    why="Tolerances per element say little about the task: the metric says whether the NPU's model still "
        "does its job.",
    example="""def metric(reference, candidate, samples):  # the contract's metric.callable
    return {"top1_agreement": float((reference[0].argmax(1) == candidate[0].argmax(1)).mean())}""",
    fix="Find what changed the outputs (the rewrite, the quantization), or, if the drop is accepted, change "
        "the threshold.",
    evidence="The contract's own metric, run on the same samples as the comparison.",
    fields="`subject` `quantization metric` for the quantized model's; the message names each failed value "
           "against its bound (or the metric's error).",
)


def metric_message(metric: dict[str, Any]) -> str:
    if "error" in metric:
        return f"task metric could not be computed: {metric['error']}"
    bad = [c for c in metric["checks"] if not c["passed"]]
    return "task metric: " + "; ".join(_failed_check(c, list(metric["values"])) for c in bad)


def _failed_check(check: dict[str, Any], returned: list[str]) -> str:
    """Why one threshold failed: ``max_err 2.98e-08 > max 1e-12``, or the value is missing or not finite."""
    name, value = check["name"], check["value"]
    if value is None:
        return f"the metric returned no value {name!r} (it returned {', '.join(returned) or 'nothing'})"
    if not math.isfinite(value):
        return f"{name} is {value}, not a finite number"
    if check["min"] is not None and value < check["min"]:
        shown, bound = _distinct(value, check["min"])
        return f"{name} {shown} < min {bound}"
    shown, bound = _distinct(value, check["max"])
    return f"{name} {shown} > max {bound}"


def _distinct(value: float, bound: float) -> tuple[str, str]:
    """Both numbers short, with as many digits as it takes to tell them apart."""
    for digits in range(3, 18):
        a, b = f"{value:.{digits}g}", f"{bound:.{digits}g}"
        if a != b:
            return a, b
    return repr(value), repr(bound)


def task_metric(metric: dict[str, Any]) -> Finding:
    """The metric of the rewritten (or replacement) model missed a threshold or raised."""
    return make_finding("task-metric", metric_message(metric))


def quantized_task_metric(metric: dict[str, Any]) -> Finding:
    return make_finding("task-metric", f"quantized model: {metric_message(metric)}", subject="quantization metric")


DOCS = (REWRITE_MISMATCH, REWRITE_UNMATCHED, REWRITE_UNVERIFIED, TASK_METRIC)
