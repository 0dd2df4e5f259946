"""Graphs cut out of a model: a sub-model of some nodes, and the folded model a compiler sees.

``submodel`` keeps chosen nodes with every producer cut (the tensors they read become graph
inputs carrying their inferred types; initializers they read are kept). ``folded_model``
replaces folded nodes by initializers holding their values.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from onnx import ModelProto, TypeProto, ValueInfoProto, helper

from npu_gate.errors import one_line
from npu_gate.graph.facts import node_reads
from npu_gate.graph.fold_budget import FoldBudget, FoldSkip, estimate


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


def folded_model(
    model: ModelProto, folded: set[int], budget: FoldBudget | None = None
) -> tuple[ModelProto, str]:
    """What the compiler would see: folded nodes replaced by initializers holding their
    values (computed with onnx's reference evaluator, node by node within ``budget``: see
    ``fold_budget``), shape-inferred value_info kept. A folded node over budget stays in the
    graph (and so do the folded nodes reading it), recorded in ``budget.skips``. If evaluation
    fails, the folded nodes stay in the graph and the note says why."""
    graph = model.graph
    if not folded:
        return model, "no nodes folded"
    budget = budget if budget is not None else FoldBudget()
    try:
        # Shape/Size of a runtime tensor fold because its shape is static: their values come
        # from the inferred types and feed the evaluation (the tensor itself is never computed).
        known = _shape_values(model, folded)
        evaluated = sorted(i for i in folded if not set(graph.node[i].output) & known.keys())
        values = _evaluate(model, evaluated, known, budget)
    except Exception as exc:
        return model, f"folded nodes kept: the reference evaluator failed ({one_line(exc)})"
    from onnx import numpy_helper

    replaced = {i for i in folded if all(o in values for o in graph.node[i].output if o)}
    if not replaced:
        return model, "folded nodes kept: none was computed within the fold budget"
    rest = [i for i in range(len(graph.node)) if i not in replaced]
    needed_by_rest = {n for i in rest for n in node_reads(graph.node[i])}
    needed_by_rest |= {o.name for o in graph.output}
    made = [o for i in sorted(replaced) for o in graph.node[i].output if o]
    needed = [o for o in made if o in needed_by_rest]
    computed = [numpy_helper.from_array(np.asarray(values[n]), name=n) for n in needed]
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
    kept = len(folded) - len(replaced)
    over = f"; {kept} kept: over the fold budget" if kept else ""
    return out, f"{len(replaced)} folded nodes replaced by {len(computed)} initializers{over}"


def _evaluate(model: ModelProto, order: list[int], known: dict[str, Any], budget: FoldBudget) -> dict[str, Any]:
    """The values of the nodes ``order`` (graph order is topological), each node run alone
    after ``fold_budget.estimate`` allowed it on its input values; the wall clock is checked
    between nodes. Nodes over budget, and those reading what they did not make, are left out
    (the first of each chain recorded in ``budget.skips``)."""
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    types = _types(model)
    initializers = {t.name: t for t in graph.initializer}
    values: dict[str, Any] = dict(known)
    missing: dict[str, int] = {}  # output not computed -> the skipped node it goes back to
    roots: dict[int, FoldSkip] = {}
    counts: dict[int, int] = {}
    held = 0
    start = time.monotonic()
    end = budget.end()
    try:
        for i in order:
            node = graph.node[i]
            reads = node_reads(node)
            blocked = next((missing[n] for n in reads if n in missing), None)
            if blocked is not None:
                counts[blocked] = counts.get(blocked, 0) + 1
                missing.update((o, blocked) for o in node.output if o)
                continue
            if time.monotonic() > end:
                left = len(order) - order.index(i)
                spent = round(time.monotonic() - start + budget.spent, 1)
                if budget.deadline is not None and end >= budget.deadline:  # the run's limit came first
                    before = max(round(budget.deadline - start + budget.spent, 1), 0.0)  # folding's share
                    roots[i] = FoldSkip(i, "deadline", spent, before,
                                        "the run reached its time limit (--timeout) while folding; it and "
                                        f"{left - 1} later folded nodes were not computed")
                else:
                    roots[i] = FoldSkip(i, "seconds", spent, budget.seconds, f"the folding evaluation reached its "
                                        f"{budget.seconds:g} s budget; it and {left - 1} later folded nodes were "
                                        "not computed")
                missing.update((o, i) for n in order[order.index(i):] for o in graph.node[n].output if o)
                break
            for name in reads:
                if name not in values and name in initializers:
                    from onnx import numpy_helper

                    values[name] = numpy_helper.to_array(initializers[name])
            args = [values.get(n) if n else None for n in node.input]
            refused = estimate(node, args, budget)
            if refused is None and held > budget.total_elements:
                refused = FoldSkip(i, "total elements", held, budget.total_elements,
                                   f"the folded values computed so far hold {held} elements, above the "
                                   f"budget of {budget.total_elements}")
            if refused is not None:
                roots[i] = FoldSkip(i, refused.limit, refused.actual, refused.allowed, refused.why)
                missing.update((o, i) for o in node.output if o)
                continue
            one = helper.make_graph([node], "fold", [_value(n, types) for n in reads],
                                    [_value(o, types) for o in node.output if o])
            single = helper.make_model(one, opset_imports=list(model.opset_import))
            single.ir_version = model.ir_version
            single.functions.extend(model.functions)
            feeds = {n: values[n] for n in reads}
            outputs = [o for o in node.output if o]
            for name, value in zip(outputs, ReferenceEvaluator(single).run(None, feeds), strict=True):
                values[name] = value
                held += int(getattr(value, "size", 1))
    finally:
        budget.spent += time.monotonic() - start
    for i, skip in roots.items():
        budget.record(FoldSkip(skip.index, skip.limit, skip.actual, skip.allowed, skip.why, counts.get(i, 0)))
    return values


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
