"""Numerics against PyTorch: ``numeric-mismatch``, ``numerics-uninformative``, ``numerics-failed``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from npu_gate.findings.doc import RuleDoc
from npu_gate.result.types import Finding, make_finding

if TYPE_CHECKING:  # model.numerics is not imported by `inspect`
    from npu_gate.model.numerics import OutputComparison

NUMERIC_MISMATCH = RuleDoc(
    "numeric-mismatch",
    finds="ONNX Runtime output differs from PyTorch beyond atol/rtol. The exported graph was run with "
          "onnxruntime (CPU) on seeded samples drawn from the contract's input ranges and compared with the "
          "eager module. An element passes when |onnx - torch| <= atol + rtol * |torch|. NaN never passes, "
          "on either side; an infinity passes only where both sides hold the same one (the result then "
          "counts them).",
    why="The compiler starts from the ONNX graph: an export that already computes other numbers than the "
        "module cannot give the module's numbers on the NPU.",
    example="""def forward(self, x):
    return x + torch.randn_like(x)  # random at every call: eager and onnxruntime never agree""",
    fix="Compare the output the message names: a shape or dtype problem is in the message; otherwise find "
        "the op that diverges (an export option, an opset) or, if the difference is expected, widen the "
        "contract's atol/rtol.",
    evidence="onnxruntime CPU against the eager module on the contract's seeded samples. Outputs are compared "
             "in order: the ONNX model's outputs against the module's returned tensors, tuples, lists and dict "
             "values flattened in order.",
    fields="`subject` `output <name>`; the message gives max abs and rel error with atol and rtol (and the "
           "error relative to the output's scale when that judged it); `numerics[]` in the result holds the "
           "figures.",
)

NUMERICS_UNINFORMATIVE = RuleDoc(
    "numerics-uninformative",
    finds="An output's comparison with PyTorch cannot tell much: its values are tiny, zero or constant. When "
          "every reference value lies within atol of 0, the output is judged instead by its error relative "
          "to its own scale (max abs error / max |reference| <= rtol; `scale_rel_err` in the result), and "
          "this warning names the output's range. An output that is all zero, or constant over every sample "
          "and element, passes a comparison that cannot tell whether the export depends on its inputs: a "
          "warning too.",
    why="A random-init net's outputs can be ~1e-9: every value is within atol of zero, so "
        "|onnx - torch| <= atol passes whatever the export computes.",
    example="""net = MyNet()  # random init, no trained weights loaded: its outputs can be ~1e-9""",
    fix="Use trained weights or a samples_file of real inputs, or lower atol.",
    evidence="The reference outputs' range over the contract's samples.",
    fields="`subject` `output <name>`; `numerics[].uninformative` (`below-atol`, `zero`, `constant`), "
           "`reference_range` and `scale_rel_err` in the result.",
)


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


def comparison_findings(comparisons: Sequence[OutputComparison]) -> list[Finding]:
    """Per output: ``numeric-mismatch`` when it failed, ``numerics-uninformative`` when its
    comparison cannot tell much."""
    out = []
    for c in comparisons:
        if not c.passed:
            detail = c.problem or (
                f"max abs error {c.max_abs_err:.3g}, max rel error {c.max_rel_err:.3g} "
                f"(atol {c.atol:g}, rtol {c.rtol:g})"
            )
            if c.scale_rel_err is not None and not c.problem:
                detail += f"; relative to the output's scale {c.scale_rel_err:.3g} > rtol {c.rtol:g}"
            out.append(make_finding("numeric-mismatch", f"output {c.output}: {detail}", subject=f"output {c.output}"))
        if c.uninformative is not None and c.reference_range is not None:
            out.append(make_finding("numerics-uninformative", uninformative_message(c), subject=f"output {c.output}"))
    return out


NUMERICS_FAILED = RuleDoc(
    "numerics-failed",
    finds="The numeric comparison could not run: onnxruntime could not create a session or run the model, or "
          "the PyTorch module raised. The message says which. A rewrite's or a replacement's verification "
          "that onnxruntime cannot run is this finding too.",
    why="No comparison, no evidence that the exported graph computes what the module does.",
    example="""def forward(self, x):
    assert x.shape[0] == 1, "batch 1 only"  # raises on a sample of another shape""",
    fix="Read the message: make the module run on the contract's samples, or the model run in onnxruntime.",
    evidence="The error of onnxruntime or of the module, in one line.",
    fields="`message` only.",
)


def numerics_failed(message: str) -> Finding:
    return make_finding("numerics-failed", message)


DOCS = (NUMERIC_MISMATCH, NUMERICS_UNINFORMATIVE, NUMERICS_FAILED)
