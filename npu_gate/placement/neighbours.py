"""A ``splits`` entry's ``context``: conditions on a node's producers and readers.

Some rewrites a compiler makes only in a given neighbourhood. RKNN-Toolkit2 2.5.0 moves the
flattening Reshapes of a YOLO head past their Concat, and flattens once after it, only when a
Split reads the Concat (docs/rknn.md, nudenet). A ``splits`` entry says so as data
(docs/target-profiles.md#splits):

- ``producers``: every input of the node is written by a node of ``op`` that the placement did not
  fold, at least ``min_count`` inputs; with ``merges_last_dims`` N, each such producer turns a static
  tensor into one with the same leading dims and a last dim equal to the product of its last N
  dims (``(1, C, H, W) -> (1, C, H*W)``);
- ``readers``: the node's first output is read, only by nodes of these ops, and is not a graph
  output.

Only the main graph is looked at: a control-flow body's nodes never match an entry with a context.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.graph.facts import GraphFacts, NodeFacts, TensorInfo, producers


@dataclass(frozen=True)
class Neighbours:
    """Who writes and who reads each tensor of the main graph."""

    nodes: list[NodeFacts]
    made_by: dict[str, int]  # tensor -> index of the node writing it
    read_by: dict[str, list[int]]  # tensor -> indices of the nodes reading it
    graph_outputs: frozenset[str]
    tensors: Mapping[str, TensorInfo]
    folded: frozenset[int]

    @classmethod
    def of(cls, facts: GraphFacts, folded: set[int] | frozenset[int]) -> Neighbours:
        read_by: dict[str, list[int]] = {}
        for node in facts.nodes:
            for name in dict.fromkeys(node.inputs):
                if name:
                    read_by.setdefault(name, []).append(node.index)
        return cls(facts.nodes, producers(facts.nodes), read_by, frozenset(o.name for o in facts.outputs),
                   facts.tensors, frozenset(folded))

    def writer(self, tensor: str) -> NodeFacts | None:
        """The node writing ``tensor``, unless the placement folded it (None: a graph input, a weight)."""
        index = self.made_by.get(tensor)
        return None if index is None or index in self.folded else self.nodes[index]

    def only_reader(self, tensor: str) -> NodeFacts | None:
        """The one node reading ``tensor``, when exactly one does and it is not a graph output."""
        readers = self.read_by.get(tensor, [])
        return self.nodes[readers[0]] if len(readers) == 1 and tensor not in self.graph_outputs else None

    def static_shape(self, tensor: str) -> list[int] | None:
        info = self.tensors.get(tensor)
        if info is None or not info.static:
            return None
        return [d for d in info.shape or [] if isinstance(d, int)]  # static: every dim a known int


def context_holds(context: dict[str, Any], node: NodeFacts, around: Neighbours) -> bool:
    """Whether every condition of a ``splits`` entry's ``context`` holds for ``node``."""
    wanted = context.get("producers")
    if wanted is not None and not _producers_hold(wanted, node, around):
        return False
    readers = context.get("readers")
    return readers is None or _readers_hold(readers, node, around)


def _producers_hold(wanted: dict[str, Any], node: NodeFacts, around: Neighbours) -> bool:
    inputs = [name for name in node.inputs if name]
    if len(inputs) < wanted.get("min_count", 1):
        return False
    for name in inputs:
        producer = around.writer(name)
        if producer is None or producer.key != wanted["op"]:
            return False
        merged = wanted.get("merges_last_dims")
        if merged is not None and not _merges_last_dims(producer, merged, around):
            return False
    return True


def _merges_last_dims(node: NodeFacts, count: int, around: Neighbours) -> bool:
    """``node`` turns its static first input into its output by merging the last ``count`` dims."""
    if not node.inputs or not node.outputs:
        return False
    before, after = around.static_shape(node.inputs[0]), around.static_shape(node.outputs[0])
    if before is None or after is None or len(before) <= count or len(after) != len(before) - count + 1:
        return False
    kept = len(before) - count
    return after[:kept] == before[:kept] and after[-1] == math.prod(before[kept:])


def _readers_hold(ops: list[str], node: NodeFacts, around: Neighbours) -> bool:
    if not node.outputs or not node.outputs[0] or node.outputs[0] in around.graph_outputs:
        return False
    readers = around.read_by.get(node.outputs[0], [])
    return bool(readers) and all(around.nodes[i].key in ops for i in readers)
