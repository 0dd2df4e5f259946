"""A static estimate of each NPU partition's memory: its weights and its peak live activations.

An upper bound, by construction (documented in docs/memory.md):

- Schedule: the partition's own execution order (a topological order). A tensor is live from
  the step of its producer to the step of its last consumer in the partition, both included;
  a tensor arriving from outside (a graph input, another partition's output) is live from the
  first step; a tensor leaving the partition (a graph output, read by another partition) stays
  live to the last step. The peak is the largest sum of live bytes over the steps.
- No in-place reuse, no tiling, no operator workspace: a compiler that reuses buffers or tiles
  needs less, so the figure bounds it from above (it is no prediction of the compiler's plan).
- A control-flow node (If, Loop, Scan) holds, while it runs, its body's own peak on top of
  what is live outside: the largest of its bodies (only one branch of an If runs). Weights of
  every body count (all of them are stored).
- Weights: the distinct constants (initializers, folded constants) the partition's nodes read,
  each once per partition.
- Sizes in the dtype the target runs (``Precision``): float tensors take the profile's
  ``runtime_dtype`` (float16 for RKNN's fp16 build); other dtypes and profiles that name none
  keep the model's. A tensor without a static size makes the figure unknown (None) with the
  reason: never a guess.
- Sizes in the target's layout when the profile states one (``Layout``, a profile's
  ``memory.layout``): channels padded, buffers aligned, small float constants kept wider, a
  fixed weight overhead per partition. Without one, tensors are counted unpadded.

Every step is linear in the partition's nodes and tensors.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from npu_gate.graph.facts import GraphFacts, NodeFacts, TensorInfo, dtype_size
from npu_gate.graph.subgraphs import ScopedNode
from npu_gate.placement.partitions import Partition
from npu_gate.result.types import ESTIMATE_LAID_OUT, ESTIMATE_UNPADDED, NPU, BoundaryResult, LiveEntry

# What the figures are, said wherever they are shown. Unpadded: a compiler's native layouts
# (RKNN's NC1HWC2 pads channels) can need more than this bound (docs/memory.md).
UPPER_BOUND = ESTIMATE_UNPADDED
UPPER_BOUND_LAID_OUT = ESTIMATE_LAID_OUT  # the same under a profile's memory.layout
FLOAT_DTYPES = frozenset({"float32", "float16", "float64", "bfloat16"})
AT_PEAK = 3  # the largest live tensors named at a peak


@dataclass(frozen=True)
class Precision:
    """The dtype float tensors take on the target; None: the model's own.

    The quantization issue sets ``weights`` (and ``activations``) to ``int8`` for a quantized
    build; every size goes through ``tensor_bytes`` so nothing else changes.
    """

    activations: str | None = None
    weights: str | None = None
    layout: Layout | None = None  # the target's padding and alignment; None: unpadded


@dataclass(frozen=True)
class Layout:
    """How the target stores tensors: a profile's ``memory.layout`` (docs/memory.md). Each
    figure only ever rounds a size up, so the estimate stays an upper bound of the unpadded one.

    - ``channel_align``: a float activation of rank 4 (NCHW) has its channels (axis 1) rounded
      up to a multiple of this;
    - ``weight_channel_align``: a float weight of rank 4 (a Conv's OIHW) has its input channels
      (axis 1) rounded up to a multiple of this, unless there is one (depthwise);
    - ``buffer_align``: every buffer's bytes rounded up to a multiple of this;
    - ``bias_dtype``: float weights of rank 0 or 1 (biases, scales) are stored in this dtype,
      not the runtime one (None: the runtime one);
    - ``weight_overhead_bytes``: bytes a compiled partition's weights take beyond its tensors.
    """

    channel_align: int = 1
    weight_channel_align: int = 1
    buffer_align: int = 1
    bias_dtype: str | None = None
    weight_overhead_bytes: int = 0

    @staticmethod
    def from_profile(doc: Mapping[str, Any] | None) -> Layout | None:
        """A profile's ``memory.layout`` object (schema-checked), or None when it states none."""
        if not doc:
            return None
        return Layout(doc.get("channel_align", 1), doc.get("weight_channel_align", 1), doc.get("buffer_align", 1),
                      doc.get("bias_dtype"), doc.get("weight_overhead_bytes", 0))


@dataclass
class PartitionMemory:
    partition: int
    weight_bytes: int | None
    peak_activation_bytes: int | None
    at_peak: list[LiveEntry] = field(default_factory=list)  # largest first, at most AT_PEAK
    unknown: str | None = None  # why a figure is None


def tensor_bytes(info: TensorInfo | None, as_dtype: str | None) -> int | None:
    """Bytes of a tensor, a float one in ``as_dtype`` when given; None: no static size."""
    if info is None:
        return None
    if as_dtype is None or info.dtype not in FLOAT_DTYPES:
        return info.nbytes
    elements, size = info.elements, dtype_size(as_dtype)
    return None if elements is None or size is None else elements * size


def stored_bytes(info: TensorInfo | None, as_dtype: str | None, layout: Layout, weight: bool) -> int | None:
    """Bytes of a tensor as ``layout`` stores it: an activation (``weight`` False) or a weight."""
    if info is None:
        return None
    shape, floating = info.shape, info.dtype in FLOAT_DTYPES
    if weight and floating and layout.bias_dtype is not None and shape is not None and len(shape) <= 1:
        as_dtype = layout.bias_dtype
    size = tensor_bytes(info, as_dtype)
    if size is None or shape is None:
        return size
    align = layout.weight_channel_align if weight else layout.channel_align
    if floating and align > 1 and len(shape) == 4:
        channels = shape[1]
        assert isinstance(channels, int)  # a static size: every dim an int
        if channels > 1 or (not weight and channels == 1):
            size = size // channels * -(-channels // align) * align
    return -(-size // layout.buffer_align) * layout.buffer_align


def partition_memory(
    facts: GraphFacts, partitions: Sequence[Partition], crossings: Iterable[BoundaryResult], constants: Collection[str],
    scoped: Sequence[ScopedNode], precision: Precision, devices: Collection[str] = (NPU,),
) -> list[PartitionMemory]:
    """The estimate of every partition whose device is in ``devices``, in partition order;
    ``crossings``: the tensors crossing partitions (``placement.partitions.boundaries``)."""
    nodes = facts.nodes
    made_by: dict[str, str] = {}  # tensor -> the node making it
    for node in nodes:
        for name in node.outputs:
            if name:
                made_by[name] = node.name
    # A tensor leaves its partition when it is a graph output or another partition reads it
    # (also through an eliminated node: the crossing names the tensor it passes on).
    leaving = {o.name for o in facts.outputs} | {b.tensor for b in crossings}
    bodies = _bodies(scoped, constants, precision)

    tensors = facts.tensors
    layout = precision.layout
    sizes: Callable[[str], int | None] = _sizes(tensors, precision.activations, layout).get  # each sized once
    if layout is None and precision.weights == precision.activations:
        weight_sizes = sizes
    else:
        weight_sizes = _sizer(tensors, precision.weights, layout, weight=True)
    overhead = layout.weight_overhead_bytes if layout is not None else 0
    out = []
    for part in partitions:
        if part.device not in devices:
            continue
        # a split node (``Partition.pieces``) counts where its first piece runs (its weights, its work)
        members = [nodes[i] for i in part.nodes if 0 in part.pieces.get(i, [0])]
        held = {n.name: _largest(bodies.get(n.name, [])) for n in members if n.subgraph_nodes}
        f = _schedule(members, sizes, weight_sizes, tensors, constants, (), None, (), leaving, made_by.get, held)
        weights = None if f.weights is None else f.weights + overhead
        out.append(PartitionMemory(part.id, weights, f.peak, f.at_peak, f.unknown_weight or f.unknown_peak))
    return out


def whole(estimates: Sequence[PartitionMemory]) -> tuple[int | None, int | None, PartitionMemory | None]:
    """The model's figures from its partitions' (each compiled on its own, one running at a
    time): (largest peak, sum of weights, the partition with the largest peak). None: a
    figure of one of them is unknown."""
    peaks = [e.peak_activation_bytes for e in estimates]
    weights = [e.weight_bytes for e in estimates]
    peak = None if None in peaks else max((p or 0 for p in peaks), default=0)
    total = None if None in weights else sum(w or 0 for w in weights)
    top = None
    if peak is not None and estimates:
        top = max(estimates, key=lambda e: e.peak_activation_bytes or 0)
    return peak, total, top


@dataclass
class _Body:
    """A control-flow body's own figures (nested bodies included)."""

    peak: int | None
    weights: int | None
    unknown_peak: str | None = None
    unknown_weight: str | None = None


def _largest(bodies: Sequence[_Body]) -> _Body:
    """One node's bodies together: the largest peak (one runs at a time), every body's weights."""
    if not bodies:
        return _Body(0, 0)
    peaks = [b.peak for b in bodies]
    weights = [b.weights for b in bodies]
    return _Body(None if None in peaks else max(p or 0 for p in peaks),
                 None if None in weights else sum(w or 0 for w in weights),
                 next((b.unknown_peak for b in bodies if b.unknown_peak), None),
                 next((b.unknown_weight for b in bodies if b.unknown_weight), None))


def _bodies(scoped: Sequence[ScopedNode], constants: Collection[str], precision: Precision) -> dict[str, list[_Body]]:
    """Each control-flow node's bodies (by the node's path: its name at the top level),
    nested bodies first so that a body's node holding a body adds that body's figures."""
    scopes: dict[str, list[ScopedNode]] = {}
    for sn in scoped:
        scopes.setdefault(sn.scope, []).append(sn)
    by_path = {sn.path: sn for sn in scoped}
    out: dict[str, list[_Body]] = {}
    for scope in reversed(list(scopes)):  # depth first: a nested scope comes after its parent's
        owner = scope.rsplit("/", 1)[0]
        parent = by_path.get(owner)
        body = _body(scope, scopes[scope], parent.constants if parent is not None else constants, precision, out)
        out.setdefault(owner, []).append(body)
    return out


def _body(
    scope: str, members: Sequence[ScopedNode], outer_constants: Collection[str], precision: Precision,
    nested: Mapping[str, list[_Body]],
) -> _Body:
    """One body's figures: its own weights (not the outer scopes' constants it reads, which
    its node reads at its level) and its schedule's peak (not the outer tensors it reads,
    live outside); ``nested``: the bodies of its nodes, already estimated."""
    first = members[0]
    running = [sn for sn in members if not sn.folded]
    held = {sn.node.name: _largest(nested.get(sn.path, [])) for sn in running if sn.node.subgraph_nodes}
    produced = {name for sn in members for name in sn.node.outputs if name}
    formal = set(first.scope_inputs)
    path_of = {name: f"{scope}/{sn.node.name}" for sn in members for name in sn.node.outputs if name}
    f = _schedule(
        [sn.node for sn in running], _sizer(first.tensors, precision.activations, precision.layout),
        _sizer(first.tensors, precision.weights, precision.layout, weight=True), first.tensors, first.constants,
        outer_constants,
        lambda n: n not in produced and n not in formal, first.scope_inputs, set(first.scope_outputs),
        path_of.get, held)
    return _Body(f.peak, f.weights, f.unknown_peak, f.unknown_weight)


@dataclass
class _Figures:
    peak: int | None
    weights: int | None
    at_peak: list[LiveEntry]
    unknown_peak: str | None
    unknown_weight: str | None


def _schedule(
    nodes: Sequence[NodeFacts], size_of: Callable[[str], int | None], weight_size: Callable[[str], int | None],
    tensors: Mapping[str, TensorInfo], constants: Collection[str], outer_constants: Collection[str],
    is_outer: Callable[[str], bool] | None, live_first: Iterable[str], leaving: Collection[str],
    producer: Callable[[str], str | None], held: Mapping[str, _Body],
) -> _Figures:
    """The figures of ``nodes`` run in order, in one pass over their reads: the distinct
    weights (``constants`` not in ``outer_constants``, whose scope counts them) and the peak of
    the live activations, with the largest tensors live at it.

    ``is_outer``: names an enclosing scope keeps live (a body's reads from outside), not
    counted here; ``live_first``: live from the first step (a body's own inputs); ``held``:
    the bodies a control-flow node holds while it runs, by the node's name."""
    last = len(nodes) - 1
    start: dict[str, int] = {}
    end: dict[str, int] = {}  # steps only grow: the last write is the last use
    kept: list[str] = []
    seen: set[str] = set()  # weights counted
    weights: int | None = 0
    unknown_weight: str | None = None
    for name in live_first:
        if name and name not in constants:
            start[name] = end[name] = 0
    for step, node in enumerate(nodes):
        for name in (*node.inputs, *node.implicit_inputs) if node.implicit_inputs else node.inputs:
            if not name:
                continue
            if name in constants:
                if name not in seen and unknown_weight is None and name not in outer_constants:
                    seen.add(name)
                    size = weight_size(name)
                    if size is None:
                        weights, unknown_weight = None, _no_size(name, tensors.get(name), "weight")
                    elif weights is not None:
                        weights += size
                continue
            if name not in start:
                if is_outer is not None and is_outer(name):
                    continue
                start[name] = 0  # arrives from outside: live from the start
            end[name] = step
        for name in node.outputs:
            if name:
                start[name] = end[name] = step
                if name in leaving:
                    kept.append(name)
    for name in kept:  # leaves the partition: live to its end (not a tensor only arriving)
        end[name] = last
    for body in held.values():  # every body's weights are stored
        weights = None if weights is None or body.weights is None else weights + body.weights
        unknown_weight = unknown_weight or body.unknown_weight
    delta = [0] * (len(nodes) + 2)
    sizes: list[tuple[int, str]] = []
    for name, first in start.items():
        size = size_of(name)
        if size is None:
            return _Figures(None, weights, [], _no_size(name, tensors.get(name), "activation"), unknown_weight)
        sizes.append((size, name))
        delta[first] += size
        delta[end[name] + 1] -= size
    peak, peak_step, live = -1, 0, 0
    for step, node in enumerate(nodes):
        live += delta[step]
        here = live
        if held and (inner := held.get(node.name)) is not None:
            if inner.peak is None:
                return _Figures(None, weights, [], inner.unknown_peak, unknown_weight)
            here += inner.peak
        if here > peak:
            peak, peak_step = here, step
    if not nodes:
        return _Figures(0, weights, [], None, unknown_weight)
    # Only the few largest get their producer looked up (a partition can hold thousands).
    live_at = [(-size, name) for size, name in sizes if start[name] <= peak_step <= end[name]]
    top = heapq.nsmallest(AT_PEAK, live_at) if len(live_at) > AT_PEAK else sorted(live_at)
    at_peak: list[LiveEntry] = [{"tensor": name, "bytes": -size, "producer": producer(name)} for size, name in top]
    return _Figures(peak, weights, at_peak, None, unknown_weight)


def _sizes(tensors: Mapping[str, TensorInfo], as_dtype: str | None, layout: Layout | None) -> dict[str, int | None]:
    """Every activation's bytes, by name."""
    if layout is None:
        return {name: tensor_bytes(info, as_dtype) for name, info in tensors.items()}
    return {name: stored_bytes(info, as_dtype, layout, weight=False) for name, info in tensors.items()}


def _sizer(tensors: Mapping[str, TensorInfo], as_dtype: str | None, layout: Layout | None,
           weight: bool = False) -> Callable[[str], int | None]:
    """Bytes by name, each tensor sized once (a body's tensors can be many more than it reads)."""
    cache: dict[str, int | None] = {}

    def size_of(name: str) -> int | None:
        if name in cache:
            return cache[name]
        info = tensors.get(name)
        size = cache[name] = (tensor_bytes(info, as_dtype) if layout is None
                              else stored_bytes(info, as_dtype, layout, weight))
        return size

    return size_of


def _no_size(name: str, info: TensorInfo | None, kind: str) -> str:
    if info is None or info.shape is None:
        return f"{kind} tensor {name} has no known shape"
    if not info.static:
        shape = ", ".join("?" if d is None else str(d) for d in info.shape)
        return f"{kind} tensor {name} has no static shape ([{shape}])"
    return f"{kind} tensor {name} has no fixed-size dtype ({info.dtype})"
