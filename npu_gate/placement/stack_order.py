"""A refusal that depends on the order of the nodes in the file: RKNN-Toolkit2 2.5.0's
``remove_concat_slice`` crash on stacked paths (basic-pitch's CQT, docs/rknn.md).

The toolkit rewrites the graph greedily: its rules run in sweeps, each walking the node list in
file order. Where tf.stack pairs of paths (Reshape -> Unsqueeze, some through a Transpose that
the Reshape only gives or takes unit dims) are concatenated into a chain of Concats read by a
Slice and a Transpose, the file's order decides which rule takes each stack first:

- a path's Reshape is folded into its Unsqueeze when a sweep meets it (``fuse_two_reshape``);
- a stack's Concat met once all its Reshapes are folded, and none of its Transposes folded into
  them, is rewritten (``reduce_reshape_op_around_concat``) and the sweep ends there;
- a Transpose met whose Reshape was folded in an earlier sweep takes it (``fuse_transpose_reshape``):
  that stack can no longer be rewritten, it feeds Transposes straight into the chain ("left
  transposed"), and the sweep goes on after that Reshape's place;
- a rewritten stack whose Transposes outnumber its other paths by more than one has them moved
  through its Concat (``reduce_tp_in_mesh_forward``) when a sweep meets the first of them before
  that sweep has changed anything (the toolkit tries its mesh rules only then); the Concat and the
  one moved Transpose then stand after the last of them, where the sweep goes on: the Transposes
  of other stacks in between are passed over.

``reduce_tp_in_mesh_forward`` then moves the left-transposed stacks' Transposes through the chain,
the Slice and into the tail Transpose when that removes more Transposes than it must add on the
chain's other inputs; the ones it adds have no shape yet, and ``remove_concat_slice`` indexes it:
``IndexError: list index out of range``, the build fails. With another reader than a Transpose
after the Slice the move happens but the build goes on.

This is a model of the toolkit's sweeps read off its rule trace, not the toolkit's code: measured
exact on 162 hand-built cases (three node orders of 27 stack combinations, Transpose or Relu tail;
``stacked_octaves`` in tests/helpers/cleanup_models.py), on basic-pitch, on the 48 random valid
orders of ``reordered_octaves`` and on 84 more drawn after the model was settled (docs/rknn.md).
Each match is one ``compiler-will-refuse`` of the profile's ``refuses`` graph condition
``stacked-concat-slice-order``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npu_gate.graph.facts import GraphFacts, NodeFacts
from npu_gate.placement.neighbours import Neighbours

_MAX_SWEEPS = 1000  # each sweep that changes something folds, rewrites or takes at least one node


@dataclass
class _Path:
    reshape: NodeFacts
    transpose: NodeFacts | None  # the Transpose the Reshape reads (a transposed path), else None
    unit_move: bool  # Reshape + Unsqueeze only add or drop dims of 1


@dataclass
class _Stack:
    concat: NodeFacts
    paths: list[_Path] = field(default_factory=list)

    @property
    def transposed(self) -> int:
        return sum(1 for p in self.paths if p.transpose is not None)


def _axis(graph: Neighbours, concat: NodeFacts) -> int | None:
    """A Concat's axis counted from the front (None: its output's rank is not known)."""
    axis = concat.attributes.get("axis")
    shape = graph.static_shape(concat.outputs[0]) if concat.outputs else None
    if not isinstance(axis, int) or shape is None:
        return None
    return axis + len(shape) if axis < 0 else axis


def stacked_concat_slice_refusals(facts: GraphFacts, folded: set[int] | frozenset[int] = frozenset()) -> list[str]:
    """The names of the Concats heading a stacked Concat -> Slice -> Transpose tail that the toolkit's
    sweeps, in this file's node order, leave to crash ``remove_concat_slice``."""
    graph = Neighbours.of(facts, folded)
    found = []
    for sl in facts.nodes:
        if sl.key != "Slice" or sl.index in graph.folded or not sl.inputs or not sl.outputs:
            continue
        tail = graph.only_reader(sl.outputs[0])
        head = graph.writer(sl.inputs[0])
        if tail is None or tail.key != "Transpose" or head is None or head.key != "Concat":
            continue
        if graph.only_reader(sl.inputs[0]) is not sl or _axis(graph, head) is None:
            continue
        leaves = _chain_inputs(graph, head, _axis(graph, head))
        stacks = [s for s in (_stack(graph, graph.writer(name)) for name in leaves) if s is not None]
        if len(stacks) < 2:
            continue
        left = _left_transposed(stacks, graph)
        removed = sum(s.transposed for s in left)
        added = len(leaves) - len(left) + sum(1 for s in left for p in s.paths
                                              if p.transpose is None and not p.unit_move)
        if left and removed > added:
            found.append(head.name)
    return found


