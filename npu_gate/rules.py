"""The rule registry: stable kebab-case ids, default severities and one-line summaries.

Ids are interface: users waive them, scripts grep them. An id is never renamed
and a retired id is never reused (see ``RETIRED``). Severity is a separate field.
Each rule's doc (in fixed sections) and the code that builds its findings live in
``npu_gate/findings/``, one module per family; this bottom layer keeps what every
layer needs (``make_finding`` the severity, the contract the ids a waiver may name).
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    summary: str  # one line; the doc is ``findings.catalog.DOCS[id]``
    finding: bool = True  # False: the run stops with exit 2 instead of reporting a finding
    # True: the finding puts a node on CPU (a missing op, a failed constraint, a profile limit).
    # A compiler's measurement (``target.probe.decide: measured``) judges these findings; the
    # review table, the minimal models and the probe stage read this flag, nobody keeps a list.
    placement: bool = False


# How findings, reports and waivers name a node (docs/rules.md and `npu-gate explain waiver-unused`).
NODE_NAMES = (
    "A waiver's `node` is matched against the node's name as reports and the JSON show it. That "
    "is the model's own name, unless the node has none or shares it with other nodes: then it "
    "is `<name>#<index>` (the op type for an unnamed node, e.g. `Relu#0`; index: the node's "
    "position in the graph's node list, from 0), with `_2`, `_3`... appended if the model "
    "already has a node of that name. The JSON keeps the model's name in "
    "`nodes[].original_name`. A waiver that names a shared name matches nothing; its "
    "`waiver-unused` finding lists the names to use. A name copied from a rendered Markdown "
    "report matches too: the invisible word joiners (U+2060) that reports put after `#` and "
    "`@` are ignored."
)

RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule("contract-invalid", ERROR,
             "The contract, a profile it names, or the model file cannot be used.", finding=False),
        Rule("export-failed", ERROR,
             "The PyTorch model could not be exported to ONNX."),
        Rule("onnx-checker", ERROR,
             "onnx.checker rejects the model (full check)."),
        Rule("fold-budget", WARNING,
             "A folded node's value was not computed: it is over the folding budget."),
        Rule("shape-inference", WARNING,
             "ONNX shape inference could not run at all; shapes are missing."),
        Rule("input-mismatch", ERROR,
             "A declared input does not match the model's inputs."),
        Rule("dynamic-input", ERROR,
             "A graph input has a symbolic or unknown dimension."),
        Rule("dynamic-shape", ERROR,
             "A tensor's shape is still not static after shape inference."),
        Rule("shape-computation", ERROR,
             "A shape computation (Shape/Size → ... → a shape input) stays in the graph."),
        Rule("unsupported-op", ERROR,
             "The op (domain, type) is not in the target profile: CPU fallback.", placement=True),
        Rule("op-constraint", ERROR,
             "The op is in the profile but a constraint fails: CPU fallback.", placement=True),
        Rule("profile-limit", ERROR,
             "A global limit of the profile fails: CPU fallback (or, for the opset, the model).", placement=True),
        Rule("npu-node-split", WARNING,
             "A node placed on the NPU runs as pieces on several devices: the compiler adds a CPU op "
             "inside it."),
        Rule("compiler-will-refuse", ERROR,
             "The target's compiler is expected to refuse to build the model."),
        Rule("eliminated-changes-numerics", WARNING,
             "The target's compiler removes a node that is not an exact no-op for this model: the "
             "build computes other numbers than the ONNX model."),
        Rule("unchecked-condition", INFO,
             "Predicted on the NPU, but the profile's source states a condition npu_gate cannot "
             "check."),
        Rule("numeric-mismatch", ERROR,
             "ONNX Runtime output differs from PyTorch beyond atol/rtol."),
        Rule("numerics-uninformative", WARNING,
             "An output's comparison with PyTorch cannot tell much: its values are tiny, zero or "
             "constant."),
        Rule("numerics-failed", ERROR,
             "The numeric comparison could not run."),
        Rule("standalone-qdq", ERROR,
             "A Q/DQ node onnxruntime puts in no QDQ unit, which the target runs on CPU: CPU "
             "fallback.", placement=True),
        Rule("quantized-op-unsupported", ERROR,
             "A quantized unit's op runs in float on the target but not in its integer dtypes: CPU "
             "fallback.", placement=True),
        Rule("quantization-failed", ERROR,
             "The contract's quantization could not run: the quantizer or the quantized model raised."),
        Rule("quantization-error", ERROR,
             "An output of the quantized model is below a quantization gate on the hold-out samples."),
        Rule("gate-exceeded", ERROR,
             "A limit in the contract's gates was exceeded."),
        Rule("memory-budget", ERROR,
             "An NPU partition's estimated memory exceeds the budget the target profile declares."),
        Rule("gate-timeout", ERROR,
             "The run reached its time limit (--timeout) before it finished: the gate fails."),
        Rule("waiver-expired", WARNING,
             "A waiver's expiry date has passed; it no longer waives anything."),
        Rule("waiver-unused", INFO,
             "A waiver matched no finding."),
        Rule("rewrite-mismatch", ERROR,
             "A rewrite named in the contract (or its replacement model) changes the numbers beyond "
             "tolerance."),
        Rule("rewrite-unmatched", WARNING,
             "A rewrite named in the contract matched no node."),
        Rule("rewrite-unverified", WARNING,
             "The contract's rewrites (or replacement) were applied with no numerical proof."),
        Rule("task-metric", ERROR,
             "The contract's task metric missed its threshold or could not be computed."),
        Rule("compiler-failed", ERROR,
             "A real compiler (npu-gate probe) rejected the model or crashed on it."),
        Rule("rank-adapter", WARNING,
             "The target adds a rank adapter on CPU at a graph input or output."),
    )
}

# The rules whose findings put a node on CPU (see ``Rule.placement``).
PLACEMENT_RULES = frozenset(r.id for r in RULES.values() if r.placement)

# Ids that existed once and must never be reused, with the version that retired them.
RETIRED: dict[str, str] = {}
