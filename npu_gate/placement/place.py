"""Per-node placement against a target profile: npu, cpu or folded, with the reasons.

An op the profile ``lowers`` into another (variadic Sum into Adds) is placed with that
op's entry. The compiler's clean-up (``eliminated``) is a later pass (``eliminate.py``).
A node on the NPU that a profile ``splits`` entry matches (its ``where`` holds, one of its
``constraints`` fails on known values) stays ``npu`` with ``Placement.split`` set: the
pieces the compiler runs it as, which partitions are counted over (``partitions.py``). An
entry with a ``context`` also needs its conditions on the node's producers and readers
(``neighbours.py``), checked in the main graph only.

Which nodes fold is the graph layer's rule (``npu_gate.graph.fold``); here a node that
does not fold is put on the NPU when the profile has its op and every constraint holds,
on the CPU otherwise, with every failed constraint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from npu_gate.graph.facts import GraphFacts, NodeFacts, TensorInfo
from npu_gate.placement.neighbours import Neighbours, context_holds
from npu_gate.placement.qdq import DEQUANTIZE, adapter_unit, integer_tensors, node_units, standalone_entry
from npu_gate.profile.constraints import Failure, ValueOf, evaluate, unchecked
from npu_gate.profile.limits import node_failures
from npu_gate.profile.spec import Profile
from npu_gate.result.types import CPU, FOLDED, NPU

if TYPE_CHECKING:
    from npu_gate.graph.subgraphs import ScopedNode

@dataclass
class Placement:
    device: str
    reasons: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    op_supported: bool = True  # False: the op is not in the profile at all
    limit_failures: list[Failure] = field(default_factory=list)  # the profile's global limits
    unchecked: list[Failure] = field(default_factory=list)  # stated conditions not checked (npu)
    fused: dict[str, Any] | None = None  # {pattern, op, nodes}: matched by a profile pattern (patterns.py)
    # QDQ graphs (placement/qdq.py): "unit" for a Q/DQ node placed with its op, "input adapter" /
    # "output adapter" for a graph input's Q and a graph output's DQ; None: a node of its own.
    qdq: str | None = None
    # A unit's op that the profile runs in float but not in the unit's integer dtypes (those dtypes).
    quantized: str | None = None
    # A profile ``splits`` entry matched: {id, pieces: [{op, device}], reasons, evidence, fix?, doc?}
    split: dict[str, Any] | None = None
    # A Q/DQ node in no QDQ unit placed by the profile's ``standalone_qdq`` entry: {id, why, message, evidence}
    standalone: dict[str, Any] | None = None


def place_in_scope(
    node: NodeFacts,
    tensors: Mapping[str, TensorInfo],
    profile: Profile,
    constants: set[str] | frozenset[str],
    layouts: Mapping[str, str] | None = None,
    values: ValueOf | None = None,
    around: Neighbours | None = None,
) -> Placement:
    """Place one node given the tensors of its scope (the top-level graph or a subgraph) and,
    for value constraints, the values of its constant tensors (None: not known); ``around``, the
    main graph's producers and readers, for ``splits`` entries with a context (None: a body node)."""
    key = node.key
    spec = profile.ops.get(key)
    lowered = lowered_to(profile, key) if spec is None else None
    if lowered is not None:  # the compiler rewrites the op into another before placing it
        spec = profile.ops.get(lowered)
    if spec is None:
        return Placement(CPU, [f"op {key} not in profile {profile.name}"], op_supported=False)
    failures = evaluate(spec.get("constraints", []), node, tensors, constants, layouts, values)
    limits = node_failures(profile.limits, node, tensors, constants)
    if failures or limits:
        reasons = [f.message for f in (*failures, *limits)]
        return Placement(CPU, reasons, failures, limit_failures=limits)
    placed = Placement(NPU, unchecked=unchecked(spec.get("constraints", []), node, tensors))
    placed.split = split_of(profile, node, tensors, constants, layouts, values, around)
    return placed


