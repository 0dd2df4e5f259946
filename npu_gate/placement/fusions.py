"""Fusion patterns: small subgraphs a target fuses and runs as one op.

A profile's ``patterns`` are data (schemas/profile.schema.json), matched here; nothing in a
profile is evaluated as code. A pattern lists its nodes in producer order; each input of a
pattern node is one of

- ``{"node": k}``: output ``output`` (default 0) of pattern node ``k`` (``k`` earlier in the list),
- ``{"tensor": "x"}``: any tensor, the same tensor wherever the name ``x`` appears,
- ``{"const": true}`` / ``{"const": 3}``: a constant (initializer or folded), with that value
  (every element, relative tolerance 1e-5) when a number is given.

Inputs of ``Add``/``Mul`` (and the other commutative ops) match in either order. The last
pattern node is the root; every other matched node's outputs must be read only inside the
match (a value needed elsewhere keeps the compiler from fusing). Matches never overlap:
patterns are tried in profile order, roots in graph order.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from itertools import permutations
from typing import TYPE_CHECKING, Any

from npu_gate.placement.place import Placement
from npu_gate.profile.constraints import Failure, evaluate
from npu_gate.profile.limits import node_failures
from npu_gate.result.types import CPU, FOLDED, NPU

if TYPE_CHECKING:
    import numpy as np
    from onnx import ModelProto

    from npu_gate.graph.facts import GraphFacts, NodeFacts
    from npu_gate.profile.spec import Profile
    from npu_gate.result.types import GateResult

COMMUTATIVE = frozenset({"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor", "Equal"})
_MAX_CONST_ELEMENTS = 64  # only small constants are read for value tests
_RTOL = 1e-5


@dataclass(frozen=True)
class Fusion:
    pattern: str
    op: str  # the fused op the target runs (pattern "becomes")
    nodes: list[int]  # matched node indices, in pattern order
    root: int
    supported: bool  # the target runs the fused op on the NPU here
    reasons: list[str]

    def to_dict(self, names: list[str]) -> dict[str, Any]:
        return {"pattern": self.pattern, "op": self.op, "nodes": [names[i] for i in self.nodes],
                "device": NPU if self.supported else CPU, "reasons": self.reasons}


def constant_values(model: ModelProto, weights: Collection[str] | None = None) -> dict[str, np.ndarray]:
    """Values of the small constants of the main graph: initializers and Constant nodes.
    ``weights``: the initializers that are weights; the others (IR >= 4 inputs with a default)
    have no known value."""
    from onnx import TensorProto, numpy_helper

    def read(tensor: TensorProto, name: str) -> None:
        # skipped: malformed data (the onnx-checker finding says so) or a dtype numpy cannot hold
        with contextlib.suppress(Exception):
            values[name] = numpy_helper.to_array(tensor)

    values: dict[str, np.ndarray] = {}
    for init in model.graph.initializer:
        if weights is not None and init.name not in weights:
            continue
        external = init.data_location == TensorProto.EXTERNAL
        if not external and math.prod(init.dims) <= _MAX_CONST_ELEMENTS:
            read(init, init.name)
    for node in model.graph.node:
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") or not node.output:
            continue
        for attr in node.attribute:
            if attr.name == "value" and math.prod(attr.t.dims) <= _MAX_CONST_ELEMENTS:
                read(attr.t, node.output[0])
            elif attr.name in ("value_float", "value_int"):
                import numpy

                values[node.output[0]] = numpy.array(attr.f if attr.name == "value_float" else attr.i)
    return values


class _Matcher:
    def __init__(self, facts: GraphFacts, constants: set[str], values: Mapping[str, np.ndarray],
                 taken: set[int], folded: set[int]) -> None:
        self.facts = facts
        self.constants = constants
        self.values = values
        self.taken = taken
        self.folded = folded
        self.producer = {out: n.index for n in facts.nodes for out in n.outputs if out}
        self.readers: dict[str, set[int]] = {}
        for n in facts.nodes:
            for name in (*n.inputs, *n.implicit_inputs):
                if name:
                    self.readers.setdefault(name, set()).add(n.index)
        self.graph_outputs = {o.name for o in facts.outputs}

    def match(self, spec: list[dict[str, Any]], root: int) -> tuple[list[int], dict[str, str]] | None:
        """Node indices matching ``spec`` (pattern order) with ``root`` as its last node, and
        the tensors bound to the pattern's ``{"tensor": ...}`` names."""
        found = self._node(spec, len(spec) - 1, root, {}, {})
        if found is None:
            return None
        bound, tensors = found
        nodes = [bound[k] for k in range(len(spec))]
        if len(set(nodes)) != len(nodes):
            return None
        inside = set(nodes)
        for i in nodes:
            if i == root:
                continue
            for out in self.facts.nodes[i].outputs:
                if out and (out in self.graph_outputs or not self.readers.get(out, set()) <= inside):
                    return None
        return nodes, tensors

    def _node(self, spec: list[dict[str, Any]], k: int, index: int, bound: dict[int, int],
              tensors: dict[str, str]) -> tuple[dict[int, int], dict[str, str]] | None:
        if k in bound:
            return (bound, tensors) if bound[k] == index else None
        node = self.facts.nodes[index]
        want = spec[k]
        if index in self.taken or index in self.folded or node.key != want["op"]:
            return None
        for name, value in want.get("attributes", {}).items():
            if node.attributes.get(name) != value:
                return None
        present = [n for n in node.inputs]
        while present and not present[-1]:
            present.pop()  # trailing absent optional inputs
        inputs = want.get("inputs", [])
        if len(present) != len(inputs):
            return None
        orders = permutations(range(len(inputs))) if node.op_type in COMMUTATIVE else [range(len(inputs))]
        for order in orders:
            found = self._inputs(spec, [inputs[j] for j in order], present, {**bound, k: index}, dict(tensors))
            if found is not None:
                return found
        return None

    def _inputs(self, spec: list[dict[str, Any]], wants: list[dict[str, Any]], names: list[str],
                bound: dict[int, int], tensors: dict[str, str]) -> tuple[dict[int, int], dict[str, str]] | None:
        if not wants:
            return bound, tensors
        want, name = wants[0], names[0]
        if "tensor" in want:
            if tensors.setdefault(want["tensor"], name) != name:
                return None
        elif "const" in want:
            if name not in self.constants or not self._value_ok(name, want["const"]):
                return None
        else:  # {"node": k}: produced by pattern node k
            producer = self.producer.get(name)
            if producer is None:
                return None
            outputs = self.facts.nodes[producer].outputs
            slot = want.get("output", 0)
            if slot >= len(outputs) or outputs[slot] != name:
                return None
            found = self._node(spec, want["node"], producer, bound, tensors)
            if found is None:
                return None
            bound, tensors = found
        return self._inputs(spec, wants[1:], names[1:], bound, tensors)

    def _value_ok(self, name: str, want: Any) -> bool:
        if want is True:
            return True
        value = self.values.get(name)
        if value is None or value.size == 0:
            return False
        flat = value.astype("float64").ravel()
        return all(math.isclose(float(v), float(want), rel_tol=_RTOL, abs_tol=1e-12) for v in flat)


