"""Per-node placement against a target profile: npu, cpu or folded, with the reasons.

Folding here follows the gate's documented rule: `Constant` nodes, `Shape`/`Size` nodes
whose input has a static shape under the contract's input shapes, and nodes with at
least one input whose inputs (including outer-scope values read by their subgraphs)
are all constants, are folded: a compiler evaluates them ahead of time, so they are
neither CPU nor NPU work. Generator ops with no inputs (RandomNormal) and random ops
are never folded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npu_gate.constraints import Failure, evaluate
from npu_gate.graph import Dim, GraphFacts, NodeFacts, TensorInfo
from npu_gate.profile import Profile

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
        constant = node.op_type == "Constant" or (
            node.op_type in ("Shape", "Size") and _static_extent(node, tensors)
        )
        if node.domain == "" and constant:
            folded.add(i)
        elif node.op_type not in _RANDOM_OPS:
            reads = [n for n in (*node.inputs, *node.implicit_inputs) if n]
            if reads and all(n in constants for n in reads):
                folded.add(i)
            else:
                continue
        else:
            continue
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


def _static_extent(node: NodeFacts, tensors: dict[str, TensorInfo]) -> bool:
    info = tensors.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if info is None or info.shape is None:
        return False
    return all(isinstance(info.shape[d], int) for d in shape_extent(node, info.shape))


def place_node(node: NodeFacts, facts: GraphFacts, profile: Profile, constants: set[str]) -> Placement:
    spec = profile.ops.get(node.key)
    if spec is None:
        return Placement(CPU, [f"op {node.key} not in profile {profile.name}"], op_supported=False)
    failures = evaluate(spec.get("constraints", []), node, facts.tensors, constants)
    if failures:
        return Placement(CPU, [f.message for f in failures], failures)
    return Placement(NPU)


def place_all(
    facts: GraphFacts, profile: Profile, folded: set[int], constants: set[str]
) -> list[Placement]:
    return [
        Placement(FOLDED) if node.index in folded else place_node(node, facts, profile, constants)
        for node in facts.nodes
    ]
