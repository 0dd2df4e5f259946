"""Placement: ``unsupported-op``, ``op-constraint``, ``profile-limit``, ``unchecked-condition``,
``rank-adapter``, ``npu-node-split`` (the CPU fallbacks, and what runs apart from the graph's nodes)."""

from __future__ import annotations

from collections.abc import Sequence

from npu_gate.findings.analysis import CompilerPlacement
from npu_gate.findings.constraint import failure_finding
from npu_gate.findings.doc import RuleDoc
from npu_gate.findings.quantization import quantized_op_unsupported, standalone_qdq
from npu_gate.graph.facts import GraphFacts, NodeFacts
from npu_gate.placement.place import Placement
from npu_gate.profile.constraints import Failure
from npu_gate.result.types import CPU, FOLDED, NPU, Finding, RankAdapter, make_finding
from npu_gate.rules import INFO

UNSUPPORTED_OP = RuleDoc(
    "unsupported-op",
    finds="The op (domain, type) is not in the target profile: the node is predicted to run on CPU.",
    why="Every CPU node can split the graph into more NPU partitions, each boundary costing copies and syncs.",
    example="""class Net(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)  # an op the target profile may not list""",
    fix="Replace the op (`npu-gate rewrites` lists rewrites that do), or waive it with a reason.",
    evidence="The target profile's `ops` (its `evidence` names the source); with `target.probe.decide: "
             "measured` the compiler's own placement judges it: a node the compiler ran on the NPU or folded "
             "away is an info finding saying so.",
    fields="`node`, `op_type` (domain::type for a non-default domain).",
)


def unsupported_op(name: str, key: str, reason: str, note: str, severity: str | None) -> Finding:
    return make_finding("unsupported-op", reason + note, severity=severity, node=name, op_type=key)


OP_CONSTRAINT = RuleDoc(
    "op-constraint",
    finds="The op is in the profile but a constraint fails: CPU fallback. One finding per failed constraint, "
          "each with the constraint id, the actual value and the allowed values. All constraints are "
          "evaluated, not only the first.",
    why="A CPU node can split the graph into more NPU partitions, each boundary costing copies and syncs.",
    example="""torch.nn.Conv2d(3, 8, kernel_size=3, dilation=4)  # a dilation a profile's Conv constraint may refuse""",
    fix="Change the attribute or shape to one the constraint allows (`npu-gate explain CONSTRAINT-ID` says "
        "the condition and its source), or waive it with a reason.",
    evidence="The profile's constraint and its `doc`; `evidence` the profile's label.",
    fields="`node`, `op_type`, `constraint` (the id), `actual`, `allowed`, `doc`, `evidence`, `fix` (the "
           "constraint's, when it has one).",
)

PROFILE_LIMIT = RuleDoc(
    "profile-limit",
    finds="A global limit of the profile fails: CPU fallback (or, for the opset, the model). The profile's "
          "`limits` apply to every op it supports: opset range, allowed domains and dtypes, maximum rank, "
          "maximum elements/bytes of one runtime tensor, static shapes.",
    why="The node is predicted to run on CPU. A model opset outside `limits.opset` is one finding without a "
        "node: the target's converter is expected to refuse the model.",
    example="""torch.onnx.export(model, x, "m.onnx", opset_version=21)  # above the profile's limits.opset""",
    fix="Bring the tensor (dtype, rank, size) or the export's opset inside the limit the finding names. When "
        "the profile's `refuses` has an `opset-above` entry that matches too, its `compiler-will-refuse` (the "
        "compiler's own words, with their evidence) is the one finding and this one is not given.",
    evidence="The profile's `limits`; `evidence` the profile's label.",
    fields="`constraint` names the limit (`limit-dtypes`, `limit-max-rank`, ...), `actual` the value seen, "
           "`allowed` the value allowed; `node` and `op_type` except for the opset.",
)


def opset_limit(failure: Failure, evidence: str) -> Finding:
    """The model's opset outside the profile's ``limits.opset``: one finding without a node."""
    return failure_finding("profile-limit", failure.message, failure, evidence)


UNCHECKED_CONDITION = RuleDoc(
    "unchecked-condition",
    finds="Predicted on the NPU, but the profile's source states a condition npu_gate cannot check. A "
          "profile marks such conditions `unchecked`: the document is vague (\"too many permutations to "
          "describe\"), or the condition is about tensor values npu_gate does not read (\"pads should be "
          "non-negative\").",
    why="The node keeps its NPU placement; the finding says which prediction rests on an unverified condition.",
    example="None specific: any node whose profile entry carries an `unchecked` condition (e.g. a Pad's "
            "pads values) gets one.",
    fix="Confirm it on the target (`target.probe` with a real compiler measures the placement).",
    evidence="The profile's `unchecked` condition and its source document.",
    fields="`node`, `op_type`, `constraint`, `actual`, `allowed`, `doc`, `evidence`.",
)


