"""Per-node placement against a target profile: npu, cpu or folded, with the reasons.

Folding here follows the gate's documented rule: `Constant` nodes, `Shape`/`Size` nodes
whose input has a static shape under the contract's input shapes, and nodes with at
least one input whose inputs (including outer-scope values read by their subgraphs)
are all constants, are folded: a compiler evaluates them ahead of time, so they are
neither CPU nor NPU work. Generator ops with no inputs (RandomNormal) and random ops
are never folded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from npu_gate.graph.facts import Dim, GraphFacts, NodeFacts, TensorInfo
from npu_gate.target.constraints import Failure, ValueOf, evaluate, unchecked
from npu_gate.target.limits import node_failures
from npu_gate.target.profile import Profile

if TYPE_CHECKING:
    from npu_gate.graph.subgraphs import ScopedNode

NPU = "npu"
CPU = "cpu"
FOLDED = "folded"

_RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
               "Multinomial", "Bernoulli"}


@dataclass
class Placement:
    device: str
    reasons: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    op_supported: bool = True  # False: the op is not in the profile at all
    limit_failures: list[Failure] = field(default_factory=list)  # the profile's global limits
    unchecked: list[Failure] = field(default_factory=list)  # stated conditions not checked (npu)
    fused: dict[str, Any] | None = None  # {pattern, op, nodes}: matched by a profile pattern (patterns.py)


def fold(facts: GraphFacts, order: list[int], weights: set[str]) -> tuple[set[int], set[str]]:
    """Indices of folded nodes and the names of all constant tensors (weights included)."""
    return fold_nodes(facts.nodes, facts.tensors, order, weights)


def fold_nodes(
    nodes: list[NodeFacts], tensors: dict[str, TensorInfo], order: list[int], weights: set[str]
) -> tuple[set[int], set[str]]:
    """Fold under the shapes in ``tensors`` (the contract's input shapes already applied).

    Constant: `Constant` nodes; `Shape`/`Size` of a tensor whose (sliced) shape is static;
    and every node reading only constants. Compute ops are never rewritten: a node is
    either folded as a whole or kept as it is.
    """
    constants = set(weights)
    folded: set[int] = set()
    for i in order:
        node = nodes[i]
        if foldable(node, constants, tensors):
            folded.add(i)
            constants.update(n for n in node.outputs if n)
    return folded, constants


def shape_extent(node: NodeFacts, shape: list[Dim]) -> range:
    """The dims a Shape node reads (its start/end attributes, opset 15), or all of them."""
    rank = len(shape)
    if node.op_type != "Shape":
        return range(rank)
    start = int(node.attributes.get("start", 0))
    end = node.attributes.get("end")
    end = rank if end is None else int(end)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return range(start, end)


def _static_extent(node: NodeFacts, tensors: Mapping[str, TensorInfo]) -> bool:
    info = tensors.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if info is None or info.shape is None:
        return False
    return all(isinstance(info.shape[d], int) for d in shape_extent(node, info.shape))


def foldable(node: NodeFacts, constants: set[str], tensors: Mapping[str, TensorInfo] | None = None) -> bool:
    """The folding rule for one node, given the constants known so far (and, to fold
    Shape/Size of statically shaped tensors, the tensors of its scope)."""
    if node.domain == "" and node.op_type == "Constant":
        return True
    if (tensors is not None and node.domain == "" and node.op_type in ("Shape", "Size")
            and _static_extent(node, tensors)):
        return True
    if node.op_type in _RANDOM_OPS:
        return False
    reads = [n for n in (*node.inputs, *node.implicit_inputs) if n]
    return bool(reads) and all(n in constants for n in reads)


def place_node(
    node: NodeFacts,
    facts: GraphFacts,
    profile: Profile,
    constants: set[str],
    layouts: Mapping[str, str] | None = None,
) -> Placement:
    return place_in_scope(node, facts.tensors, profile, constants, layouts)


def place_in_scope(
    node: NodeFacts,
    tensors: Mapping[str, TensorInfo],
    profile: Profile,
    constants: set[str] | frozenset[str],
    layouts: Mapping[str, str] | None = None,
    values: ValueOf | None = None,
) -> Placement:
    """Place one node given the tensors of its scope (the top-level graph or a subgraph) and,
    for value constraints, the values of its constant tensors (None: not known)."""
    key = node.key
    spec = profile.ops.get(key)
    if spec is None:
        return Placement(CPU, [f"op {key} not in profile {profile.name}"], op_supported=False)
    failures = evaluate(spec.get("constraints", []), node, tensors, constants, layouts, values)
    limits = node_failures(profile.limits, node, tensors, constants)
    if failures or limits:
        reasons = [f.message for f in (*failures, *limits)]
        return Placement(CPU, reasons, failures, limit_failures=limits)
    return Placement(NPU, unchecked=unchecked(spec.get("constraints", [])))


def place_all(
    facts: GraphFacts,
    profile: Profile,
    folded: set[int],
    constants: set[str],
    layouts: Mapping[str, str] | None = None,
    values: ValueOf | None = None,
) -> list[Placement]:
    tensors = facts.tensors
    return [
        Placement(FOLDED) if node.index in folded
        else place_in_scope(node, tensors, profile, constants, layouts, values)
        for node in facts.nodes
    ]


def place_subgraphs(
    scoped: list[ScopedNode],
    profile: Profile,
    placements: list[Placement],
    layouts: Mapping[str, str] | None = None,
) -> list[Placement]:
    """Place every body node of every control-flow node.

    Bodies of a folded node are folded with it. A control-flow node the profile runs on
    the NPU moves to CPU when any of its body nodes runs on CPU: the whole construct
    needs both, and the top-level partitioning treats it as one node.
    """
    body: list[Placement] = []
    for s in scoped:
        if s.folded or placements[s.root].device == FOLDED:
            body.append(Placement(FOLDED))
        else:
            body.append(place_in_scope(s.node, s.tensors, profile, s.constants, layouts))
    # Children follow their parent in ``scoped``: walking backwards settles every body
    # before the control-flow node that holds it (nested Ifs in a Loop included).
    by_path = {s.path: p for s, p in zip(scoped, body, strict=True)}
    on_cpu: dict[str | int, list[str]] = {}  # parent path (or top-level index) -> CPU children
    for s in reversed(scoped):
        placement = by_path[s.path]
        if s.path in on_cpu:
            _move_to_cpu(placement, on_cpu[s.path])
        if placement.device == CPU:
            parent = s.scope.rsplit("/", 1)[0]  # scope is "<parent path>/<attribute>"
            key: str | int = parent if parent in by_path else s.root
            on_cpu.setdefault(key, []).insert(0, s.path)
    for root in sorted(k for k in on_cpu if isinstance(k, int)):
        _move_to_cpu(placements[root], on_cpu[root])
    return body


def _move_to_cpu(placement: Placement, paths: list[str]) -> None:
    if placement.device == FOLDED:
        return
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    placement.reasons.append(f"{len(paths)} node(s) in its subgraphs run on CPU: {shown}")
    placement.device = CPU
