"""The compiler's clean-up before placement: the nodes a target removes or merges away.

A profile's ``eliminates`` (schemas/profile.schema.json, docs/target-profiles.md#eliminates)
lists, per op, when the target's compiler drops a node before it places anything: such a
node becomes ``eliminated`` (neither NPU nor CPU) and takes no part in partitions, which are
counted after this pass. Conditions (``when``):

- ``always``: every node of the op (Identity, Dropout in inference);
- ``same-dtype``: a Cast whose input already has its ``to`` dtype;
- ``reshape-chain``: a reshape-like node (Reshape, Flatten, Squeeze, Unsqueeze) whose output
  is read only by reshape-like nodes of the chain (the compiler merges consecutive reshapes
  into the last one), and the last one too when the chain ends in its first input's shape;
- ``inverse-transpose-pair``: a Transpose whose only reader is a Transpose that undoes it
  (both go);
- ``around-transpose``: a Reshape on either side of a Reshape -> Transpose -> Reshape
  triplet (a channel shuffle), each read only by the next: the compiler keeps the Transpose
  (or merges all three into a Conv before it);
- ``into-gemm``: a node whose output only Gemm nodes read (a Flatten before a classifier's
  Gemm: the compiler's Gemm takes the unflattened tensor);
- ``into-conv``: a BatchNormalization, or a Mul or Add by a constant that is a scalar or one
  value per channel, whose data input is a Conv's output that only it reads (the compiler folds
  it into the Conv's weights and bias: RKNN's ``fuse_bn_into_conv``, ``fuse_mul_into_conv``,
  ``fuse_add_into_conv``); between the Conv and the node there may be others the Conv absorbs
  first, each read only by the next: Identity nodes the profile eliminates ``always``, and
  nodes this condition holds for under the profile's other ``into-conv`` entries (paddle2onnx's
  Conv -> Add bias -> Identity -> Mul scale -> Identity -> Add shift);
- ``into-transpose``: a Reshape from a static 4-D tensor to rank 2 or 3 whose only reader is
  a Transpose that really moves data (its perm changes the order of the dims above 1): the
  compiler merges the Reshape into the Transpose (RKNN's ``fuse_two_reshape`` after
  ``swap_reshape_transpose_v2``); a Transpose that only moves dims of 1 is a reshape itself,
  and the two stay one Reshape;
- ``identity``: a node that returns its input unchanged: a BatchNormalization whose constant
  scale, bias, mean and variance are 1, 0, 0 and 1 (its epsilon not looked at), a Mul by a
  constant 1 or an Add of a constant 0 (the constant the second input: the compiler keeps
  Mul(1, x) and Add(0, x)), a Concat of one input, a Slice that keeps the whole tensor;
- ``float-to-float``: a Cast from float32 or float16 to float32 or float16 (the target
  computes in float16: the Cast changes nothing there).

Only nodes the placement neither folded nor matched in a fusion pattern are considered; a
graph output is never eliminated (a graph output must be written by some op).

An elimination is not always exact: the ``identity`` test of a BatchNormalization does not look
at its epsilon (the compiler does not either: measured, docs/rknn.md), but such a node computes
y = x / sqrt(1 + epsilon). ``eliminate`` lists those whose relative change 1 - 1/sqrt(1 + epsilon)
is above ``NUMERICS_THRESHOLD`` (``NumericChange``: the ``eliminated-changes-numerics`` finding).
The other eliminations are exact for the values they test (a Mul by a constant exactly 1, a
one-input Concat, a float32 -> float32 Cast, ...); ``into-conv`` folds the node into the Conv's
weights with its epsilon, which changes nothing either (measured on a Conv -> BN of epsilon 0.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from npu_gate.graph.facts import GraphFacts, NodeFacts, dtype_name
from npu_gate.placement.place import Placement
from npu_gate.result.types import ELIMINATED, FOLDED

if TYPE_CHECKING:
    import numpy as np
    from onnx import ModelProto

RESHAPE_LIKE = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
FLOATS = frozenset({"float32", "float16"})
_MAX_ELEMENTS = 1 << 16  # constants read for the identity test (a BatchNormalization's parameters)
BN_EPSILON = 1e-5  # ONNX's default BatchNormalization epsilon (PyTorch's nn.BatchNorm2d eps too)
# A relative change of an eliminated node's output above this is a finding. The targets compute
# in float16 (unit roundoff 2**-11 = 4.9e-4), so a change of two roundoffs is the smallest one the
# build's own arithmetic does not hide; RKNN's simulator differed from onnxruntime by a relative L2
# of 1.8e-4 to 3.0e-4 on Conv/Relu -> BatchNormalization -> Relu models whose clean-up is exact.
NUMERICS_THRESHOLD = 1e-3


@dataclass(frozen=True)
class NumericChange:
    """A node the compiler removes although it is not an exact no-op for this model."""

    node: str
    op_type: str
    when: str  # the eliminates entry's condition
    epsilon: float
    relative_change: float  # 1 - 1/sqrt(1 + epsilon): how much smaller the model's output is than the build's
    evidence: str  # the eliminates entry's
    doc: str | None


class _Constants:
    """Values of the main graph's weights and Constant node outputs, read when first asked, also
    through Identity nodes (the TorchScript exporter writes a BatchNormalization's running mean as
    an Identity of its bias when both are zeros)."""

    def __init__(self, model: ModelProto | None, weights: set[str]) -> None:
        self._model = model
        self._weights = weights
        self._values: dict[str, np.ndarray | None] = {}
        self._tensors: dict[str, Any] | None = None
        self._identity: dict[str, str] = {}

    def __call__(self, name: str) -> np.ndarray | None:
        if name not in self._values:
            self._values[name] = self._read(name)
        return self._values[name]

    def _read(self, name: str) -> np.ndarray | None:
        import math

        from onnx import TensorProto, numpy_helper

        if self._model is None:
            return None
        if self._tensors is None:
            self._tensors = {i.name: i for i in self._model.graph.initializer if i.name in self._weights}
            for node in self._model.graph.node:
                if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
                    value = next((a.t for a in node.attribute if a.name == "value"), None)
                    if value is not None:
                        self._tensors[node.output[0]] = value
                elif node.op_type == "Identity" and node.domain in ("", "ai.onnx") and node.input and node.output:
                    self._identity[node.output[0]] = node.input[0]
        seen = {name}
        while name in self._identity and self._identity[name] not in seen:
            name = self._identity[name]
            seen.add(name)
        tensor = self._tensors.get(name)
        if tensor is None or tensor.data_location == TensorProto.EXTERNAL or math.prod(tensor.dims) > _MAX_ELEMENTS:
            return None
        try:
            return numpy_helper.to_array(tensor)
        except Exception:  # malformed data: the onnx-checker finding says so
            return None


@dataclass(frozen=True)
class _Graph:
    facts: GraphFacts
    readers: Mapping[str, list[NodeFacts]]  # tensor -> the nodes reading it
    made_by: Mapping[str, NodeFacts]  # tensor -> the node writing it
    by_op: Mapping[str, list[dict[str, Any]]]  # op -> its rules
    constants: _Constants = field(default_factory=lambda: _Constants(None, set()))


def eliminate(facts: GraphFacts, rules: list[dict[str, Any]] | None, placements: list[Placement],
              model: ModelProto | None = None, changes: list[NumericChange] | None = None) -> int:
    """Mark the nodes ``rules`` (a profile's ``eliminates``) say the compiler removes as
    ``eliminated``, with the rule as reason; returns how many. ``model``: where the ``identity``
    and ``into-conv`` tests read constants (without it they never hold). ``changes``: appended
    to, in graph order, for each eliminated node that is not an exact no-op (``numeric_change``)."""
    if not rules:
        return 0
    by_op: dict[str, list[dict[str, Any]]] = {}
    for rule in rules:
        by_op.setdefault(rule["op"], []).append(rule)
    graph = _Graph(facts, _readers(facts.nodes), {o: n for n in facts.nodes for o in n.outputs if o}, by_op,
                   _Constants(model, facts.initializers))
    outputs = {o.name for o in facts.outputs}
    count = 0
    for node in facts.nodes:
        placed = placements[node.index]
        if placed.device == FOLDED or placed.fused is not None or node.domain not in ("", "ai.onnx"):
            continue  # folded, or part of a profile pattern the target fuses
        if any(o in outputs for o in node.outputs):
            continue
        for rule in by_op.get(node.op_type, []):
            if _holds(rule["when"], node, graph):
                placements[node.index] = Placement(
                    ELIMINATED, [f"eliminated by the compiler ({rule['when']}): {rule['evidence']}"])
                count += 1
                change = numeric_change(node, rule)
                if change is not None and changes is not None:
                    changes.append(change)
                break
    return count


def numeric_change(node: NodeFacts, rule: Mapping[str, Any]) -> NumericChange | None:
    """What removing ``node`` by ``rule`` (which holds for it) changes, when that is above
    ``NUMERICS_THRESHOLD``: a BatchNormalization of parameters 1/0/0/1 removed as an ``identity``
    computes x / sqrt(1 + epsilon), not x. None: the elimination is exact (or close enough)."""
    import math

    if rule["when"] != "identity" or node.op_type != "BatchNormalization":
        return None
    epsilon = node.attributes.get("epsilon", BN_EPSILON)
    if not isinstance(epsilon, (int, float)) or epsilon <= -1:
        return None
    change = 1 - 1 / math.sqrt(1 + epsilon)
    if abs(change) <= NUMERICS_THRESHOLD:
        return None
    return NumericChange(node.name, node.op_type, rule["when"], float(epsilon), change, rule["evidence"],
                         rule.get("doc"))


def _readers(nodes: list[NodeFacts]) -> dict[str, list[NodeFacts]]:
    out: dict[str, list[NodeFacts]] = {}
    for node in nodes:
        for name in {*node.inputs, *node.implicit_inputs}:
            if name:
                out.setdefault(name, []).append(node)
    return out


def _holds(when: str, node: NodeFacts, graph: _Graph) -> bool:
    if when == "always":
        return True
    if when == "same-dtype":
        source = graph.facts.tensors.get(node.inputs[0]) if node.inputs else None
        to = node.attributes.get("to")
        return (source is not None and source.dtype is not None and isinstance(to, int)
                and dtype_name(to) == source.dtype)
    if when == "reshape-chain":
        return _in_reshape_chain(node, graph)
    if when == "around-transpose":
        return _shuffle_end(node, graph)
    if when == "into-gemm":
        after = graph.readers.get(node.outputs[0], []) if node.outputs else []
        return bool(after) and all(r.op_type == "Gemm" and r.domain in ("", "ai.onnx") for r in after)
    if when == "into-conv":
        return _into_conv(node, graph)
    if when == "into-transpose":
        return _into_transpose(node, graph)
    if when == "identity":
        return _identity(node, graph)
    if when == "float-to-float":
        source = graph.facts.tensors.get(node.inputs[0]) if node.inputs else None
        to = node.attributes.get("to")
        return (node.op_type == "Cast" and source is not None and source.dtype in FLOATS and isinstance(to, int)
                and dtype_name(to) in FLOATS)
    if when == "inverse-transpose-pair":
        before = graph.made_by.get(node.inputs[0]) if node.inputs else None
        return _inverse_pair(node, graph.readers) or (before is not None and _inverse_pair(before, graph.readers))
    return False


def _chained(node: NodeFacts | None, graph: _Graph) -> bool:
    return (node is not None and node.op_type in RESHAPE_LIKE and node.domain in ("", "ai.onnx")
            and bool(node.outputs) and any(r["when"] == "reshape-chain" for r in graph.by_op.get(node.op_type, [])))


def _in_reshape_chain(node: NodeFacts, graph: _Graph) -> bool:
    after = graph.readers.get(node.outputs[0], []) if node.outputs else []
    if after and all(_chained(r, graph) for r in after):
        return True  # merged into the reshape(s) reading it
    # The last of a chain: gone too when the chain ends in the shape it started from.
    first = node
    seen = {node.index}
    while True:
        before = graph.made_by.get(first.inputs[0]) if first.inputs else None
        if before is None or not _chained(before, graph) or before.index in seen \
                or len(graph.readers.get(before.outputs[0], [])) != 1:
            break
        first = before
        seen.add(first.index)
    if first is node:
        return False
    start, end = graph.facts.tensors.get(first.inputs[0]), graph.facts.tensors.get(node.outputs[0])
    return start is not None and end is not None and start.static and end.static and start.shape == end.shape


def _only_reader(node: NodeFacts, graph: _Graph, op: str) -> NodeFacts | None:
    after = graph.readers.get(node.outputs[0], []) if node.outputs else []
    return after[0] if len(after) == 1 and after[0].op_type == op else None


def _shuffle_end(node: NodeFacts, graph: _Graph) -> bool:
    """``node`` is the first or the last Reshape of a Reshape -> Transpose -> Reshape triplet."""
    if node.op_type != "Reshape":
        return False
    transpose = _only_reader(node, graph, "Transpose")
    if transpose is not None and _only_reader(transpose, graph, "Reshape") is not None:
        return True
    before = graph.made_by.get(node.inputs[0]) if node.inputs else None
    if before is None or before.op_type != "Transpose" or _only_reader(before, graph, "Reshape") is not node:
        return False
    first = graph.made_by.get(before.inputs[0]) if before.inputs else None
    return first is not None and first.op_type == "Reshape" and _only_reader(first, graph, "Transpose") is before


def _inverse_pair(node: NodeFacts, readers: Mapping[str, list[NodeFacts]]) -> bool:
    """``node`` is a Transpose read only by one Transpose whose perm undoes its perm."""
    if node.op_type != "Transpose" or not node.outputs:
        return False
    after = readers.get(node.outputs[0], [])
    if len(after) != 1 or after[0].op_type != "Transpose":
        return False
    first, second = node.attributes.get("perm"), after[0].attributes.get("perm")
    if not isinstance(first, list) or not isinstance(second, list) or len(first) != len(second):
        return False
    return [first[p] for p in second] == list(range(len(first)))


def _whole_slice(node: NodeFacts, graph: _Graph) -> bool:
    """A Slice (opset 10+: starts, ends, axes, steps as inputs) that keeps every element of a static
    input: on each sliced axis it starts at 0 (or -dim), ends at the dim or past it, with step 1."""
    source = graph.facts.tensors.get(node.inputs[0]) if node.inputs else None
    if source is None or not source.static or source.shape is None or not 3 <= len(node.inputs) <= 5:
        return False
    shape = source.shape
    lists: list[list[Any] | None] = []
    for name in node.inputs[1:]:
        value = graph.constants(name) if name else None
        if name and value is None:
            return False  # a computed start, end, axis or step
        lists.append(value.ravel().tolist() if value is not None else None)
    lists += [None] * (4 - len(lists))
    starts, ends, axes, steps = lists
    if starts is None or ends is None:
        return False
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        return False
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        if not isinstance(axis, int) or not -len(shape) <= axis < len(shape) or step != 1:
            return False
        dim = shape[axis]
        if not isinstance(dim, int) or start not in (0, -dim) or end < dim:
            return False
    return True


def _constant_operand(node: NodeFacts, graph: _Graph) -> tuple[str, np.ndarray] | None:
    """(the other input, the constant's value) of a two-input node with exactly one constant input."""
    if len(node.inputs) != 2:
        return None
    values = [graph.constants(name) if name else None for name in node.inputs]
    if (values[0] is None) == (values[1] is None):
        return None
    k = 0 if values[0] is not None else 1
    value = values[k]
    assert value is not None
    return node.inputs[1 - k], value


AFFINE = frozenset({"Mul", "Add"})  # folded into a Conv by a scalar or per-channel constant


def _into_conv(node: NodeFacts, graph: _Graph) -> bool:
    data = _affine_data(node, graph)
    current, seen = node, {node.index}
    while data is not None:  # back through what the Conv absorbs first, each read only by the next
        before = graph.made_by.get(data)
        if before is None or before.index in seen or before.domain not in ("", "ai.onnx") \
                or [r.index for r in graph.readers.get(data, [])] != [current.index]:
            return False
        if before.op_type == "Conv":
            return True
        seen.add(before.index)
        if before.op_type == "Identity":
            absorbed = any(r["when"] == "always" for r in graph.by_op.get("Identity", []))
            data = before.inputs[0] if absorbed and before.inputs else None
        elif any(r["when"] == "into-conv" for r in graph.by_op.get(before.op_type, [])):
            data = _affine_data(before, graph)
        else:
            data = None
        current = before
    return False


def _affine_data(node: NodeFacts, graph: _Graph) -> str | None:
    """The data input of a BatchNormalization, or of a Mul / Add by a constant that is a scalar
    or one value per channel; None for other nodes."""
    if node.op_type == "BatchNormalization":
        return node.inputs[0] if node.inputs else None
    if node.op_type not in AFFINE:
        return None
    operand = _constant_operand(node, graph)
    if operand is None:
        return None
    data, value = operand
    out = graph.facts.tensors.get(node.outputs[0]) if node.outputs else None
    if out is None or not out.static or out.shape is None or len(out.shape) < 2:
        return None
    shape = [1] * (len(out.shape) - value.ndim) + list(value.shape)
    if len(shape) != len(out.shape) or any(d != 1 for i, d in enumerate(shape) if i != 1):
        return None  # not a scalar nor one value per channel
    source = graph.facts.tensors.get(data)
    if source is not None and source.static and source.shape != out.shape:
        return None  # the constant broadcasts the data to another shape
    return data


def _into_transpose(node: NodeFacts, graph: _Graph) -> bool:
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return False
    transpose = _only_reader(node, graph, "Transpose")
    source, out = graph.facts.tensors.get(node.inputs[0]), graph.facts.tensors.get(node.outputs[0])
    if transpose is None or transpose.domain not in ("", "ai.onnx") or source is None or out is None \
            or not source.static or not out.static or source.shape is None or out.shape is None \
            or len(source.shape) != 4 or len(out.shape) not in (2, 3):
        return False
    perm = transpose.attributes.get("perm")
    if perm is None:
        perm = list(reversed(range(len(out.shape))))
    if not isinstance(perm, list) or sorted(perm) != list(range(len(out.shape))):
        return False
    moved = [p for p in perm if out.shape[p] != 1]
    return moved != sorted(moved)  # the order of the dims above 1 changes: a real transpose


def _identity(node: NodeFacts, graph: _Graph) -> bool:
    if node.op_type == "Concat":
        return len([i for i in node.inputs if i]) == 1
    if node.op_type in ("Mul", "Add"):
        # the constant second only: RKNN kept Mul(1, x) and Add(0, x) (mul-one-by-tensor, add-zero-first)
        operand = _constant_operand(node, graph)
        if operand is None or operand[0] != node.inputs[0]:
            return False
        data, value = operand
        source, out = graph.facts.tensors.get(data), graph.facts.tensors.get(node.outputs[0])
        neutral = 1 if node.op_type == "Mul" else 0
        # broadcasting the constant must not change the shape either
        return (value.size > 0 and bool((value == neutral).all()) and source is not None and out is not None
                and source.static and source.shape == out.shape)
    if node.op_type == "Slice":
        return _whole_slice(node, graph)
    if node.op_type == "BatchNormalization" and len(node.inputs) >= 5 and sum(1 for o in node.outputs if o) == 1:
        params = [graph.constants(name) for name in node.inputs[1:5]]
        return all(p is not None and p.size > 0 and bool((p == want).all())
                   for p, want in zip(params, (1, 0, 0, 1), strict=True))
    return False
