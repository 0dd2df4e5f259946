"""Smallest ONNX models that still show a failure, and the folded model a compiler sees.

A minimal model is one offending node with every producer cut: the tensors it reads
become graph inputs carrying their inferred shapes and dtypes, while initializers and
the constant (folded) nodes feeding it are kept, so constant-ness and weight shapes
survive. Each one is re-analysed and marked verified when the same finding (rule, op
type, constraint id) appears again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, TypeProto, ValueInfoProto, helper
from onnx.external_data_helper import load_external_data_for_tensor

from npu_gate.graph.facts import GraphFacts, outer_scope_names
from npu_gate.graph.model_file import external_tensors
from npu_gate.result.types import Finding
from npu_gate.target.profile import Profile

MAX_MODELS = 50  # per run: a bundle stays small even when every node fails
# profile-limit: a node's global limit (limit-dtypes, ...); the opset limit names no node
_BLAMED = ("unsupported-op", "op-constraint", "profile-limit", "dynamic-shape")
_CHECKER_NODE = re.compile(r"Name: (\S*) OpType: (\S+)")


# ---------------------------------------------------------------- sub-models


def _reads(node: onnx.NodeProto) -> list[str]:
    """Every tensor a node reads, including outer-scope names its subgraphs use."""
    names = [n for n in node.input if n]
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for g in graphs:
            names.extend(outer_scope_names(g))
    return list(dict.fromkeys(names))


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
        reads.extend(_reads(node))
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


# ---------------------------------------------------------------- folded model


def folded_model(model: ModelProto, folded: set[int]) -> tuple[ModelProto, str]:
    """What the compiler would see: folded nodes replaced by initializers holding their
    values (computed with onnx's reference evaluator), shape-inferred value_info kept.
    If evaluation fails, the folded nodes stay in the graph and the note says why."""
    graph = model.graph
    if not folded:
        return model, "no nodes folded"
    rest = [i for i in range(len(graph.node)) if i not in folded]
    needed_by_rest = {n for i in rest for n in _reads(graph.node[i])}
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
        why = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return model, f"folded nodes kept: the reference evaluator failed ({why})"
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


# ---------------------------------------------------------------- minimal models


@dataclass
class Failure:
    """One distinct failure: the finding that names it and the node it is blamed on."""

    rule: str
    op_type: str | None
    constraint: str | None
    node: int  # index into the model's nodes
    node_name: str
    occurrences: int = 1  # findings (or nodes of a dynamic chain) sharing this failure

    def label(self) -> str:
        parts = [self.rule, self.op_type or self.node_name]
        if self.constraint:
            parts.append(self.constraint)
        return "-".join(parts)


def distinct_failures(
    findings: list[Finding], facts: GraphFacts, model: ModelProto
) -> list[Failure]:
    """Each unsupported op type, each (op type, constraint or limit id), each dynamic-shape chain
    and each checker error naming a node: one Failure each, on its first node."""
    index_of = {n.name: n.index for n in facts.nodes}
    failures: dict[tuple[str, str | None, str | None], Failure] = {}
    dynamic: list[int] = []
    for f in findings:
        if f.rule in _BLAMED and f.node in index_of:
            i = index_of[f.node]
            if f.rule == "dynamic-shape":
                dynamic.append(i)
                continue
            key = (f.rule, f.op_type, f.constraint)
            if key in failures:
                failures[key].occurrences += 1
            else:
                failures[key] = Failure(f.rule, f.op_type, f.constraint, i, f.node or "")
        elif f.rule == "onnx-checker":
            # The full check's finding names its node (its message has no "Name: ... OpType:")
            blamed = index_of[f.node] if f.node in index_of else _checker_node(f.message, model)
            if blamed is not None:
                node = facts.nodes[blamed]
                key = (f.rule, node.name, None)
                failures.setdefault(key, Failure(f.rule, node.key, None, blamed, node.name))
    for chain in _chains(dynamic, facts):
        first = facts.nodes[chain[0]]
        key = ("dynamic-shape", first.name, None)
        failures[key] = Failure("dynamic-shape", first.key, None, first.index, first.name,
                                len(chain))
    return sorted(failures.values(), key=lambda x: (x.node, x.rule, x.constraint or ""))


def _checker_node(message: str, model: ModelProto) -> int | None:
    match = _CHECKER_NODE.search(message)
    if match is None:
        return None
    name, op_type = match.groups()
    hits = [i for i, n in enumerate(model.graph.node) if n.name == name and n.op_type == op_type]
    return hits[0] if len(hits) == 1 else None


def _chains(dynamic: list[int], facts: GraphFacts) -> list[list[int]]:
    """Dynamic-shape nodes grouped into chains: connected through the tensors they pass."""
    members = set(dynamic)
    made_by = {o: n.index for n in facts.nodes for o in n.outputs if o}
    parent = {i: i for i in members}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in members:
        node = facts.nodes[i]
        for name in (*node.inputs, *node.implicit_inputs):
            p = made_by.get(name)
            if p in members:
                parent[root(i)] = root(p)
    groups: dict[int, list[int]] = {}
    for i in sorted(members):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values())


def _constant_feeders(index: int, model: ModelProto, folded: set[int]) -> set[int]:
    """The folded nodes a node reads from, transitively (they end at initializers)."""
    made_by = {o: i for i, n in enumerate(model.graph.node) for o in n.output if o}
    keep: set[int] = set()
    todo = [index]
    while todo:
        for name in _reads(model.graph.node[todo.pop()]):
            p = made_by.get(name)
            if p is not None and p in folded and p not in keep:
                keep.add(p)
                todo.append(p)
    return keep


def _same(finding: Finding, failure: Failure) -> bool:
    if finding.rule != failure.rule or finding.constraint != failure.constraint:
        return False
    # checker findings name no op type; the others must name the same one
    return failure.rule == "onnx-checker" or finding.op_type == failure.op_type


def _read_weights(model: ModelProto, folder: Path) -> None:
    """Read the external data of ``model``'s tensors (locations relative to ``folder``) into the model."""
    for tensor in external_tensors(model.graph):
        load_external_data_for_tensor(tensor, str(folder))
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-.")[:80] or "node"


def write_minimal(
    folder: Path,
    model: ModelProto,
    facts: GraphFacts,
    folded: set[int],
    findings: list[Finding],
    profile: Profile,
    base: Path,
) -> tuple[list[dict[str, Any]], int]:
    """Write one minimal model per distinct failure into ``folder`` and re-check each.

    Returns JSON-ready entries (``path`` relative to ``base``, the bundle) and the number
    of distinct failures found (more than the entries when MAX_MODELS cut the list).
    Weights ``model`` left on disk are read from ``base``, which holds the model's external
    data files, so that each minimal model stands alone in ``folder``."""
    from npu_gate.pipeline import inspect_model  # the pipeline imports nothing from here

    failures = distinct_failures(findings, facts, model)
    entries: list[dict[str, Any]] = []
    if failures:
        folder.mkdir(parents=True, exist_ok=True)
    for k, failure in enumerate(failures[:MAX_MODELS], start=1):
        keep = {failure.node} | _constant_feeders(failure.node, model, folded)
        sub = submodel(model, keep, name=f"minimal_{k}")
        _read_weights(sub, base)
        path = folder / f"{k:02d}-{_slug(failure.label())}.onnx"
        path.write_bytes(sub.SerializeToString())
        recheck = inspect_model(path, profile)
        same = [f for f in recheck.findings if _same(f, failure)]
        entry: dict[str, Any] = {
            "rule": failure.rule,
            "op_type": failure.op_type,
            "constraint": failure.constraint,
            "node": failure.node_name,
            "occurrences": failure.occurrences,
            "path": path.relative_to(base).as_posix(),
            "nodes": len(sub.graph.node),
            "verified": bool(same),
        }
        if not same:
            entry["recheck_rules"] = sorted({f.rule for f in recheck.findings})
        entries.append(entry)
    return entries, len(failures)

