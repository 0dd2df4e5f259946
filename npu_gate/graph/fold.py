"""Which nodes a compiler evaluates ahead of time (folded), by the gate's documented rule.

`Constant` nodes, `Shape`/`Size` nodes whose input has a static shape under the contract's
input shapes, and nodes with at least one input whose inputs (including outer-scope values
read by their subgraphs) are all constants, are folded: they are neither CPU nor NPU work.
Generator ops with no inputs (RandomNormal) and random ops are never folded.
"""

from __future__ import annotations

from collections.abc import Mapping

from npu_gate.graph.facts import Dim, GraphFacts, NodeFacts, TensorInfo

# Ops whose output differs from run to run: never constants, whatever they read.
RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                        "Multinomial", "Bernoulli"})


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
    if node.op_type in RANDOM_OPS:
        return False
    reads = [n for n in (*node.inputs, *node.implicit_inputs) if n]
    return bool(reads) and all(n in constants for n in reads)