def fused_node(pattern: dict[str, Any], nodes: list[NodeFacts], tensors: dict[str, str]) -> NodeFacts:
    """The fused op as one node: its inputs the pattern's ``inputs`` tensors, its outputs
    the root's, so the profile's constraints and limits apply to it."""
    from npu_gate.graph.facts import NodeFacts

    root = nodes[-1]
    names = [tensors[t] for t in pattern.get("inputs", sorted(tensors))]
    return NodeFacts(index=root.index, name=root.name, op_type=pattern["becomes"], domain="",
                     inputs=names, outputs=list(root.outputs), attributes={}, defaulted=[])


def fuse(model: ModelProto, facts: GraphFacts, profile: Profile, placements: list[Placement], folded: set[int],
         constants: set[str], layouts: Mapping[str, str] | None = None) -> list[Fusion] | None:
    """The pipeline's step: None for a profile without patterns (the result stays as it was)."""
    if not profile.patterns:
        return None
    return apply_patterns(facts, profile, placements, folded, constants, constant_values(model, facts.initializers),
                          layouts)


def apply_patterns(
    facts: GraphFacts,
    profile: Profile,
    placements: list[Placement],
    folded: set[int],
    constants: set[str],
    values: Mapping[str, np.ndarray],
    layouts: Mapping[str, str] | None = None,
) -> list[Fusion]:
    """Match the profile's patterns and re-place the matched nodes (in ``placements``)."""
    if not profile.patterns:
        return []
    taken: set[int] = set()
    matcher = _Matcher(facts, constants, values, taken, folded)
    fusions: list[Fusion] = []
    for pattern in profile.patterns:
        spec = pattern["nodes"]
        for node in facts.nodes:
            if node.index in taken or node.key != spec[-1]["op"]:
                continue
            found = matcher.match(spec, node.index)
            if found is None:
                continue
            matched, tensors = found
            taken.update(matched)
            fusions.append(_place(pattern, [facts.nodes[i] for i in matched], tensors, facts, profile,
                                  placements, constants, layouts))
    return fusions


def _place(pattern: dict[str, Any], nodes: list[NodeFacts], tensors: dict[str, str], facts: GraphFacts,
           profile: Profile, placements: list[Placement], constants: set[str],
           layouts: Mapping[str, str] | None) -> Fusion:
    name, op = pattern["name"], pattern["becomes"]
    label = f"fused into {op} ({name})"
    failures: list[Failure] = []
    limits: list[Failure] = []
    if pattern.get("supported", True):
        fused = fused_node(pattern, nodes, tensors)
        failures = evaluate(pattern.get("constraints", []), fused, facts.tensors, constants, layouts)
        limits = node_failures(profile.limits, fused, facts.tensors, constants)
    supported = pattern.get("supported", True) and not failures and not limits
    if supported:
        reasons = [label]
    elif not pattern.get("supported", True):
        reasons = [f"{label}, which profile {profile.name} does not run on the NPU"]
    else:
        reasons = [f"{label}, which runs on CPU here: " + "; ".join(f.message for f in (*failures, *limits))]
    indices = [n.index for n in nodes]
    info = {"pattern": name, "op": op, "nodes": [n.name for n in nodes]}
    for i in indices:
        old = placements[i]
        if old.device == FOLDED:
            continue
        if supported:
            placements[i] = Placement(NPU, list(reasons), fused=info)
        else:
            placements[i] = Placement(CPU, list(reasons), list(failures), op_supported=bool(failures or limits),
                                      limit_failures=list(limits), fused=info)
    return Fusion(name, op, indices, indices[-1], supported, reasons)


def record(result: GateResult, fusions: list[Fusion], placements: list[Placement]) -> None:
    """``fusions`` and each matched node's ``fused`` into the result (its nodes are in graph order)."""
    names = [n.name for n in result.nodes]
    result.fusions = [f.to_dict(names) for f in fusions]
    for i, placement in enumerate(placements):
        if placement.fused is not None:
            result.nodes[i].fused = placement.fused
