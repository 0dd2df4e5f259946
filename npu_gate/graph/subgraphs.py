"""Nodes inside control-flow bodies (If branches, Loop and Scan bodies), with scoped names.

The top-level graph stays the unit of partitioning: a control-flow node is one node
there. Its body nodes are still checked against the profile, each named by its path,
e.g. ``if0/then_branch/then_add``, and each sees the tensors of its own scope plus the
outer scopes' (the names a body reads from outside).
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import AttributeProto

from npu_gate.graph import facts as graph_facts
from npu_gate.graph.facts import NodeFacts, TensorInfo
from npu_gate.graph.fold import foldable


@dataclass
class ScopedNode:
    path: str  # unique display name: <parent path>/<attribute>/<node name>
    scope: str  # <parent path>/<attribute>
    root: int  # index of the top-level node that holds it
    node: NodeFacts
    tensors: dict[str, TensorInfo]  # this scope's tensors over the outer scopes'
    constants: frozenset[str]  # constants visible in this scope
    folded: bool  # a constant the compiler evaluates ahead of time (placement's rule)
    # The body's own graph inputs and outputs (shared by the nodes of one scope).
    scope_inputs: tuple[str, ...] = ()
    scope_outputs: tuple[str, ...] = ()


def collect_subgraph_nodes(
    model: onnx.ModelProto, facts: graph_facts.GraphFacts, constants: set[str]
) -> list[ScopedNode]:
    """Every node inside every subgraph of the (shape-inferred) model, depth first."""
    out: list[ScopedNode] = []
    protos = model.graph.node
    outer_constants = frozenset(constants)
    for node in facts.nodes:
        if node.subgraph_nodes:  # counted by graph.collect: most nodes have no body to walk
            _walk(protos[node.index], node.name, node.index, facts.tensors, outer_constants,
                  facts.opsets, out)
    return out


def _walk(
    proto: onnx.NodeProto,
    parent: str,
    root: int,
    outer: dict[str, TensorInfo],
    outer_constants: frozenset[str],
    opsets: dict[str, int],
    out: list[ScopedNode],
) -> None:
    for attr in proto.attribute:
        for k, sub in enumerate(graph_facts.attr_graphs(attr)):
            scope = f"{parent}/{attr.name}" + (
                f"[{k}]" if attr.type == AttributeProto.GRAPHS else ""
            )
            tensors = graph_facts.scope_tensors(sub, outer)
            constants = set(outer_constants) | {i.name for i in sub.initializer}
            nodes = graph_facts.subgraph_nodes(sub, opsets)
            folded: list[bool] = []
            for node, sub_proto in zip(nodes, sub.node, strict=True):
                graph_facts.fill_implied_attributes(node, tensors, opsets.get("", opsets.get("ai.onnx", 0)))
                if node.op_type == "Constant" and node.domain == "":
                    value = graph_facts.constant_value_info(sub_proto)
                    if value is not None and node.outputs and node.outputs[0] not in tensors:
                        tensors[node.outputs[0]] = TensorInfo(node.outputs[0], value[0], value[1])
                # with the tensors: Shape/Size of a static tensor folds here as in the shape chains
                folded.append(foldable(node, constants, tensors))
                if folded[-1]:
                    constants.update(n for n in node.outputs if n)
            frozen = frozenset(constants)
            inputs = tuple(v.name for v in sub.input)
            outputs = tuple(v.name for v in sub.output)
            for node, sub_proto, is_folded in zip(nodes, sub.node, folded, strict=True):
                path = f"{scope}/{node.name}"
                out.append(ScopedNode(path, scope, root, node, tensors, frozen, is_folded, inputs, outputs))
                _walk(sub_proto, path, root, tensors, frozen, opsets, out)