def _chain_inputs(graph: Neighbours, concat: NodeFacts, axis: int | None) -> list[str]:
    """The inputs of a chain of Concats on ``axis``, each read only by the next (merged into one)."""
    out = []
    for name in concat.inputs:
        producer = graph.writer(name)
        if producer is not None and producer.key == "Concat" and _axis(graph, producer) == axis \
                and graph.only_reader(name) is concat:
            out += _chain_inputs(graph, producer, axis)
        else:
            out.append(name)
    return out


def _stack(graph: Neighbours, concat: NodeFacts | None) -> _Stack | None:
    """A tf.stack as tf2onnx writes it: a Concat on axis a of Unsqueezes at a of Reshapes, each read once."""
    if concat is None or concat.key != "Concat" or len(concat.inputs) < 2:
        return None
    axis = _axis(graph, concat)
    stack = _Stack(concat)
    for name in concat.inputs:
        unsqueeze = graph.writer(name)
        if unsqueeze is None or unsqueeze.key != "Unsqueeze" or graph.only_reader(name) is not concat:
            return None
        before, after = graph.static_shape(unsqueeze.inputs[0]), graph.static_shape(name)
        if axis is None or before is None or after is None or len(after) != len(before) + 1 \
                or after[axis] != 1 or after[:axis] + after[axis + 1:] != before:
            return None
        reshape = graph.writer(unsqueeze.inputs[0])
        if reshape is None or reshape.key != "Reshape" or graph.only_reader(unsqueeze.inputs[0]) is not unsqueeze:
            return None
        source = graph.writer(reshape.inputs[0])
        start = graph.static_shape(reshape.inputs[0])
        moves = start is not None and [d for d in start if d != 1] == [d for d in after if d != 1]
        transposed = source is not None and source.key == "Transpose" and moves \
            and graph.only_reader(reshape.inputs[0]) is reshape
        stack.paths.append(_Path(reshape, source if transposed else None, moves))
    return stack


def _left_transposed(stacks: list[_Stack], graph: Neighbours) -> list[_Stack]:
    """The stacks the toolkit's sweeps (module docstring) leave feeding Transposes into the chain."""
    events: list[tuple[float, str, int, int]] = []  # (file position, kind, stack, path)
    after_move: dict[int, float] = {}  # a stack whose Transposes move: where its Concat then stands
    for s, stack in enumerate(stacks):
        events.append((stack.concat.index, "concat", s, -1))
        for j, path in enumerate(stack.paths):
            events.append((path.reshape.index, "reshape", s, j))
            if path.transpose is not None:
                events.append((path.transpose.index, "transpose", s, j))
        if stack.transposed > 1 + len(stack.paths) - stack.transposed:
            sources = [graph.writer(p.reshape.inputs[0]) for p in stack.paths]
            after_move[s] = max(n.index if n is not None else -1 for n in sources) + 0.5
            first = min(p.transpose.index for p in stack.paths if p.transpose is not None)
            events.append((first, "move", s, -1))
    events.sort()
    reshape_at = {(s, j): at for at, kind, s, j in events if kind == "reshape"}
    folded_in: dict[tuple[int, int], int] = {}  # (stack, path) -> the sweep its Reshape was folded in
    taken: set[tuple[int, int]] = set()  # Transposes that took their Reshape
    moved: set[int] = set()  # rewritten stacks whose Transposes were moved through their Concat
    state = ["pending"] * len(stacks)
    for sweep in range(_MAX_SWEEPS):
        changed, skip_to = False, -1.0
        for at, kind, s, j in events:
            if at <= skip_to:
                continue
            if state[s] == "rewritten":
                if kind == "move" and s not in moved and not changed:
                    moved.add(s)
                    changed, skip_to = True, after_move[s]
                continue
            if kind == "reshape" and (s, j) not in folded_in:
                folded_in[(s, j)], changed = sweep, True
            elif kind == "transpose" and folded_in.get((s, j), sweep) < sweep and (s, j) not in taken:
                taken.add((s, j))
                state[s], changed, skip_to = "left", True, reshape_at[(s, j)]
            elif kind == "concat" and state[s] == "pending" and all(
                    (s, k) in folded_in for k in range(len(stacks[s].paths))):
                state[s], changed = "rewritten", True
                break
        if not changed:
            break
    return [stack for stack, st in zip(stacks, state, strict=True) if st == "left"]
