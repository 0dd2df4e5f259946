"""The target's compiler: ``compiler-will-refuse``, ``eliminated-changes-numerics`` (what its
profile says it refuses or removes) and ``compiler-failed`` (what a real compiler did)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from npu_gate.findings.doc import RuleDoc
from npu_gate.placement.eliminate import NUMERICS_THRESHOLD, NumericChange
from npu_gate.placement.refusals import Refusal
from npu_gate.result.types import Finding, evidence_label, make_finding

COMPILER_WILL_REFUSE = RuleDoc(
    "compiler-will-refuse",
    finds="The target's compiler is expected to refuse to build the model. The profile's `refuses` "
          "(docs/target-profiles.md#refuses) lists what its compiler will not build: node patterns (an op, "
          "optionally only at or below an opset, with at least some outputs, or with an attribute value) and "
          "graph conditions (an opset above the compiler's maximum, a dynamic-quantization op such as "
          "DynamicQuantizeLinear, a graph input read only inside If/Loop/Scan bodies, an attention MatMul -> "
          "Softmax -> MatMul with every tensor in QDQ, stacked Concats read by a Slice and a Transpose in a "
          "node order the compiler's rewrites crash on). One finding per match.",
    why="No build, no NPU: a refused model does not run on the target at all, whatever the placement says.",
    example="""torch.nn.Dropout(0.1)  # exported in training mode, a Dropout the compiler may refuse
torch.onnx.export(model.train(), x, "m.onnx", training=torch.onnx.TrainingMode.TRAINING)""",
    fix="Remove the construct before export (e.g. export in eval mode, quantize statically, lower the opset) "
        "or choose another target; `fix` is the entry's when it has one.",
    evidence="The profile's `refuses` entry: the message quotes the compiler's own wording when the profile "
             "records it; `evidence` the label, `evidence_detail` the entry's own, `doc` its record.",
    fields="`node` (or `subject`: the input), `op_type`, `constraint` (the profile entry), `evidence`, "
           "`evidence_detail`, `doc`, `fix`.",
)


def refusal_findings(refusals: Sequence[Refusal], evidence: str) -> list[Finding]:
    """One finding per ``refuses`` entry that matches; ``evidence``: the profile's label."""
    return [make_finding("compiler-will-refuse", r.message, node=r.node, op_type=r.op_type, subject=r.subject,
                         constraint=r.id, evidence=evidence_label(r.evidence, evidence),
                         evidence_detail=r.evidence, fix=r.fix, doc=r.doc) for r in refusals]


ELIMINATED_CHANGES_NUMERICS = RuleDoc(
    "eliminated-changes-numerics",
    finds="The target's compiler removes a node that is not an exact no-op for this model: the build computes "
          "other numbers than the ONNX model. The profile's `eliminates` (docs/target-profiles.md#eliminates) "
          "says the compiler drops the node before it places anything, and the node is eliminated, but its "
          "output is not exactly its input. The finding is given when the relative change "
          "1 - 1/sqrt(1 + epsilon) is above 1e-3 (epsilon above about 2e-3; PyTorch's default 1e-5 changes "
          "5e-6).",
    why="A BatchNormalization whose scale, bias, mean and variance are 1, 0, 0 and 1 (random-init torchvision "
        "nets have them) is removed as an identity whatever its epsilon, yet it computes "
        "y = x / sqrt(1 + epsilon): with epsilon 0.1 the ONNX model's output is 4.65 % below the build's. "
        "The targets compute in float16, whose rounding (2^-11 = 4.9e-4) hides less than that.",
    example="""torch.nn.Sequential(torch.nn.ReLU(), torch.nn.BatchNorm2d(8, eps=0.1), torch.nn.ReLU())  # untrained""",
    fix="Keep nn.BatchNorm2d's default eps=1e-5 (or below 2e-3), or fold the BatchNorm away before export "
        "(into the Conv before it: torch.nn.utils.fusion.fuse_conv_bn_eval, "
        "torch.ao.quantization.fuse_modules), or export trained weights.",
    evidence="Measured with RKNN-Toolkit2 2.5.0 (rk3588, fp16, its simulator against onnxruntime, "
             "docs/rknn.md): Relu -> BatchNormalization(1/0/0/1, epsilon 0.1) -> Relu gave the onnxruntime "
             "output times 1.0488 (= sqrt(1.1)); a BatchNormalization a Conv's output feeds alone is folded "
             "into the Conv with its epsilon (`into-conv`, exact: no finding). `evidence` is the profile's "
             "label, the message quotes the `eliminates` entry's own evidence, `doc` its calibration record.",
    fields="`node`, `op_type`, `constraint` `relative-change`, `actual` {`epsilon`, `relative_change`}, "
           "`allowed` {`relative_change`: 0.001}, `evidence`, `evidence_detail`, `doc`, `fix`.",
)


def numeric_change_finding(c: NumericChange, evidence: str) -> Finding:
    """``eliminated-changes-numerics``: the compiler removes ``c.node`` though it is no exact no-op;
    ``evidence``: the profile's label (the entry's own evidence is in the message, its record in ``doc``)."""
    message = (f"the compiler removes this BatchNormalization as an identity (scale 1, bias 0, mean 0, variance 1, "
               f"profile eliminates {c.when}), but its epsilon {c.epsilon:g} makes it y = x / sqrt(1 + {c.epsilon:g}): "
               f"the ONNX model's output is {100 * c.relative_change:.3g} % below the build's "
               f"(relative change above {NUMERICS_THRESHOLD:g}); the elimination: {c.evidence}")
    fix = ("keep nn.BatchNorm2d's default eps=1e-5 (any eps below 2e-3), or fold the BatchNorm away before export "
           "(into the Conv before it: torch.nn.utils.fusion.fuse_conv_bn_eval), or export trained weights")
    return make_finding("eliminated-changes-numerics", message, node=c.node, op_type=c.op_type,
                        constraint="relative-change",
                        actual={"epsilon": c.epsilon, "relative_change": round(c.relative_change, 6)},
                        allowed={"relative_change": NUMERICS_THRESHOLD}, evidence=evidence_label(c.evidence, evidence),
                        evidence_detail=c.evidence, doc=c.doc, fix=fix)


COMPILER_FAILED = RuleDoc(
    "compiler-failed",
    finds="A real compiler (npu-gate probe) rejected the model or crashed on it. The compiler ran in its own "
          "venv, in a child process: it reported an error, died on a signal (RKNN-Toolkit2 2.5.0 SIGSEGVs on "
          "cubic Resize) or hit the timeout.",
    why="The target's own toolchain could not build the model: whatever the prediction says, it does not "
        "run there as exported.",
    example="""torch.nn.Upsample(scale_factor=2, mode="bicubic")  # a cubic Resize: RKNN-Toolkit2 2.5.0 SIGSEGVs""",
    fix="When the log names a rewrite rule to disable, the probe retries once with it disabled; if that build "
        "succeeds the finding is a warning saying which rule had to be disabled. Otherwise change the "
        "construct the message names.",
    evidence="The compiler's own message in the finding, the full log with --log.",
    fields="`message` (and `severity` warning when a retry without a rewrite rule built the model).",
)


def probe_findings(rows: Sequence[dict[str, Any]]) -> list[Finding]:
    """The probe's findings (``compiler-failed``...), as the probe runner reported them."""
    return [make_finding(f["rule"], f["message"], severity=f["severity"]) for f in rows]


DOCS = (COMPILER_WILL_REFUSE, ELIMINATED_CHANGES_NUMERICS, COMPILER_FAILED)