def placement_findings(
    facts: GraphFacts,
    placements: list[Placement],
    evidence: str,
    body_nodes: Sequence[tuple[str, str]] = (),
    body: Sequence[Placement] = (),
    measured: CompilerPlacement | None = None,
) -> list[Finding]:
    """Findings of placements (CPU fallbacks, unchecked conditions on NPU nodes): top-level
    nodes, then subgraph nodes named by path."""
    out = []
    named = [(n.name, n.key) for n in facts.nodes] + list(body_nodes)
    for (name, key), placement in zip(named, [*placements, *body], strict=True):
        for f in placement.unchecked if placement.device == NPU else []:
            out.append(failure_finding("unchecked-condition", f.message, f, evidence, node=name, op_type=key))
        if placement.device != CPU:
            continue
        # CPU fallback, unless the compiler's measurement says the node runs on the NPU or nowhere
        severity, note = measured_note(measured, name)
        if placement.quantized is not None:  # runs in float, not in its unit's integer dtypes
            out.append(quantized_op_unsupported(placement, name, key, note, evidence, severity))
            continue
        if placement.standalone is not None:  # a Q/DQ node in no unit the profile puts on CPU
            out.append(standalone_qdq(placement, name, key, note, severity))
            continue
        if placement.qdq is not None:
            continue  # a Q/DQ node is judged with its unit's op
        if not placement.op_supported:
            out.append(unsupported_op(name, key, placement.reasons[0], note, severity))
        for f in placement.failures:  # which constraint failed, then how
            out.append(failure_finding("op-constraint", f"{f.constraint}: {f.message}{note}", f, evidence,
                                       severity=severity, node=name, op_type=key))
        for f in placement.limit_failures:
            out.append(failure_finding("profile-limit", f.message + note, f, evidence, severity=severity,
                                       node=name, op_type=key))
    return out


def measured_note(measured: CompilerPlacement | None, name: str) -> tuple[str | None, str]:
    """The severity (None: the rule's) and the note of a node's placement findings (the
    rules of ``PLACEMENT_RULES``) when a compiler's placement decides: info, and why, when
    the compiler ran the node on the NPU or removed it at compile time (it runs nowhere)."""
    node = measured.nodes.get(name) if measured is not None else None
    if measured is None or node is None:
        return None, ""
    if node.runs_on == NPU:
        return INFO, f" (measured on the NPU{' as ' + node.became if node.became else ''}: {measured.evidence})"
    if node.actual == FOLDED:
        return INFO, f" (measured: folded away by the compiler: {measured.evidence})"
    return None, ""


RANK_ADAPTER = RuleDoc(
    "rank-adapter",
    finds="The target adds a rank adapter on CPU at a graph input or output. The profile's `rank_adapters` "
          "say the target computes in one rank (RKNN: 4-D) and wraps graph inputs and outputs of another "
          "rank in an adapter op (a Reshape), run on the NPU only when `npu_when` holds (RKNN: the last dim "
          "a multiple of 8).",
    why="A CPU adapter is one more CPU segment and a copy at the graph edge that no model node shows.",
    example="""def forward(self, x):      # x: [1, 100, 30], a 3-D input
    return self.proj(x)       # on RKNN: a CPU Reshape to 4-D before it (30 is not a multiple of 8)""",
    fix="Give the tensor the target's rank, or a last dim the rule accepts.",
    evidence="The profile's `rank_adapters`; `evidence` the profile's label.",
    fields="`subject`: the graph input or output tensor; `evidence`; the message is the adapter's reason.",
)


def rank_adapter_findings(adapters: list[RankAdapter] | None, evidence: str) -> list[Finding]:
    """One finding per rank adapter the target runs on CPU."""
    return [make_finding("rank-adapter", adapter["reason"], evidence=evidence, subject=adapter["tensor"])
            for adapter in adapters or [] if adapter["device"] == CPU]


NPU_NODE_SPLIT = RuleDoc(
    "npu-node-split",
    finds="A node placed on the NPU runs as pieces on several devices: the compiler adds a CPU op inside it. "
          "The profile's `splits` (docs/target-profiles.md#splits) lists nodes the compiler runs as several "
          "ops on several devices: RKNN runs a MatMul/Gemm with a constant weight and more than 8192 output "
          "features (an nn.Linear head, e.g. a CTC recogniser's classifier over thousands of characters) as "
          "an NPU Conv, then the Transpose back to the ONNX layout on the CPU (its Transposes of a dim above "
          "8192 run there), then an NPU Reshape.",
    why="One NPU partition becomes two, with a CPU partition between them and the head's output copied "
        "twice. The node stays `npu`; its `split` names the pieces, and partitions and boundary bytes are "
        "counted over them.",
    example="""head = torch.nn.Linear(256, 9000)  # 9000 output features > 8192 on RKNN""",
    fix="Keep the Linear's out_features at or below the limit, split the classifier into chunks of at most "
        "the limit concatenated after it, or run the head on the CPU deliberately.",
    evidence="The profile's `splits` entry: `evidence` the profile's label, `evidence_detail` the entry's "
             "own, `doc` its record.",
    fields="`node`, `op_type`, `constraint` (the entry), `actual` (the pieces' devices), `allowed` (\"one "
           "device\"), `evidence`, `evidence_detail`, `doc`, `fix`; the message names the failed condition.",
)


def split_finding(node: NodeFacts, placement: Placement, evidence: str) -> Finding:
    """``npu-node-split``: a node on the NPU the profile's ``splits`` says the compiler runs as pieces;
    ``evidence``: the profile's label (the entry's own in ``evidence_detail``, its record in ``doc``)."""
    split = placement.split
    assert split is not None
    pieces = " -> ".join(f"{p['op']} ({p['device'].upper()})" for p in split["pieces"])
    cpu = sum(1 for p in split["pieces"] if p["device"] == CPU)
    message = (f"{node.name} ({node.key}) runs as {pieces}: {'; '.join(split['reasons'])}; "
               f"{cpu} CPU piece(s) inside one node, its output crossing between devices")
    return make_finding("npu-node-split", message, node=node.name, op_type=node.key, constraint=split["id"],
                        actual=[p["device"] for p in split["pieces"]], allowed="one device",
                        evidence=evidence, evidence_detail=split["evidence"], doc=split.get("doc"),
                        fix=split.get("fix"))


DOCS = (UNSUPPORTED_OP, OP_CONSTRAINT, PROFILE_LIMIT, UNCHECKED_CONDITION, RANK_ADAPTER, NPU_NODE_SPLIT)
