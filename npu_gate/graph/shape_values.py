"""Element-wise values of shape tensors, to say exactly which dims keep a chain dynamic.

``Shape(y)`` of ``[batch, 4, 16, 16]`` followed by ``Gather(2)`` yields the static 16: only
elements that carry a symbolic dim into the consumer's input keep a chain dynamic. Each
element is a number or the set of (Shape node, tensor, dim, symbol) it depends on. Only
scalars and 1-D tensors and the ops shape arithmetic uses are evaluated; anything else is
"not evaluable" and the caller falls back to the Shape nodes' non-static dims.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

from onnx import GraphProto, ModelProto, TensorProto, numpy_helper

from npu_gate.graph.facts import NodeFacts, TensorInfo
from npu_gate.graph.fold import shape_extent
from npu_gate.graph.fold_budget import FoldBudget

Prov = tuple[int, str, int, str | None]  # (Shape node index, tensor, dim, symbol)
Elem = int | float | frozenset[Prov]
Value = tuple[int, list[Elem]]  # (rank 0 or 1, elements)

_MAX_ELEMENTS = 64
_FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
_BINARY = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Mod"}
_PASS = {"Identity", "Cast", "Floor", "Ceil", "Abs", "Neg"}
_REDUCE = {"ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin"}


def initializer_values(graph: GraphProto, weights: Collection[str] | None = None) -> dict[str, Value]:
    """Small scalar/1-D initializers that are in memory (external weights are not). ``weights``:
    the initializers that are weights (``GraphFacts.initializers``); the others are inputs a
    caller may feed (IR >= 4), whose initializer is only a default: their value is not known."""
    out: dict[str, Value] = {}
    for init in graph.initializer:
        if weights is not None and init.name not in weights:
            continue
        if len(init.dims) > 1 or math.prod(init.dims) > _MAX_ELEMENTS:
            continue
        if init.data_location == TensorProto.EXTERNAL or init.data_type == TensorProto.STRING:
            continue
        try:
            values = numpy_helper.to_array(init).reshape(-1).tolist()
        except Exception:
            continue
        out[init.name] = (len(init.dims), [v for v in values if isinstance(v, (int, float))])
    return out


def _constant(node: NodeFacts) -> Value | None:
    attrs = node.attributes
    if "value" in attrs and isinstance(attrs["value"], dict) and "values" in attrs["value"]:
        dims = attrs["value"]["dims"]
        values = attrs["value"]["values"]
        if len(dims) <= 1 and all(isinstance(v, (int, float)) for v in values):
            return len(dims), list(values)
    for key, rank in (("value_int", 0), ("value_float", 0), ("value_ints", 1), ("value_floats", 1)):
        if key in attrs:
            raw = attrs[key]
            return rank, list(raw) if isinstance(raw, list) else [raw]
    return None


class Evaluator:
    """Values of the tensors produced by ``members`` (node indices), memoised."""

    def __init__(
        self,
        nodes: list[NodeFacts],
        made_by: dict[str, int],
        tensors: dict[str, TensorInfo],
        consts: dict[str, Value],
    ) -> None:
        self.nodes = nodes
        self.made_by = made_by
        self.tensors = tensors
        self.consts = consts
        self.memo: dict[str, Value | None] = {}

    def value(self, name: str) -> Value | None:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = None  # cycles (invalid graphs) end as "not evaluable"
        result: Value | None
        if name in self.consts:
            result = self.consts[name]
        elif name in self.made_by:
            node = self.nodes[self.made_by[name]]
            try:
                result = self._eval(node) if node.outputs and node.outputs[0] == name else None
            except (ArithmeticError, IndexError, ValueError, TypeError):
                result = None
        else:
            result = None
        self.memo[name] = result
        return result

    def _inputs(self, node: NodeFacts) -> list[Value | None]:
        return [self.value(n) if n else None for n in node.inputs]

    def _eval(self, node: NodeFacts) -> Value | None:
        op = node.op_type
        if node.domain != "":
            return None
        if op == "Constant":
            return _constant(node)
        if op in ("Shape", "Size"):
            return self._shape(node)
        args = self._inputs(node)
        first = args[0] if args else None
        if op in _PASS and first is not None:
            if op == "Cast" and node.attributes.get("to") in _FLOAT_TYPES:
                return first[0], [float(e) if isinstance(e, int) else e for e in first[1]]
            if op in ("Floor", "Ceil", "Abs", "Neg"):
                return first[0], [
                    e if isinstance(e, frozenset) else _unary(op, e) for e in first[1]
                ]
            return first
        if op == "Unsqueeze" and first is not None and first[0] == 0:
            return 1, first[1]
        if op == "Squeeze" and first is not None and first[0] == 1 and len(first[1]) == 1:
            return 0, first[1]
        if op == "Reshape" and first is not None and len(args) > 1 and args[1] is not None:
            target = args[1][1]
            return (len(target), first[1]) if len(target) <= 1 else None
        if op == "Concat" and all(a is not None and a[0] == 1 for a in args):
            return 1, [e for a in args if a is not None for e in a[1]]
        if op == "Gather" and first is not None and len(args) > 1 and args[1] is not None:
            if first[0] != 1 or int(node.attributes.get("axis", 0)) not in (0, -1):
                return None
            indices = args[1]
            if any(not isinstance(i, int) for i in indices[1]):
                return None
            return indices[0], [first[1][i] for i in indices[1] if isinstance(i, int)]
        if op == "Slice" and first is not None and first[0] == 1:
            return self._slice(first, args[1:])
        if op in _BINARY and len(args) == 2 and args[0] is not None and args[1] is not None:
            return _binary(op, args[0], args[1])
        if op in _REDUCE and first is not None:
            return _reduce(op, first, node)
        return None

    def _shape(self, node: NodeFacts) -> Value | None:
        tensor = node.inputs[0] if node.inputs else ""
        info = self.tensors.get(tensor)
        if info is None or info.shape is None:
            return None
        elems: list[Elem] = []
        for d in shape_extent(node, info.shape):
            dim = info.shape[d]
            elems.append(dim if isinstance(dim, int) else frozenset({(node.index, tensor, d, dim)}))
        if node.op_type == "Shape":
            return 1, elems
        known = [e for e in elems if isinstance(e, int)]
        deps = [e for e in elems if isinstance(e, frozenset)]
        return 0, [frozenset().union(*deps) if deps else math.prod(known)]

    def _slice(self, data: Value, params: list[Value | None]) -> Value | None:
        picked: list[int | None] = []
        for p in params[:4]:
            if p is None:
                picked.append(None)
                continue
            if len(p[1]) != 1 or not isinstance(p[1][0], int):
                return None
            picked.append(int(p[1][0]))
        while len(picked) < 4:
            picked.append(None)
        start, end, axis, step = picked
        if start is None or end is None or axis not in (None, 0, -1):
            return None
        return 1, data[1][slice(start, end, step or 1)]


def _unary(op: str, v: int | float) -> int | float:
    if op == "Floor":
        return math.floor(v)
    if op == "Ceil":
        return math.ceil(v)
    return abs(v) if op == "Abs" else -v


def _combine(op: str, a: Elem, b: Elem) -> Elem:
    if isinstance(a, frozenset) or isinstance(b, frozenset):
        deps: frozenset[Prov] = frozenset()
        for e in (a, b):
            if isinstance(e, frozenset):
                deps = deps | e
        return deps
    if op == "Add":
        return a + b
    if op == "Sub":
        return a - b
    if op == "Mul":
        return a * b
    if op == "Div":
        return int(a / b) if isinstance(a, int) and isinstance(b, int) else a / b
    if op == "Mod":
        return a % b
    return max(a, b) if op == "Max" else min(a, b)


def _binary(op: str, a: Value, b: Value) -> Value | None:
    xs, ys = a[1], b[1]
    if len(xs) == len(ys):
        pairs = list(zip(xs, ys, strict=True))
    elif len(xs) == 1:
        pairs = [(xs[0], y) for y in ys]
    elif len(ys) == 1:
        pairs = [(x, ys[0]) for x in xs]
    else:
        return None
    return max(a[0], b[0]), [_combine(op, x, y) for x, y in pairs]


def _reduce(op: str, data: Value, node: NodeFacts) -> Value | None:
    if data[0] != 1 or (len(node.inputs) > 1 and node.inputs[1]):
        return None  # explicit axes: only the default (all axes) is evaluated
    combine = {"ReduceProd": "Mul", "ReduceSum": "Add", "ReduceMax": "Max", "ReduceMin": "Min"}[op]
    elems = data[1]
    if not elems:
        return None
    acc: Elem = elems[0]
    for e in elems[1:]:
        acc = _combine(combine, acc, e)
    keep = int(node.attributes.get("keepdims", 1))
    return (1 if keep else 0), [acc]


class ConstantValues:
    """Values of small constant tensors for value constraints (profile/constraints.py): scalars and 1-D
    tensors of up to 64 elements, from initializers in memory, Constant nodes and what shape
    arithmetic folds from them, else (outputs of the ``folded`` nodes) from the folded model.
    Nothing is read until a profile's value test asks (most profiles never do): inspect on a
    big graph pays only for building this object."""

    def __init__(
        self,
        model: ModelProto,
        nodes: list[NodeFacts],
        tensors: dict[str, TensorInfo],
        folded: set[int] | None = None,
        budget: FoldBudget | None = None,
        weights: Collection[str] | None = None,
    ) -> None:
        self._budget = budget
        self._weights = weights  # initializers that are weights (None: all of them)
        self._model = model
        self._nodes = nodes
        self._tensors = tensors
        self._folded = folded or set()
        self._made_by: dict[str, int] = {}
        self._evaluator: Evaluator | None = None
        self._folded_values: dict[str, Value] | None = None

    def __call__(self, name: str) -> Value | None:
        """(rank, elements) of ``name``, or None when its value is not known here."""
        if self._evaluator is None:
            self._made_by = {out: n.index for n in self._nodes for out in n.outputs if out}
            consts = initializer_values(self._model.graph, self._weights)
            self._evaluator = Evaluator(self._nodes, self._made_by, self._tensors, consts)
        value = self._evaluator.value(name)
        if value is None:
            value = self._folded_value(name)
        if value is None or any(isinstance(e, frozenset) for e in value[1]):
            return None  # not evaluable, or it depends on a symbolic dim
        # float32 values to 7 significant digits, as attributes show them (0.1, not 0.10000000149)
        return value[0], [float(f"{e:.7g}") if isinstance(e, float) else e for e in value[1]]

    def _folded_value(self, name: str) -> Value | None:
        """The value of a folded node's output beyond what shape arithmetic reads (torchscript
        computes ``Pad``'s pads through 2-D Reshape/Slice/Transpose): from the folded model,
        built once, when a value test first asks for one."""
        if self._made_by.get(name) not in self._folded:
            return None
        if self._folded_values is None:
            from npu_gate.graph.edit import folded_model

            shape_like = shape_like_folding(self._nodes, self._tensors, self._folded)
            replaced, _ = folded_model(self._model, shape_like, self._budget)
            self._folded_values = initializer_values(replaced.graph) if replaced is not self._model else {}
        return self._folded_values.get(name)


SMALL_VALUE = 64  # elements: shape-like values (Reshape shapes, Slice starts, pads); weights are larger


def shape_like_folding(nodes: list[NodeFacts], tensors: Mapping[str, TensorInfo], folded: set[int]) -> set[int]:
    """The folded nodes that compute small or unknown-size values a kept node reads (and the
    folded nodes those read): the shape-like values. Folded weight arithmetic is left out, so
    nothing waits for a large constant to be evaluated."""
    producer = {o: i for i in folded for o in nodes[i].outputs if o}
    stack = [producer[name] for node in nodes if node.index not in folded
             for name in node.inputs if name in producer and _small_or_unknown(tensors.get(name))]
    closure: set[int] = set()
    while stack:
        i = stack.pop()
        if i not in closure:
            closure.add(i)
            stack.extend(producer[name] for name in nodes[i].inputs if name in producer)
    return closure


def _small_or_unknown(info: TensorInfo | None) -> bool:
    elements = info.elements if info is not None else None
    return elements is None or elements <= SMALL_VALUE


def dependencies(values: list[Value | None]) -> list[Prov] | None:
    """The symbolic dims the values depend on, in a stable order; None if not evaluable."""
    if any(v is None for v in values):
        return None
    deps: set[Prov] = set()
    for v in values:
        assert v is not None
        for e in v[1]:
            if isinstance(e, frozenset):
                deps |= e
    return sorted(deps, key=lambda p: (p[0], p[2]))
