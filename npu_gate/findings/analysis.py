"""What the findings of one analysed graph are made from: the analysis stage's ``Analysis``, and
a real compiler's placement when it decides (``CompilerPlacement``). Data only; the stage
(``stages/analyse.py``) fills them and re-exports both names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from npu_gate.contract.parts import InputSpec
from npu_gate.graph.facts import GraphFacts, TensorInfo
from npu_gate.graph.fold_budget import FoldSkip
from npu_gate.graph.shape_chains import ShapeChain
from npu_gate.graph.subgraphs import ScopedNode
from npu_gate.placement import memory as memlib
from npu_gate.placement.eliminate import NumericChange
from npu_gate.placement.place import Placement
from npu_gate.placement.refusals import Refusal
from npu_gate.profile.constraints import Failure
from npu_gate.result.types import RankAdapter

if TYPE_CHECKING:  # a probe's nodes: `inspect` runs no probe
    from npu_gate.result.probe import ProbeNode


@dataclass
class CompilerPlacement:
    """A real compiler's placement, when it decides (``target.probe.decide: measured`` and
    the compiler built the model): its nodes by name, and the evidence line naming it."""

    nodes: Mapping[str, ProbeNode]
    evidence: str


@dataclass
class Analysis:
    """What the findings of one analysed graph are made from (``findings``)."""

    facts: GraphFacts
    model_inputs: list[TensorInfo]
    inputs: list[InputSpec] | None  # the contract's; None: shapes from the model (inspect)
    checker_errors: list[str]
    strict_error: str | None
    shape_error: str | None
    opset_limit: Failure | None
    placements: list[Placement]
    scoped: list[ScopedNode]
    body: list[Placement]
    chains: list[ShapeChain]
    adapters: list[RankAdapter] | None
    dynamic_severity: str
    evidence: str  # the profile's
    fold_skips: list[FoldSkip] = field(default_factory=list)  # folded values not computed (fold budget)
    order: list[int] = field(default_factory=list)  # the nodes in topological order
    memory: list[memlib.PartitionMemory] = field(default_factory=list)  # NPU partitions' estimates
    memory_budget: dict[str, Any] | None = None  # the profile's ``memory``
    refusals: list[Refusal] = field(default_factory=list)  # the profile's ``refuses`` that match
    folded: set[int] = field(default_factory=set)  # indices of the nodes that fold (the quantization stage's)
    numeric_changes: list[NumericChange] = field(default_factory=list)  # eliminated, not exact no-ops
