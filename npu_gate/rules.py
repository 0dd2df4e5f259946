"""The rule registry: stable kebab-case ids, default severities and docs.

Ids are interface: users waive them, scripts grep them. An id is never renamed
and a retired id is never reused (see ``RETIRED``). Severity is a separate field.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    summary: str
    doc: str
    finding: bool = True  # False: the run stops with exit 2 instead of reporting a finding


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule(
            "contract-invalid",
            ERROR,
            "The contract, a profile it names, or the model file cannot be used.",
            "Not a finding: npu-gate prints one line per problem (file and JSON path) and exits 2 "
            "before any model is analysed. Fix the contract; nothing was judged yet.",
            finding=False,
        ),
        Rule(
            "export-failed",
            ERROR,
            "The PyTorch model could not be exported to ONNX.",
            "The exporter's own message is kept in the finding and the full output in the "
            "conversion log (--log). Nothing downstream (placement, numerics) ran.",
        ),
        Rule(
            "onnx-checker",
            ERROR,
            "onnx.checker rejects the model (full check).",
            "The model violates the ONNX specification (unknown op, bad attribute, wrong IR), or "
            "the full check's strict shape inference fails (incompatible shapes, wrong types). "
            "Vendor compilers usually reject such models outright.",
        ),
        Rule(
            "shape-inference",
            WARNING,
            "ONNX shape inference could not run at all; shapes are missing.",
            "Shape inference runs in strict mode with data propagation after applying the "
            "contract's input shapes; when that fails (an onnx-checker finding) a lenient pass "
            "still infers what it can. This warning means even the lenient pass failed, so "
            "shape-dependent checks are incomplete.",
        ),
        Rule(
            "input-mismatch",
            ERROR,
            "A declared input does not match the model's inputs.",
            "The contract names an input the model does not have, misses one it has, or "
            "declares a dtype, rank or static dim that differs from the model's.",
        ),
        Rule(
            "dynamic-input",
            ERROR,
            "A graph input has a symbolic or unknown dimension.",
            "Raised even when the contract gives a static shape: the model itself stays "
            "dynamic, and NPU compilers need static shapes (RKNN refuses such inputs). Export "
            "with static shapes or fix the dim. A warning instead of an error when the "
            "contract sets gates.allow_dynamic_shapes.",
        ),
        Rule(
            "dynamic-shape",
            ERROR,
            "A tensor's shape is still not static after shape inference.",
            "Reported per producing node. With the contract's static input shapes applied, a "
            "remaining unknown dim comes from data-dependent ops or from shape inference not "
            "knowing the op. A warning instead of an error when gates.allow_dynamic_shapes is "
            "set.",
        ),
        Rule(
            "unsupported-op",
            ERROR,
            "The op (domain, type) is not in the target profile: CPU fallback.",
            "The node is predicted to run on CPU. Every CPU node can split the graph into more "
            "NPU partitions, each boundary costing copies and syncs. Replace the op, or waive "
            "it with a reason.",
        ),
        Rule(
            "op-constraint",
            ERROR,
            "The op is in the profile but a constraint fails: CPU fallback.",
            "One finding per failed constraint, each with the constraint id, the actual value "
            "and the allowed values. All constraints are evaluated, not only the first.",
        ),
        Rule(
            "numeric-mismatch",
            ERROR,
            "ONNX Runtime output differs from PyTorch beyond atol/rtol.",
            "The exported graph was run with onnxruntime (CPU) on seeded samples drawn from the "
            "contract's input ranges and compared with the eager module. An element passes when "
            "|onnx - torch| <= atol + rtol * |torch|.",
        ),
        Rule(
            "numerics-failed",
            ERROR,
            "The numeric comparison could not run.",
            "onnxruntime could not create a session or run the model, or the PyTorch module "
            "raised. The message says which.",
        ),
        Rule(
            "gate-exceeded",
            ERROR,
            "A limit in the contract's gates was exceeded.",
            "max_cpu_nodes, max_npu_partitions or max_boundary_bytes. A limit that cannot be "
            "checked (boundary bytes unknown because of dynamic shapes) counts as exceeded.",
        ),
        Rule(
            "waiver-expired",
            WARNING,
            "A waiver's expiry date has passed; it no longer waives anything.",
            "Renew it with a new date and reason, or fix the finding it covered.",
        ),
        Rule(
            "waiver-unused",
            INFO,
            "A waiver matched no finding.",
            "The finding it covered is gone (or the waiver has a typo). Remove it to keep the "
            "contract honest.",
        ),
        Rule(
            "compiler-failed",
            ERROR,
            "A real compiler (npu-gate probe) rejected the model or crashed on it.",
            "The compiler ran in its own venv, in a child process: it reported an error (the "
            "message is in the finding, the full log with --log), died on a signal (RKNN-Toolkit2 "
            "2.5.0 SIGSEGVs on cubic Resize) or hit the timeout. When the log names a rewrite rule "
            "to disable, the probe retries once with it disabled; if that build succeeds the "
            "finding is a warning saying which rule had to be disabled.",
        ),
    )
}

# Ids that existed once and must never be reused, with the version that retired them.
RETIRED: dict[str, str] = {}


def rule(rule_id: str) -> Rule:
    return RULES[rule_id]
