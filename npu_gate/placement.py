"""Per-node placement against a target profile: npu, cpu or folded, with the reasons.

Folding here follows the gate's documented rule: `Constant` nodes, and nodes with at
least one input whose inputs (including outer-scope values read by their subgraphs)
are all constants, are folded: a compiler evaluates them ahead of time, so they are
neither CPU nor NPU work. Generator ops with no inputs (RandomNormal) and random ops
are never folded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from npu_gate.constraints import Failure, evaluate
from npu_gate.graph import GraphFacts, NodeFacts
from npu_gate.limits import node_failures
from npu_gate.profile import Profile

NPU = "npu"
CPU = "cpu"
FOLDED = "folded"

_RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
               "Multinomial", "Bernoulli"}


@dataclass
class Placement:
    device: str
    reasons: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    op_supported: bool = True  # False: the op is not in the profile at all
    limit_failures: list[Failure] = field(default_factory=list)  # the profile's global limits


def fold(facts: GraphFacts, order: list[int], weights: set[str]) -> tuple[set[int], set[str]]:
    """Indices of folded nodes and the names of all constant tensors (weights included)."""
    constants = set(weights)
    folded: set[int] = set()
    for i in order:
        node = facts.nodes[i]
        if node.domain == "" and node.op_type == "Constant":
            folded.add(i)
        elif node.op_type not in _RANDOM_OPS:
            reads = [n for n in (*node.inputs, *node.implicit_inputs) if n]
            if reads and all(n in constants for n in reads):
                folded.add(i)
            else:
                continue
        else:
            continue
        constants.update(n for n in node.outputs if n)
    return folded, constants


def place_node(
    node: NodeFacts,
    facts: GraphFacts,
    profile: Profile,
    constants: set[str],
    layouts: Mapping[str, str] | None = None,
) -> Placement:
    spec = profile.ops.get(node.key)
    if spec is None:
        return Placement(CPU, [f"op {node.key} not in profile {profile.name}"], op_supported=False)
    failures = evaluate(spec.get("constraints", []), node, facts.tensors, constants, layouts)
    limits = node_failures(profile.limits, node, facts.tensors, constants)
    if failures or limits:
        reasons = [f.message for f in (*failures, *limits)]
        return Placement(CPU, reasons, failures, limit_failures=limits)
    return Placement(NPU)


def place_all(
    facts: GraphFacts,
    profile: Profile,
    folded: set[int],
    constants: set[str],
    layouts: Mapping[str, str] | None = None,
) -> list[Placement]:
    return [
        Placement(FOLDED) if node.index in folded
        else place_node(node, facts, profile, constants, layouts)
        for node in facts.nodes
    ]
