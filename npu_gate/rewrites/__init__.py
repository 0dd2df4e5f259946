"""The rewrite catalog: named ONNX graph rewrites, applied only when asked, never silently.

``REWRITES`` is the registry (names are interface: contracts name them). ``apply`` runs
rewrites on a copy of a model and returns what it replaced, so every change is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx

from npu_gate.graph.facts import node_reads
from npu_gate.rewrites import gelu, hardsigmoid, hardswish, layernorm, pad
from npu_gate.rewrites.base import GraphView, Match, Rewrite

REWRITES: dict[str, Rewrite] = {
    r.name: r
    for r in (
        hardswish.DECOMPOSE,
        hardswish.FUSE,
        hardsigmoid.DECOMPOSE,
        gelu.GELU_TANH,
        layernorm.DECOMPOSE,
        pad.REFLECT,
    )
}


@dataclass
class Applied:
    """One replaced region: which nodes went, which came, and the tensor compared layer-wise."""

    rewrite: str
    exact: bool
    anchor: str
    output: str  # the region's output tensor: same name before and after
    replaced: list[tuple[str, str]] = field(default_factory=list)  # (node name, op type)
    emitted: list[tuple[str, str]] = field(default_factory=list)
    replaced_tensors: list[str] = field(default_factory=list)  # first output of each replaced node
    emitted_tensors: list[str] = field(default_factory=list)
    # What was emitted, to run the region alone (verify.py); never reported.
    nodes: list[onnx.NodeProto] = field(default_factory=list, repr=False)
    initializers: list[onnx.TensorProto] = field(default_factory=list, repr=False)


def find(model: onnx.ModelProto, rewrite: Rewrite) -> list[Match]:
    return rewrite.find(GraphView(model))


def apply(model: onnx.ModelProto, rewrites: list[Rewrite]) -> tuple[onnx.ModelProto, list[Applied]]:
    """Apply each rewrite to every region it matches, in order, on a copy of ``model``."""
    current = model
    applied: list[Applied] = []
    for rewrite in rewrites:
        view = GraphView(current)
        matches = disjoint(rewrite.find(view))
        if matches:
            current, done = _replace(view, rewrite, matches)
            applied.extend(done)
    return (current if applied else copy_model(model)), applied


def apply_matches(
    model: onnx.ModelProto, rewrite: Rewrite, matches: list[Match]
) -> tuple[onnx.ModelProto, list[Applied]]:
    """Apply some disjoint matches (found on ``model``) of ``rewrite``."""
    return _replace(GraphView(model), rewrite, matches)


def disjoint(matches: list[Match]) -> list[Match]:
    taken: set[int] = set()
    out = []
    for m in matches:
        if taken.isdisjoint(m.nodes):
            out.append(m)
            taken.update(m.nodes)
    return out


def copy_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` to change (a protobuf copy is deep): the model given stays as it is."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def _replace(view: GraphView, rewrite: Rewrite, matches: list[Match]) -> tuple[onnx.ModelProto, list[Applied]]:
    # Emitted nodes go where the region's last node was: everything they read is produced
    # before it and everything reading the region output comes after it.
    insert_at: dict[int, list[onnx.NodeProto]] = {}
    removed: set[int] = set()
    initializers: list[onnx.TensorProto] = []
    applied = []
    taken = {n.name for n in view.nodes} | set(view.producer) | set(view.initializers) | {
        i.name for i in view.graph.input}
    for m in matches:
        emitted = rewrite.build(view, m)
        clash = [n.name for n in emitted.nodes if n.name in taken] + [
            t.name for t in emitted.initializers if t.name in taken]
        if clash:
            raise ValueError(f"rewrite {rewrite.name}: emitted name {clash[0]!r} already exists in the model")
        insert_at[max(m.nodes)] = emitted.nodes
        removed.update(m.nodes)
        initializers.extend(emitted.initializers)
        applied.append(Applied(
            rewrite.name, rewrite.exact, m.anchor, m.output,
            [(view.node_name(i), view.nodes[i].op_type) for i in sorted(m.nodes)],
            [(n.name, n.op_type) for n in emitted.nodes],
            [view.nodes[i].output[0] for i in sorted(m.nodes)],
            [n.output[0] for n in emitted.nodes],
            list(emitted.nodes),
            list(emitted.initializers),
        ))
    model = copy_model(view.model)
    nodes = []
    for i, node in enumerate(view.nodes):
        if i in insert_at:
            nodes.extend(insert_at[i])
        elif i not in removed:
            nodes.append(node)
    nodes, dead = _drop_dead_constants(view, nodes, removed)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    kept = [t for t in model.graph.initializer if t.name not in dead]
    del model.graph.initializer[:]
    model.graph.initializer.extend([*kept, *initializers])
    # Inferred value_info of removed intermediates would be stale: drop what no node produces now.
    produced = {o for n in nodes for o in n.output}
    keep = [v for v in model.graph.value_info if v.name in produced]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)
    return model, applied


def _drop_dead_constants(
    view: GraphView, nodes: list[onnx.NodeProto], removed: set[int]
) -> tuple[list[onnx.NodeProto], set[str]]:
    """Constants only the removed nodes read go with them: initializers, Constant nodes and
    chains computed from constants (e.g. TorchScript's Pad pads), repeated to a fixpoint."""
    fed = {name for i in removed for name in view.nodes[i].input if name}
    kept = nodes
    while True:
        read = {name for n in kept for name in node_reads(n)} | view.outputs | {i.name for i in view.graph.input}
        dead = {name for name in fed if name not in read}
        dropping = [n for n in kept if n.output and all(o in dead or not o for o in n.output)
                    and all(view.is_constant(o) for o in n.output if o)]
        if not dropping:
            break
        fed |= {name for n in dropping for name in n.input if name}
        drop_ids = {id(n) for n in dropping}
        kept = [n for n in kept if id(n) not in drop_ids]
    read = {name for n in kept for name in node_reads(n)} | view.outputs | {i.name for i in view.graph.input}
    return kept, {name for name in fed if name not in read and name in view.initializers}


def rewrites_markdown() -> str:
    """docs/rewrites.md, generated from the registry (a test keeps the file up to date)."""
    lines = [
        "# Rewrites",
        "",
        "Generated by `npu-gate rewrites --format markdown`; do not edit by hand.",
        "A rewrite runs only when a contract names it (`rewrites`) or as a verified suggestion;",
        "emitted nodes are named `<original node>/<tag>/<Op>` so reports map back.",
        "",
        "| name | exact | matches | emits |",
        "| --- | --- | --- | --- |",
    ]
    for r in REWRITES.values():
        lines.append(f"| [`{r.name}`](#{r.name}) | {'exact' if r.exact else 'approximate'} | {r.matches} | "
                     f"{r.emits} |")
    for r in REWRITES.values():
        lines += ["", f"## {r.name}", "", f"{'Exact' if r.exact else 'Approximate'}.", "",
                  f"Matches: {r.matches}.", "", f"Emits: {r.emits}.", "", r.doc]
    return "\n".join(lines) + "\n"
