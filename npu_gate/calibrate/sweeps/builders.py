"""What every sweep family is made of: ``Point`` (one small model), ``Family`` (points around a
boundary, with the hypothesis), the family kinds, and the helpers that build ONNX models.

A ``Family``'s ``constraints`` are the hypothesis, written in the profile-constraint vocabulary
(npu_gate/profile/constraints.py); infer.py keeps them only when they predict every point. Kinds:

- ``op``: where the compiler ran node ``Point.node`` (default: the node named after the op);
- ``pattern``: whether the compiler fused the point's pattern nodes (every node but the
  context ones) into one op, against whether the candidate pattern rule ``pattern`` matches;
- ``adapter``: the rank adapters the compiler added at the graph inputs and outputs, against
  what the candidate ``rank_adapters`` rule predicts;
- ``eliminate``: whether the compiler kept an op of its own for node ``Point.node``, against
  whether the family's ``rule`` (an ``eliminates`` entry: op and condition) eliminates it; the
  points include near misses, where the condition does not hold;
- ``lower``: whether the compiler ran node ``Point.node`` on the NPU as the op the family's
  ``rule`` (a ``lowers`` entry) names;
- ``split``: whether the compiler ran node ``Point.node`` as ops on several devices (``pieces``),
  against whether the family's ``rule`` (a ``splits`` entry) splits it; a family without a rule
  only records (the Transpose alone).

Unless a point says otherwise its input is x: float32 [1, 16, 32, 32] and the models use
opset 17, which RKNN-Toolkit2 accepts (it refuses opsets above 19).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

if TYPE_CHECKING:
    from npu_gate.probe.base import QuantRequest

OP, PATTERN, ADAPTER, ELIMINATE, LOWER, SPLIT = "op", "pattern", "adapter", "eliminate", "lower", "split"
X = [1, 16, 32, 32]
_DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "int8": TensorProto.INT8,
           "int32": TensorProto.INT32, "int64": TensorProto.INT64, "bool": TensorProto.BOOL}
CONTEXT = ("before", "after", "conv")  # node names that are context, not the thing a point measures


@dataclass(frozen=True)
class Point:
    id: str
    build: Callable[[], onnx.ModelProto]
    node: str | None = None  # the measured node (op families); None: the op's name in lower case
    factory: str | None = None  # a torch point: ``torch_points:NAME`` (build() exports it), for Ethos-U
    # a quantized build (#21): the compiler builds the float model with its own quantization
    # (``probe --quantize``), and npu_gate places the model's QDQ form (onnxruntime's quantize_static)
    quantize: str | None = None


CALIBRATION_SAMPLES = 4  # rows a quantized point is calibrated on (seeded, drawn from [0, 1])


def quant_request(model: Path, mode: str) -> QuantRequest:
    """A quantized point's build request: a few seeded calibration rows, no hold-out (its accuracy
    is not what calibration measures)."""
    from npu_gate.model.samples import make_samples
    from npu_gate.probe.base import QuantRequest
    from npu_gate.quantize.samples import model_input_specs

    return QuantRequest(mode, make_samples(model_input_specs(model, {}), CALIBRATION_SAMPLES, 0), [])


def quantized(point: Point, mode: str = "int8") -> Point:
    """``point`` built quantized: its id gains ``-quantized-MODE``."""
    return Point(f"{point.id}-quantized-{mode}", point.build, point.node, quantize=mode)


@dataclass(frozen=True)
class Family:
    id: str
    op: str  # the ONNX op (op families), the fused op (pattern), the adapter op (adapter)
    points: list[Point]
    constraints: list[dict[str, Any]] = field(default_factory=list)  # the hypothesis
    kind: str = OP
    pattern: str | None = None  # pattern families: the candidate pattern rule's name
    note: str | None = None  # what the sweep varies, or why the vocabulary cannot say more
    rule: dict[str, Any] | None = None  # eliminate / lower / split families: the candidate entry (no evidence)

    def node_of(self, point: Point) -> str:
        return point.node or self.op.lower()


def model(nodes: Sequence[onnx.NodeProto], inputs: dict[str, tuple[str, list[int]]] | None = None,
          inits: dict[str, Any] | None = None, outputs: Sequence[str] = ("y",), opset: int = 17) -> onnx.ModelProto:
    """A model of ``nodes``: graph inputs name -> (dtype, shape), initializers from numpy values;
    output types and shapes come from ONNX shape inference."""
    inputs = inputs if inputs is not None else {"x": ("float32", X)}
    graph = helper.make_graph(
        list(nodes), "calibrate",
        [helper.make_tensor_value_info(n, _DTYPES[t], s) for n, (t, s) in inputs.items()],
        [onnx.ValueInfoProto(name=o) for o in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="npu_gate.calibrate")
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    for out in m.graph.output:
        if not out.type.tensor_type.HasField("shape"):  # not inferred (MeanVarianceNormalization): x's type
            out.type.CopyFrom(m.graph.input[0].type)
    outputs_ = {o.name for o in m.graph.output}
    kept = [v for v in m.graph.value_info if v.name not in outputs_]
    del m.graph.value_info[:]
    m.graph.value_info.extend(kept)
    return m


def node(op: str, inputs: Sequence[str], outputs: Sequence[str] = ("y",), name: str | None = None,
         **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, list(inputs), list(outputs), name=name or op.lower(), **attrs)


def f32(*shape: int, value: float | None = None, seed: int = 0) -> np.ndarray:
    if value is not None:
        return np.full(shape, value, dtype=np.float32)
    return np.random.default_rng(seed).uniform(0.1, 1.0, shape).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def single(pid: str, op: str, inputs: dict[str, tuple[str, list[int]]] | None = None,
           inits: dict[str, Any] | None = None, extra: Sequence[str] = (), opset: int = 17,
           outs: Sequence[str] = ("y",), **attrs: Any) -> Point:
    """One op reading x (and ``extra`` inputs or initializers), writing ``outs``."""
    names = ["x", *extra]
    return Point(pid, lambda: model([node(op, names, outs, **attrs)], inputs, inits, outs, opset=opset))


def between(pid: str, op: str, shape: list[int], inits: dict[str, Any] | None = None, extra: Sequence[str] = (),
            **attrs: Any) -> Point:
    """Relu -> op -> Relu: RKNN-Toolkit2 folds some ops at a graph input or output into the
    input/output operator (Transpose, Reshape), so the swept op sits between two others."""
    def build() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"), node(op, ["a", *extra], ["t"], **attrs),
                      node("Relu", ["t"], ["y"], name="after")], {"x": ("float32", shape)}, inits)
    return Point(pid, build)


def dims(shape: list[int]) -> str:
    """A shape as point ids write it: [1, 16, 32, 32] -> "1x16x32x32"."""
    return "x".join(map(str, shape))
