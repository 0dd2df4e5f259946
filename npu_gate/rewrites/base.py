"""What a rewrite is, and the graph helpers every rewrite uses.

A rewrite finds ``Match``es in an ONNX graph (a region of nodes with one output tensor)
and builds the nodes and initializers that replace it. The region's output tensor keeps
its name, so consumers are untouched and the region can be compared layer-wise; every
emitted node and tensor is named ``<original node>/<tag>/<Op>`` so reports map back.
Nothing here evaluates the model: it is onnx.helper graph surgery only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from npu_gate.graph.facts import node_reads
from npu_gate.graph.fold import RANDOM_OPS

MAX_CONST_DEPTH = 32


def _constant_attr(node: onnx.NodeProto) -> np.ndarray | None:
    for attr in node.attribute:
        if attr.name == "value":
            return numpy_helper.to_array(attr.t)
        if attr.name == "value_float":
            return np.array(attr.f, np.float32)
        if attr.name == "value_floats":
            return np.array(list(attr.floats), np.float32)
        if attr.name == "value_int":
            return np.array(attr.i, np.int64)
        if attr.name == "value_ints":
            return np.array(list(attr.ints), np.int64)
    return None


@dataclass(frozen=True)
class Match:
    nodes: tuple[int, ...]  # indices into graph.node that the region replaces
    anchor: str  # name of the node emitted names derive from
    output: str  # the region's output tensor (kept)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Emitted:
    nodes: list[onnx.NodeProto]
    initializers: list[onnx.TensorProto] = field(default_factory=list)


@dataclass(frozen=True)
class Rewrite:
    name: str  # kebab-case; interface, used in contracts
    matches: str  # what it matches, for people
    emits: str  # what it emits, for people
    exact: bool  # False: an approximation, its error is reported
    doc: str
    find: Callable[[GraphView], list[Match]]
    build: Callable[[GraphView, Match], Emitted]


class GraphView:
    """Read-only lookups over a model: producers, consumers, constants, ranks, opset."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.graph = model.graph
        self.nodes = list(model.graph.node)
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.producer: dict[str, int] = {}
        self.consumers: dict[str, list[int]] = {}
        for i, node in enumerate(self.nodes):
            for name in node.output:
                if name:
                    self.producer[name] = i
            # an outer tensor a body reads is consumed by that node: a rewrite must not remove it
            for name in node_reads(node):
                self.consumers.setdefault(name, []).append(i)
        self.outputs = {o.name for o in model.graph.output}
        self.initializers = {t.name: t for t in model.graph.initializer}
        self._shapes: dict[str, list[int | None]] | None = None
        self._graph_inferred: onnx.GraphProto | None = None
        self._values: dict[str, np.ndarray | None] = {}
        self._constants: set[str] | None = None

    def node_name(self, i: int) -> str:
        node = self.nodes[i]
        return node.name or f"{node.op_type}#{i}"  # the display name graph facts give it

    def const(self, name: str) -> np.ndarray | None:
        """The value of a constant tensor: an initializer, a Constant node, or a small chain of
        nodes computed from constants only (TorchScript builds Pad's pads that way), evaluated
        with onnx's reference evaluator. None when not constant."""
        if not name:
            return None
        if name in self._values:
            return self._values[name]
        value = self._const(name, depth=0)
        self._values[name] = value
        return value

    def _const(self, name: str, depth: int) -> np.ndarray | None:
        if name in self.initializers:
            return numpy_helper.to_array(self.initializers[name])
        i = self.producer.get(name)
        if i is None or depth > MAX_CONST_DEPTH or not self.is_constant(name):
            return None
        node = self.nodes[i]
        if node.op_type == "Constant":
            return _constant_attr(node)
        inputs: dict[str, np.ndarray] = {}
        for n in node.input:
            if n:
                if n not in self._values:
                    self._values[n] = self._const(n, depth + 1)
                v = self._values[n]
                if v is None:
                    return None
                inputs[n] = v
        if sum(v.size for v in inputs.values()) > 4096:
            return None  # only small shape-like computations
        try:
            from onnx.reference import ReferenceEvaluator

            graph = helper.make_graph(
                [node], "const",
                [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                 for n, v in inputs.items()],
                [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output if o])
            model = helper.make_model(graph, opset_imports=list(self.model.opset_import))
            outputs = ReferenceEvaluator(model).run(None, inputs)
        except Exception:  # not evaluable here: treat as not constant
            return None
        for out, value in zip([o for o in node.output if o], outputs, strict=False):
            self._values[out] = np.asarray(value)
        return self._values.get(name)

    def is_constant(self, name: str) -> bool:
        """Whether a tensor is computed from constants only (one pass over the graph, cached)."""
        if self._constants is None:
            constants = set(self.initializers)
            for node in self.nodes:  # graph order is topological in a valid model
                if node.domain not in ("", "ai.onnx") or node.op_type in RANDOM_OPS:
                    continue
                if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
                    continue
                reads = [n for n in node.input if n]
                if node.op_type == "Constant" or (reads and all(n in constants for n in reads)):
                    constants.update(o for o in node.output if o)
            self._constants = constants
        return name in self._constants

    def scalar(self, name: str) -> float | None:
        value = self.const(name)
        if value is None or value.size != 1:
            return None
        return float(value.reshape(()))

    def is_scalar(self, name: str, expected: float, tol: float = 1e-6) -> bool:
        value = self.scalar(name)
        return value is not None and abs(value - expected) <= tol * max(1.0, abs(expected))

    def keeps_shape(self, nodes: Iterable[int], x: str) -> bool:
        """Whether the constants the region's nodes read leave ``x``'s shape alone. A size-1
        constant of a higher rank broadcasts it up ([4] + [[3]] is [1, 4]): an op that reads
        x alone would silently drop that shape. Without x's rank, only 0-d constants pass."""
        shape = self.shapes().get(x)
        rank = 0 if shape is None else len(shape)
        for i in nodes:
            for name in self.nodes[i].input:
                value = self.const(name) if name and name != x else None
                if value is not None and value.ndim > rank:
                    return False
        return True

    def only_consumer(self, tensor: str, op_type: str) -> int | None:
        """The single consumer of ``tensor`` if it has that op type and the tensor is internal."""
        users = self.consumers.get(tensor, [])
        if len(users) != 1 or tensor in self.outputs:
            return None
        i = users[0]
        return i if self.is_op(i, op_type) else None

    def is_op(self, i: int, op_type: str) -> bool:
        return self.nodes[i].op_type == op_type and self.nodes[i].domain in ("", "ai.onnx")

    def attr(self, i: int, name: str, default: Any = None) -> Any:
        for a in self.nodes[i].attribute:
            if a.name == name:
                value = helper.get_attribute_value(a)
                return value.decode() if isinstance(value, bytes) else value
        return default

    def _inferred(self) -> onnx.GraphProto:
        if self._graph_inferred is None:
            try:
                self._graph_inferred = onnx.shape_inference.infer_shapes(self.model).graph
            except Exception:  # a model shape inference rejects: no shapes, fewer matches
                self._graph_inferred = self.graph
        return self._graph_inferred

    def shapes(self) -> dict[str, list[int | None]]:
        """Inferred shapes by tensor name (static dims as ints, others None)."""
        if self._shapes is None:
            self._shapes = {}
            g = self._inferred()
            for v in (*g.input, *g.value_info, *g.output):
                t = v.type.tensor_type
                if t.HasField("shape"):
                    self._shapes[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        return self._shapes

    def elem_type(self, name: str) -> int:
        """The tensor's ONNX element type (FLOAT when unknown)."""
        g = self._inferred()
        for v in (*g.input, *g.value_info, *g.output):
            if v.name == name and v.type.tensor_type.elem_type:
                return int(v.type.tensor_type.elem_type)
        if name in self.initializers:
            return int(self.initializers[name].data_type)
        return onnx.TensorProto.FLOAT

    def np_dtype(self, name: str) -> Any:
        return helper.tensor_dtype_to_np_dtype(self.elem_type(name))

    def other_input(self, i: int, known: str) -> str | None:
        """For a binary node reading ``known``, the other input (None if both are ``known``)."""
        ins = list(self.nodes[i].input)
        if len(ins) != 2 or known not in ins:
            return None
        other = ins[1] if ins[0] == known else ins[0]
        return None if other == known else other


class Builder:
    """Emits nodes and initializers named ``<anchor>/<tag>/<Op>`` (``_2``, ``_3`` when repeated)."""

    def __init__(self, view: GraphView, anchor: str, tag: str, dtype: Any = np.float32) -> None:
        self.view = view
        self.dtype = dtype  # of the float constants: the region input's dtype
        self.prefix = f"{anchor}/{tag}"
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._used: set[str] = set()

    def _unique(self, base: str) -> str:
        name, k = base, 1
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return name

    def const(self, label: str, value: Any, dtype: Any = None) -> str:
        name = self._unique(f"{self.prefix}/{label}")
        array = np.asarray(value, dtype=dtype or self.dtype)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: Iterable[str], output: str | None = None, **attrs: Any) -> str:
        name = self._unique(f"{self.prefix}/{op_type}")
        out = output or f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=name, **attrs))
        return out

    def clip(self, x: str, lo: float, hi: float, output: str | None = None) -> str:
        if self.view.opset < 11:  # min/max were attributes before opset 11
            return self.op("Clip", [x], output, min=lo, max=hi)
        return self.op("Clip", [x, self.const("min", lo), self.const("max", hi)], output)

    def done(self) -> Emitted:
        return Emitted(self.nodes, self.initializers)
