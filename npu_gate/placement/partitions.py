"""Partitions as a runtime with CPU fallback would form them, and the bytes crossing them.

The algorithm (documented in docs/partitioning.md):

1. Folded and eliminated nodes are gone: only npu and cpu nodes take part. A node reading
   an eliminated node's output reads, in effect, what that node read (its producers).
2. Walk the graph in topological order with Kahn's algorithm, one device at a time:
   take every ready node of the current device (smallest model index first), including
   those made ready meanwhile; when none is left, close the segment and switch device
   (NPU first). Like onnxruntime's partitioner, this keeps same-device work together.
3. A segment is a contiguous run of a topological order, so it is convex: no path can
   leave it and come back. Each segment is split into its connected components, which
   stay convex; each component is a partition.

QDQ graphs: a standalone weight DQ on CPU (``early``) runs before the walk; a CPU unit's weight
DQ joins the partition of its readers (``with_unit_sources``).

A node the profile ``splits`` (``Placement.split``) takes part as a chain of its pieces, each
on its own device: its inputs feed the first piece, each piece reads the one before, its
readers read the last. A partition holds the node when it holds one of its pieces
(``Partition.pieces`` says which).

The walk touches each node and edge a constant number of times (plus a heap), so it is
linear in graph size up to the log factor of the heap.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from npu_gate.graph.components import components
from npu_gate.graph.facts import GraphFacts
from npu_gate.placement.place import Placement
from npu_gate.result.types import CPU, ELIMINATED, FOLDED, NPU, BoundaryResult


@dataclass
class Partition:
    id: int
    device: str
    nodes: list[int]  # node indices, in execution order
    pieces: dict[int, list[int]] = field(default_factory=dict)  # a split node -> its pieces here (indices)


def build_partitions(
    facts: GraphFacts, placements: list[Placement], deps: list[list[int]]
) -> list[Partition]:
    device = [p.device for p in placements]
    early = {i for i, p in enumerate(placements) if p.standalone is not None and p.device == CPU and not deps[i]}
    unit_sources = {i for i, p in enumerate(placements) if p.qdq == "unit" and p.device == CPU and not deps[i]}
    split = {i: p.split["pieces"] for i, p in enumerate(placements) if p.split is not None and p.device == NPU}
    n = len(device)
    owner: list[tuple[int, int]] = [(i, 0) for i in range(n)]  # expanded index -> (node, piece)
    if split:
        deps = [list(d) for d in deps]
        last: dict[int, int] = {}
        for i, pieces in split.items():
            device[i] = pieces[0]["device"]
            previous = i
            for k, piece in enumerate(pieces[1:], 1):
                device.append(piece["device"])
                deps.append([previous])
                owner.append((i, k))
                previous = len(device) - 1
            last[i] = previous
        deps[:n] = [[last.get(p, p) for p in d] for d in deps[:n]]  # a split node's readers read its last piece
    parts = partition_devices(device, deps, early)
    if unit_sources:
        parts = with_unit_sources(parts, unit_sources, deps)
    if not split:
        return parts
    out = []
    for part in parts:
        nodes: dict[int, None] = {}
        held: dict[int, list[int]] = {}
        for k in part.nodes:
            node, piece = owner[k]
            nodes[node] = None
            if node in split:
                held.setdefault(node, []).append(piece)
        out.append(Partition(part.id, part.device, list(nodes), held))
    return out


def with_unit_sources(parts: list[Partition], sources: set[int], deps: list[list[int]]) -> list[Partition]:
    """``parts`` with each partition made only of QDQ-unit nodes that read no node (a CPU unit's weight
    DequantizeLinear: placement/qdq.py) joined to the partition of the nodes reading them, when those
    are all in one partition of the same device: the walk takes such a source with the first CPU
    segment, but it runs with its unit, where it is read."""
    where = {i: part.id for part in parts for i in part.nodes}
    readers: dict[int, set[int]] = {}
    for i, d in enumerate(deps):
        for p in d:
            if p in sources and i in where:
                readers.setdefault(p, set()).add(where[i])
    moved: dict[int, int] = {}  # partition id -> the partition it joins
    for part in parts:
        if not part.nodes or not all(i in sources for i in part.nodes):
            continue
        targets = set().union(*(readers.get(i, set()) for i in part.nodes)) - {part.id}
        if len(targets) == 1 and parts[next(iter(targets))].device == part.device:
            moved[part.id] = next(iter(targets))
    if not moved:
        return parts
    order = {i: k for k, i in enumerate(sorted(where))}  # model order stands in for execution order
    out: list[Partition] = []
    for part in parts:
        if part.id in moved:
            continue
        nodes = list(part.nodes)
        extra = [i for q, t in moved.items() if t == part.id for i in parts[q].nodes]
        if extra:
            nodes = sorted(extra, key=order.__getitem__) + nodes
        out.append(Partition(len(out), part.device, nodes))
    return out


def partition_devices(device: list[str], deps: list[list[int]], early: set[int] | None = None) -> list[Partition]:
    """Partitions of nodes given only their devices (npu / cpu / folded / eliminated) and dependencies.
    ``early``: CPU nodes reading no node that run before everything else (a standalone weight
    DequantizeLinear: placement/qdq.py), so that they do not cut the NPU work reading them."""
    if ELIMINATED in device:
        deps = bridged(device, deps)
    active = [d not in (FOLDED, ELIMINATED) for d in device]
    indegree = [0] * len(device)
    consumers: list[list[int]] = [[] for _ in device]
    for i, d in enumerate(deps):
        if not active[i]:
            continue
        for p in d:
            if active[p]:
                indegree[i] += 1
                consumers[p].append(i)
    first = sorted(i for i in early or () if active[i] and indegree[i] == 0 and device[i] == CPU)
    ready: dict[str, list[int]] = {NPU: [], CPU: []}
    for i, is_active in enumerate(active):
        if is_active and indegree[i] == 0 and i not in first:
            ready[device[i]].append(i)
    segments: list[tuple[str, list[int]]] = []
    if first:
        segments.append((CPU, first))
        for i in first:
            for c in consumers[i]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    ready[device[c]].append(c)
    for heap in ready.values():
        heapq.heapify(heap)

    while ready[NPU] or ready[CPU]:
        current = NPU if ready[NPU] else CPU
        segment: list[int] = []
        while ready[current]:
            i = heapq.heappop(ready[current])
            segment.append(i)
            for c in consumers[i]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    heapq.heappush(ready[device[c]], c)
        segments.append((current, segment))
    stranded = [i for i, a in enumerate(active) if a and indegree[i] > 0]
    for i in stranded:  # only in invalid (cyclic) graphs: one partition each
        segments.append((device[i], [i]))

    partitions: list[Partition] = []
    for kind, segment in segments:
        for component in components(segment, ((i, p) for i in segment for p in deps[i])):
            partitions.append(Partition(len(partitions), kind, component))
    return partitions


def bridged(device: list[str], deps: list[list[int]]) -> list[list[int]]:
    """``deps`` with every eliminated producer replaced by its own producers (transitively)."""
    resolved: dict[int, list[int]] = {}

    def through(i: int) -> list[int]:  # the non-eliminated producers eliminated node i stands for
        stack, out, seen = [i], [], {i}
        while stack:
            for p in deps[stack.pop()]:
                if p in seen:
                    continue
                seen.add(p)
                if device[p] == ELIMINATED:
                    stack.append(p)
                else:
                    out.append(p)
        return out

    out = []
    for d in deps:
        new: dict[int, None] = {}
        for p in d:
            if device[p] == ELIMINATED:
                if p not in resolved:
                    resolved[p] = through(p)
                new.update(dict.fromkeys(resolved[p]))
            else:
                new[p] = None
        out.append(list(new))
    return out


def boundaries(
    facts: GraphFacts, partitions: list[Partition], eliminated: set[int] | frozenset[int] = frozenset()
) -> list[BoundaryResult]:
    """One entry per (tensor, consuming partition) where the consumer's partition differs.

    Only tensors produced by a non-folded node count: graph inputs, weights and folded
    constants are not copied between partitions at run time. An ``eliminated`` node's output
    is its first input: the tensor that crosses is the one it passes on, named as such. A split
    node reads its inputs in its first piece's partition and writes its outputs in its last
    piece's; between two of its pieces in different partitions its first output crosses, named
    ``<output>@<k>`` (k: the index, from 0, of the piece that writes it), sized as that output.
    """
    nodes = facts.nodes
    part_of = [-1] * len(nodes)  # -1: folded, in no partition; a split node: its last piece's
    read_in: dict[int, int] = {}  # a split node -> its first piece's partition
    piece_parts: dict[int, list[tuple[int, int]]] = {}  # a split node -> (piece, partition) in order
    for part in partitions:
        for i in part.nodes:
            part_of[i] = part.id
        for i, pieces in part.pieces.items():
            read_in.setdefault(i, part.id)
            piece_parts.setdefault(i, []).extend((k, part.id) for k in pieces)
    made_in: dict[str, int] = {}  # tensor -> partition of its (non-folded) producer
    for node, part_id in zip(nodes, part_of, strict=True):
        if part_id >= 0:
            for name in node.outputs:
                made_in[name] = part_id
    alias = {o: n.inputs[0] for n in nodes if n.index in eliminated and n.inputs for o in n.outputs if o}
    made_in.pop("", None)  # an absent optional output is no tensor
    crossing: dict[tuple[str, int], int] = {}
    get = made_in.get
    for node, target in zip(nodes, part_of, strict=True):
        if target < 0:
            continue
        target = read_in.get(node.index, target)
        names = (*node.inputs, *node.implicit_inputs) if node.implicit_inputs else node.inputs
        for name in names:  # '' (absent input) is never produced; repeats overwrite with the same source
            hops = 0
            while name not in made_in and name in alias and hops < len(nodes):  # through eliminated nodes
                name, hops = alias[name], hops + 1
            source = get(name)
            if source is not None and source != target:
                crossing[(name, target)] = source
    sizes: dict[str, int | None] = {}  # a tensor crossing into several partitions is sized once
    for i, order in piece_parts.items():
        order.sort()
        output = facts.tensors.get(nodes[i].outputs[0]) if nodes[i].outputs else None
        for (k, source), (_, target) in itertools.pairwise(order):
            if source != target:
                name = f"{nodes[i].outputs[0]}@{k}"
                crossing[(name, target)] = source
                sizes[name] = output.nbytes if output else None
    out = []
    for source, target, name in sorted([(s, t, n) for (n, t), s in crossing.items()]):
        if name not in sizes:
            info = facts.tensors.get(name)
            sizes[name] = info.nbytes if info else None
        out.append(BoundaryResult(name, sizes[name], source, target))
    return out


def total_bytes(crossings: list[BoundaryResult]) -> int | None:
    """Sum of boundary bytes; None when any crossing tensor has an unknown size."""
    if any(b.bytes is None for b in crossings):
        return None
    return sum(b.bytes or 0 for b in crossings)
