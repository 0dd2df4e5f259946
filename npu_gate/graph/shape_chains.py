"""Shape-computation chains: subgraphs computing a shape-like input from Shape/Size.

``x.view(x.size(0), -1)`` exported with a dynamic batch leaves
Shape → Gather → Unsqueeze → Concat → Reshape in the graph. Such a chain *folds* when
every node in it is constant under the contract's input shapes (see
``placement.fold_nodes``); otherwise it *stays*, and the NPU compiler receives shape
arithmetic it must run at inference time. Each chain names the dims that keep it, and
the graph input dims those come from.

Tensors are classified structurally (independent of the contract): ``const`` (weights,
Constant outputs, and what only reads consts), ``shape`` (Shape/Size outputs and what
only reads consts and shapes) and runtime data. A chain is the set of const/shape
nodes behind a consumer's shape-like input of kind ``shape``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onnx import GraphProto, ModelProto, TypeProto

from npu_gate.graph import facts as graph_facts
from npu_gate.graph import shape_values, symbolic
from npu_gate.graph.facts import GraphFacts, NodeFacts, TensorInfo
from npu_gate.graph.fold import fold_nodes, shape_extent
from npu_gate.graph.symbols import origin_of

# op → ((first opset, shape-like input positions), ...), newest rule last.
_SLOTS: dict[str, tuple[tuple[int, tuple[int, ...]], ...]] = {
    "Reshape": ((5, (1,)),),
    "Expand": ((8, (1,)),),
    "Resize": ((10, (1,)), (11, (2, 3))),
    "Upsample": ((9, (1,)),),
    "Slice": ((10, (1, 2, 3, 4)),),
    "Pad": ((11, (1,)), (18, (1, 3))),
    "TopK": ((10, (1,)),),
    "Unsqueeze": ((13, (1,)),),
    "Squeeze": ((13, (1,)),),
    "Split": ((13, (1,)),),
    "ReduceSum": ((13, (1,)),),
    "ConstantOfShape": ((9, (0,)),),
    "Tile": ((6, (1,)),),
    "Range": ((11, (0, 1, 2)),),
    "OneHot": ((9, (1,)),),
    "CumSum": ((11, (1,)),),
    "Trilu": ((14, (1,)),),
    "CenterCropPad": ((18, (1,)),),
    "Col2Im": ((18, (1, 2)),),
    "AffineGrid": ((20, (1,)),),
}
for _reduce in (
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
):
    _SLOTS[_reduce] = ((18, (1,)),)

_SOURCES = ("Shape", "Size")


def shape_slots(node: NodeFacts, opset: int) -> tuple[int, ...]:
    """Input positions of ``node`` that are shape-like under ``opset``."""
    if node.domain != "":
        return ()
    slots: tuple[int, ...] = ()
    for first, positions in _SLOTS.get(node.op_type, ()):
        if opset >= first:
            slots = positions
    return slots


@dataclass
class BlockingDim:
    """A dim a Shape/Size node reads that is not static."""

    node: str  # the Shape/Size node
    tensor: str  # the tensor whose shape it reads
    dim: int | None  # None: the tensor's rank is unknown
    value: str | None  # the symbolic name, None when unknown
    origin: list[str]  # graph input dims it comes from, e.g. "x[0]"; empty: not from an input

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ShapeChain:
    graph: str  # "" for the main graph, "loop0/body" for a subgraph
    consumer: str
    consumer_op: str
    slots: list[str]  # the consumer's formal input names the chain feeds, e.g. "shape"
    nodes: list[str]  # the chain's nodes, in model order (users' names)
    sources: list[str]  # runtime tensors whose shape the chain reads
    folds: bool
    blocking: list[BlockingDim] = field(default_factory=list)
    fixed_by_contract: list[str] = field(default_factory=list)  # input dims that make it fold
    # Stays, yet only static dims reach the consumer (Shape(x)[2:] with x[0] dynamic).
    static_value: bool = False

    @property
    def key(self) -> str:
        return f"{self.graph}/{self.consumer}" if self.graph else self.consumer

    @property
    def status(self) -> str:
        return "folds" if self.folds else "stays"

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "consumer": self.consumer,
            "consumer_op": self.consumer_op,
            "slots": self.slots,
            "nodes": self.nodes,
            "sources": self.sources,
            "status": self.status,
            "blocking": [b.to_dict() for b in self.blocking],
            "fixed_by_contract": self.fixed_by_contract,
            "static_value": self.static_value,
        }


def find_chains(
    model: ModelProto,
    facts: GraphFacts,
    folded: set[int],
    constants: set[str],
    symbols: dict[str, list[str]],
) -> list[ShapeChain]:
    """Every shape chain in the main graph and (recursively) in subgraphs.

    ``model`` is the shape-inferred model ``facts`` were collected from (same node order).
    """
    consts = shape_values.initializer_values(model.graph, facts.initializers)
    chains = _chains_in(
        facts.nodes, facts.tensors, folded, facts.initializers, "", facts.opset, symbols, consts
    )
    protos = model.graph.node
    for node in facts.nodes:
        if not node.subgraph_nodes:  # counted by graph.collect: no body, no subgraph chains
            continue
        for attr, sub in graph_facts.subgraphs(protos[node.index]):
            chains.extend(
                _subgraph_chains(
                    sub,
                    f"{node.name}/{attr}",
                    facts.tensors,
                    constants,
                    facts.opsets,
                    symbols,
                    consts,
                )
            )
    return chains


def _subgraph_chains(
    graph: GraphProto,
    label: str,
    outer_tensors: dict[str, TensorInfo],
    outer_constants: set[str],
    opsets: dict[str, int],
    symbols: dict[str, list[str]],
    outer_values: dict[str, shape_values.Value],
) -> list[ShapeChain]:
    nodes = graph_facts.subgraph_nodes(graph, opsets)
    inputs = {v.name for v in graph.input}
    values = {k: v for k, v in outer_values.items() if k not in inputs}
    values.update(shape_values.initializer_values(graph))
    tensors = graph_facts.scope_tensors(graph, outer_tensors)
    weights = {i.name for i in graph.initializer}
    # Subgraph inputs (loop counters, carried values) are runtime values, even if an outer
    # constant has the same name.
    constants = (set(outer_constants) - {v.name for v in graph.input}) | weights
    order = graph_facts.topological_order(nodes, graph_facts.node_dependencies(nodes))
    folded, inner_constants = fold_nodes(nodes, tensors, order, constants)
    opset = opsets.get("", opsets.get("ai.onnx", 0))
    chains = _chains_in(nodes, tensors, folded, constants, label, opset, symbols, values)
    for node, proto in zip(nodes, graph.node, strict=True):
        for attr, sub in graph_facts.subgraphs(proto):
            chains.extend(
                _subgraph_chains(
                    sub,
                    f"{label}/{node.name}/{attr}",
                    tensors,
                    inner_constants,
                    opsets,
                    symbols,
                    values,
                )
            )
    return chains


def _chains_in(
    nodes: list[NodeFacts],
    tensors: dict[str, TensorInfo],
    folded: set[int],
    weights: set[str],
    label: str,
    opset: int,
    symbols: dict[str, list[str]],
    values: dict[str, shape_values.Value],
) -> list[ShapeChain]:
    if not any(n.op_type in _SOURCES and n.domain == "" for n in nodes):
        return []  # no Shape/Size: no chain can start (and large graphs skip the walk)
    order = graph_facts.topological_order(nodes, graph_facts.node_dependencies(nodes))
    kind = _classify(nodes, order, weights)
    made_by = graph_facts.producers(nodes)
    evaluator = shape_values.Evaluator(nodes, made_by, tensors, values)
    chains = []
    for node in nodes:
        positions = [
            p
            for p in shape_slots(node, opset)
            if p < len(node.inputs) and kind.get(node.inputs[p]) == "shape"
        ]
        if not positions:
            continue
        members = _walk(nodes, made_by, kind, [node.inputs[p] for p in positions])
        ordered = sorted(members)
        sources: list[str] = []
        blocking: list[BlockingDim] = []
        for i in ordered:
            member = nodes[i]
            if member.op_type not in _SOURCES or member.domain != "":
                continue
            source = member.inputs[0]
            if source not in sources:
                sources.append(source)
            if i not in folded:
                blocking.extend(_blocking_dims(member, tensors.get(source), symbols))
        folds = all(i in folded for i in ordered)
        static_value = False
        if not folds:
            # Precisely the dims that reach the consumer, when the values can be followed.
            deps = shape_values.dependencies([evaluator.value(node.inputs[p]) for p in positions])
            if deps:
                blocking = [
                    BlockingDim(nodes[i].name, t, d, v, origin_of(v, symbols))
                    for i, t, d, v in deps
                ]
            static_value = deps == []
        chains.append(
            ShapeChain(
                graph=label,
                consumer=node.name,
                consumer_op=node.key,
                slots=[_slot_name(node, p, opset) for p in positions],
                nodes=[nodes[i].name for i in ordered],
                sources=sources,
                folds=folds,
                static_value=static_value,
                blocking=blocking,
            )
        )
    return chains


def _classify(nodes: list[NodeFacts], order: list[int], weights: set[str]) -> dict[str, str]:
    """Tensor name → "const" or "shape" (absent: runtime data)."""
    kind = dict.fromkeys(weights, "const")
    for i in order:
        node = nodes[i]
        reads = [n for n in (*node.inputs, *node.implicit_inputs) if n]
        if node.domain == "" and node.op_type == "Constant":
            k = "const"
        elif node.domain == "" and node.op_type in _SOURCES:
            k = "shape"
        elif reads and all(n in kind for n in reads):
            k = "shape" if any(kind[n] == "shape" for n in reads) else "const"
        else:
            continue
        for name in node.outputs:
            if name:
                kind[name] = k
    return kind


def _walk(
    nodes: list[NodeFacts], made_by: dict[str, int], kind: dict[str, str], start: list[str]
) -> set[int]:
    """The const/shape nodes behind ``start`` (Shape/Size inputs are not followed)."""
    members: set[int] = set()
    stack = list(start)
    while stack:
        name = stack.pop()
        i = made_by.get(name)
        if i is None or i in members or name not in kind:
            continue
        members.add(i)
        node = nodes[i]
        if node.op_type in _SOURCES:
            continue
        stack.extend(n for n in (*node.inputs, *node.implicit_inputs) if n)
    return members


def _blocking_dims(
    node: NodeFacts, info: TensorInfo | None, symbols: dict[str, list[str]]
) -> list[BlockingDim]:
    tensor = node.inputs[0]
    if info is None or info.shape is None:
        return [BlockingDim(node.name, tensor, None, None, [])]
    out = []
    for d in shape_extent(node, info.shape):
        dim = info.shape[d]
        if not isinstance(dim, int):
            out.append(BlockingDim(node.name, tensor, d, dim, origin_of(dim, symbols)))
    return out


def _slot_name(node: NodeFacts, position: int, opset: int) -> str:
    schema = graph_facts.op_schema(node.op_type, node.domain, opset)
    if schema is not None and position < len(schema.inputs):
        return str(schema.inputs[position].name)
    return f"input {position}"


def mark_fixed_by_contract(chains: list[ShapeChain], model_view: list[ShapeChain]) -> None:
    """Chains that fold under the contract but stay under the model's own input shapes
    fold because the contract fixes dims: record which (from the model-view chain)."""
    stays = {c.key: c for c in model_view if not c.folds}
    for chain in chains:
        other = stays.get(chain.key)
        if chain.folds and other is not None:
            dims: list[str] = []
            for b in other.blocking:
                for where in b.origin or [f"{b.tensor}[{b.dim}]"]:
                    if where not in dims:
                        dims.append(where)
            chain.fixed_by_contract = dims


def describe(chain: ShapeChain) -> str:
    """One line for a finding: what stays and because of which dims."""
    where = f" in {chain.graph}" if chain.graph else ""
    slots = ", ".join(chain.slots)
    reasons = []
    for b in chain.blocking:
        if b.dim is None:
            reasons.append(f"{b.node} reads the shape of {b.tensor}, whose rank is unknown")
            continue
        dim = f"{b.tensor}[{b.dim}]"
        value = f" = {b.value}" if b.value is not None else " (unknown)"
        if b.origin and b.origin != [dim]:
            src = f", from input dim {', '.join(b.origin)}"
        elif b.origin:
            src = " (a symbolic input dim)"
        else:
            src = ", not an input dim (data-dependent or unknown to shape inference)"
        reasons.append(f"{b.node} reads {dim}{value}{src}")
    partial = ""
    if chain.static_value:
        partial = (
            " (only static dims reach the consumer; folding it needs a folder that "
            "evaluates partially known shapes)"
        )
    return (
        f"shape computation for {chain.consumer} ({chain.consumer_op} {slots}){where} stays "
        f"in the graph: {'; '.join(reasons)}{partial}; nodes: {', '.join(chain.nodes)}"
    )


def model_view_chains(
    model: ModelProto,
    model_types: dict[str, TypeProto],
    as_inputs: frozenset[str],
    symbols: dict[str, list[str]],
) -> list[ShapeChain]:
    """Shape chains under the model's own input shapes: ``model_types`` (the inputs' types
    before the contract's shapes were applied) are put back, then inference and folding
    run again. ``mark_fixed_by_contract`` compares the result with the contract's view."""
    from npu_gate.graph.fold import fold

    for value in model.graph.input:
        if value.name in model_types:
            value.type.CopyFrom(model_types[value.name])
    inferred, _, error = graph_facts.infer_shapes(model)
    facts = graph_facts.collect(inferred, [], error, as_inputs)
    symbolic.refine_stage(inferred, facts, symbols)
    order = graph_facts.topological_order(facts.nodes, graph_facts.node_dependencies(facts.nodes))
    folded, constants = fold(facts, order, facts.initializers)
    return find_chains(inferred, facts, folded, constants, symbols)
