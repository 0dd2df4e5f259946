"""Smallest ONNX models that still show a failure.

A minimal model is one offending node with every producer cut: the tensors it reads
become graph inputs carrying their inferred shapes and dtypes, while initializers and
the constant (folded) nodes feeding it are kept, so constant-ness and weight shapes
survive. Each one is re-analysed and marked verified when the same finding (rule, op
type, constraint id) appears again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from onnx import ModelProto
from onnx.external_data_helper import load_external_data_for_tensor

from npu_gate.graph.components import components
from npu_gate.graph.edit import submodel
from npu_gate.graph.facts import GraphFacts, node_reads
from npu_gate.graph.model_file import external_tensors
from npu_gate.profile.spec import Profile
from npu_gate.result.types import Finding
from npu_gate.rules import PLACEMENT_RULES

MAX_MODELS = 50  # per run: a bundle stays small even when every node fails
# The findings a node is blamed for: its placement (a profile limit too: the opset limit
# names no node) and its dynamic output shape.
_BLAMED = PLACEMENT_RULES | {"dynamic-shape"}



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
        elif f.rule == "onnx-checker" and f.node in index_of:  # a checker error naming a node
            node = facts.nodes[index_of[f.node]]
            key = (f.rule, node.name, None)
            failures.setdefault(key, Failure(f.rule, node.key, None, node.index, node.name))
    for chain in _chains(dynamic, facts):
        first = facts.nodes[chain[0]]
        key = ("dynamic-shape", first.name, None)
        failures[key] = Failure("dynamic-shape", first.key, None, first.index, first.name,
                                len(chain))
    return sorted(failures.values(), key=lambda x: (x.node, x.rule, x.constraint or ""))


def _chains(dynamic: list[int], facts: GraphFacts) -> list[list[int]]:
    """Dynamic-shape nodes grouped into chains: connected through the tensors they pass."""
    members = sorted(set(dynamic))
    made_by = {o: n.index for n in facts.nodes for o in n.outputs if o}
    reads = ((i, made_by[name]) for i in members
             for name in (*facts.nodes[i].inputs, *facts.nodes[i].implicit_inputs) if name in made_by)
    return components(members, reads)


def _constant_feeders(index: int, model: ModelProto, folded: set[int]) -> set[int]:
    """The folded nodes a node reads from, transitively (they end at initializers)."""
    made_by = {o: i for i, n in enumerate(model.graph.node) for o in n.output if o}
    keep: set[int] = set()
    todo = [index]
    while todo:
        for name in node_reads(model.graph.node[todo.pop()]):
            p = made_by.get(name)
            if p is not None and p in folded and p not in keep:
                keep.add(p)
                todo.append(p)
    return keep


def _same(finding: Finding, failure: Failure) -> bool:
    if finding.rule != failure.rule or finding.constraint != failure.constraint:
        return False
    # a checker error names its node only when the checker message does; the others must name the same op
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

