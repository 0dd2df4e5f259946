"""Graphs cut out of a model: a sub-model of some nodes, and the folded model a compiler sees.

``submodel`` keeps chosen nodes with every producer cut (the tensors they read become graph
inputs carrying their inferred types; initializers they read are kept). ``folded_model``
replaces folded nodes by initializers holding their values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from onnx import ModelProto, TypeProto, ValueInfoProto, helper

from npu_gate.errors import one_line
from npu_gate.graph.facts import node_reads


def _types(model: ModelProto) -> dict[str, TypeProto]:
    out: dict[str, TypeProto] = {}
    for value in (*model.graph.value_info, *model.graph.output, *model.graph.input):
        if value.type.WhichOneof("value") is not None:
            out[value.name] = value.type
    return out


def _value(name: str, types: dict[str, TypeProto]) -> ValueInfoProto:
    value = ValueInfoProto(name=name)
    if name in types:
        value.type.CopyFrom(types[name])
    return value


def submodel(
    model: ModelProto,
    keep: Iterable[int],
    outputs: list[str] | None = None,
    *,
    name: str = "minimal",
) -> ModelProto:
    """The nodes ``keep`` (indices into ``model.graph.node``) as a model of their own.

    Tensors they read but do not produce become graph inputs (typed from ``model``'s
    inferred value_info); the initializers they read are kept. Outputs default to the
    produced tensors nothing kept reads, plus the original graph outputs among them.
    """
    graph = model.graph
    kept = sorted(set(keep))
    nodes = [graph.node[i] for i in kept]
    types = _types(model)
    initializers = {t.name: t for t in graph.initializer}
    produced = [o for n in nodes for o in n.output if o]
    produced_set = set(produced)
    reads: list[str] = []
    for node in nodes:
        reads.extend(node_reads(node))
    reads = list(dict.fromkeys(reads))
    cut = [n for n in reads if n not in produced_set and n not in initializers]
    used_inits = [initializers[n] for n in reads if n in initializers and n not in produced_set]
    if outputs is None:
        read_set = set(reads)
        graph_outputs = {o.name for o in graph.output}
        outputs = [o for o in produced if o not in read_set or o in graph_outputs]
    inputs = [_value(n, types) for n in cut]
    if model.ir_version < 4:  # IR 3 lists every initializer as a graph input too
        inputs += [_value(t.name, types) for t in used_inits]
    new_graph = helper.make_graph(
        nodes, name, inputs, [_value(n, types) for n in outputs], initializer=used_inits
    )
    out = helper.make_model(new_graph, opset_imports=list(model.opset_import))
    out.ir_version = model.ir_version
    out.producer_name = "npu-gate"
    out.functions.extend(model.functions)
    return out


def folded_model(model: ModelProto, folded: set[int]) -> tuple[ModelProto, str]:
    """What the compiler would see: folded nodes replaced by initializers holding their
    values (computed with onnx's reference evaluator), shape-inferred value_info kept.
    If evaluation fails, the folded nodes stay in the graph and the note says why."""
    graph = model.graph
    if not folded:
        return model, "no nodes folded"
    rest = [i for i in range(len(graph.node)) if i not in folded]
    needed_by_rest = {n for i in rest for n in node_reads(graph.node[i])}
    needed_by_rest |= {o.name for o in graph.output}
    made = [o for i in sorted(folded) for o in graph.node[i].output if o]
    needed = [o for o in made if o in needed_by_rest]
    try:
        from onnx import numpy_helper
        from onnx.reference import ReferenceEvaluator

        # Shape/Size of a runtime tensor fold because its shape is static: their values come
        # from the inferred types and feed the evaluation (the tensor itself is never computed).
        known = _shape_values(model, folded)
        evaluated = {i for i in folded if not set(graph.node[i].output) & known.keys()}
        to_evaluate = [n for n in needed if n not in known]
        values: dict[str, Any] = {n: known[n] for n in needed if n in known}
        if to_evaluate:
            sub = submodel(model, evaluated, to_evaluate, name="folding")
            feeds = {v.name: known[v.name] for v in sub.graph.input if v.name in known}
            values.update(zip(to_evaluate, ReferenceEvaluator(sub).run(None, feeds), strict=True))
        computed = [numpy_helper.from_array(np.asarray(values[n]), name=n) for n in needed]
    except Exception as exc:
        return model, f"folded nodes kept: the reference evaluator failed ({one_line(exc)})"
    out = ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(graph.node[i] for i in rest)
    reads = needed_by_rest
    inits = [t for t in graph.initializer if t.name in reads] + computed
    del out.graph.initializer[:]
    out.graph.initializer.extend(inits)
    if out.ir_version < 4:
        init_names = {t.name for t in graph.initializer}
        keep_inputs = [v for v in graph.input if v.name not in init_names or v.name in reads]
        del out.graph.input[:]
        out.graph.input.extend(keep_inputs)
        out.graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                               for t in computed)
    gone = set(made) | {t.name for t in inits}
    kept_info = [v for v in graph.value_info if v.name not in gone]
    del out.graph.value_info[:]
    out.graph.value_info.extend(kept_info)
    return out, f"{len(folded)} folded nodes replaced by {len(computed)} initializers"


def _shape_values(model: ModelProto, folded: set[int]) -> dict[str, Any]:
    """The values of folded Shape/Size nodes that read a tensor no folded node makes (a
    runtime tensor whose shape is static), from its inferred type."""
    graph = model.graph
    made = {o for i in folded for o in graph.node[i].output}
    types = _types(model)
    out: dict[str, Any] = {}
    for i in sorted(folded):
        node = graph.node[i]
        if node.op_type not in ("Shape", "Size") or node.domain not in ("", "ai.onnx") or node.input[0] in made:
            continue
        type_proto = types.get(node.input[0])
        if type_proto is None or not type_proto.tensor_type.HasField("shape"):
            continue  # rank unknown
        dims: list[int | None] = [int(d.dim_value) if d.HasField("dim_value") else None
                                  for d in type_proto.tensor_type.shape.dim]
        if node.op_type == "Size":
            static = [d for d in dims if d is not None]
            if len(static) == len(dims):
                out[node.output[0]] = np.array(math.prod(static), dtype=np.int64)
            continue
        attrs = {a.name: a.i for a in node.attribute}
        start, end = attrs.get("start", 0), attrs.get("end", len(dims))
        piece = dims[slice(start, end)]  # negative and out-of-range bounds clamp as Shape's do
        if None not in piece:
            out[node.output[0]] = np.array(piece, dtype=np.int64)
    return out