def split_of(profile: Profile, node: NodeFacts, tensors: Mapping[str, TensorInfo],
             constants: set[str] | frozenset[str], layouts: Mapping[str, str] | None = None,
             values: ValueOf | None = None, around: Neighbours | None = None) -> dict[str, Any] | None:
    """The first ``splits`` entry of the profile for ``node``'s op whose ``where`` and ``context``
    hold and one of whose ``constraints`` fails on known values (a dim that is not known splits
    nothing), as ``Placement.split``; None when the node stays whole. An entry with a ``context``
    needs ``around`` (the main graph's neighbours)."""
    for entry in profile.splits or []:
        if entry["op"] != node.key:
            continue
        if "context" in entry and (around is None or not context_holds(entry["context"], node, around)):
            continue
        if evaluate(entry.get("where", []), node, tensors, constants, layouts, values):
            continue
        failed = evaluate(entry["constraints"], node, tensors, constants, layouts, values)
        if not failed or any(_unknown(f.actual) for f in failed):
            continue  # whole, or a failure on a value not known (a symbolic dim): no split is predicted
        note = f"; {entry['message']}" if entry.get("message") else ""
        out: dict[str, Any] = {"id": entry["id"], "pieces": [dict(p) for p in entry["pieces"]],
                               "reasons": [f.message + note for f in failed], "evidence": entry["evidence"]}
        for key in ("fix", "doc"):
            if entry.get(key):
                out[key] = entry[key]
        return out
    return None


def _unknown(actual: Any) -> bool:
    """A failed test's value is not known: the marker, or a symbolic dim's name (a string)."""
    if isinstance(actual, list):
        return any(_unknown(a) for a in actual)
    return actual is None or isinstance(actual, str)


def lowered_to(profile: Profile, key: str) -> str | None:
    """The op the profile's ``lowers`` says the compiler rewrites ``key`` into, if any."""
    return next((entry["to"] for entry in profile.lowers or [] if entry["op"] == key), None)


def place_all(
    facts: GraphFacts,
    profile: Profile,
    folded: set[int],
    constants: set[str],
    layouts: Mapping[str, str] | None = None,
    values: ValueOf | None = None,
) -> list[Placement]:
    """Every top-level node; a QDQ graph's units are placed by their op (``placement.qdq``)."""
    tensors = facts.tensors
    units = node_units(facts)
    around = Neighbours.of(facts, folded) if any("context" in e for e in profile.splits or []) else None
    out = []
    for node in facts.nodes:
        if node.index in folded:
            out.append(Placement(FOLDED))
        elif units is not None and node.index in units.dtypes:
            view = units.dtypes[node.index]
            placement = place_in_scope(node, integer_tensors(tensors, view), profile, constants, layouts, values,
                                       around)
            if placement.device == CPU and placement.op_supported and place_in_scope(
                    node, tensors, profile, constants, layouts, values).device == NPU:
                placement.quantized = ", ".join(sorted(set(view.values())))
            out.append(placement)
        else:
            out.append(place_in_scope(node, tensors, profile, constants, layouts, values, around))
    if units is not None:
        for index in sorted(units.absorbed() - folded):
            op = units.member_of.get(index)
            kind = "unit" if op is not None else f"{units.adapters[index]} adapter"
            if op is None:
                op = adapter_unit(facts, units, index)
            if op is None or out[op].device == FOLDED:
                out[index].qdq = kind  # an adapter of nothing placed: keeps its own placement
                continue
            reason = (f"quantization of {facts.nodes[op].name} ({facts.nodes[op].op_type}), placed with it"
                      if kind == "unit" else f"I/O {kind} of {facts.nodes[op].name}, placed with it")
            out[index] = Placement(out[op].device, [reason], qdq=kind)
        for index in sorted(set(units.member_of) & folded):
            # a weight's DQ folds into the static tensor of an op on the NPU; the DQ of an op on CPU
            # runs there (onnxruntime does not fold DequantizeLinear nodes)
            op = units.member_of[index]
            if facts.nodes[index].op_type == DEQUANTIZE and out[op].device == CPU:
                node = facts.nodes[op]
                out[index] = Placement(CPU, [f"weight quantization of {node.name} ({node.op_type}), on CPU with it"],
                                       qdq="unit")
        for index, alone in units.standalone.items():
            node = facts.nodes[index]
            entry = standalone_entry(profile.standalone_qdq, alone, node.op_type, weight=index in folded)
            if entry is None:
                continue  # the profile says nothing: placed as a node of its own (a weight's DQ folds)
            why = f"no QDQ unit: {alone.why}"
            reason = f"{why}: {entry['message']}" if entry.get("message") else why
            out[index] = Placement(entry["device"], [reason],
                                   standalone={"id": entry["id"], "why": why, "message": entry.get("message"),
                                               "evidence": entry["evidence"]})
    return out


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
