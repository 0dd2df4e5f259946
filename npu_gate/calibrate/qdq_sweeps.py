"""The QDQ sweep: single-op points quantized for Qualcomm's HTP (QDQ, ``quantize/qnn.py``), beside
the same op in float, to measure what a list of ops cannot say: which ops the HTP takes with
quantized inputs (the reductions), and 8-bit against 16-bit activations.

Each op has two families: ``qdq-<op>-8bit`` (its float point and the point quantized in int8
mode, uint8 activations: hypothesis "not 8-bit") and ``qdq-<op>-16bit`` (the point quantized in
int16 mode, uint16 activations: hypothesis "not 16-bit"). Taken together, as infer.py takes
every family of an op, they explain each outcome the HTP can give when the float point is on
the HTP: all (nothing written), float only (both constraints), float and one width (the other's
constraint); none at all is ``null``. A QDQ point's input dtype is its unit's quantized one
(placement/qdq.py), so the constraints read ``uint8``/``uint16`` there. Calibration: 8 seeded
samples uniform in [0.1, 1]. Ops that only carry their input's quantization (pools, Reshape,
Transpose, Resize) are quantized only after a quantized op, so they read a Sigmoid's output (the
``before`` node, context). Not swept: HardSwish (onnxruntime's quantizer inlines its function into
HardSigmoid and Mul) and Relu (it quantizes a lone Relu not at all and removes one after a
quantized op, folding it into that op's QuantizeLinear): the HTP never sees them in a QDQ unit.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from npu_gate.calibrate.sweeps import (
    EINSUM_QDQ_HYPOTHESIS,
    Family,
    Point,
    X,
    einsum_points,
    f32,
    i64,
    model,
    node,
    single,
)

CALIBRATION_SAMPLES = 8
FLOAT = ["float32", "float16"]


def quantized(build: Callable[[], onnx.ModelProto], mode: str) -> onnx.ModelProto:
    """The float model ``build`` makes, quantized for the HTP in ``mode`` (int8: uint8 activations
    and int8 weights; int16: uint16 and int16), as ``npu-gate probe --quantize`` does."""
    from npu_gate.contract.spec import QUANT_DTYPES, Quantization
    from npu_gate.quantize import qnn

    float_model = build()
    rng = np.random.default_rng(0)
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in float_model.graph.input}
    rows = [{name: rng.uniform(0.1, 1.0, shape).astype(np.float32) for name, shape in shapes.items()}
            for _ in range(CALIBRATION_SAMPLES)]
    activations, weights = QUANT_DTYPES[mode]
    with tempfile.TemporaryDirectory(prefix="npu-gate-qdq-point-") as tmp:
        src, out = Path(tmp) / "float.onnx", Path(tmp) / "qdq.onnx"
        onnx.save(float_model, str(src))
        qnn.prepare(src, out, rows, Quantization(mode=mode, activations=activations, weights=weights))
        return onnx.load(str(out))


def _point(base: Point, suffix: str, mode: str | None) -> Point:
    if mode is None:
        return Point(f"{base.id}-{suffix}", base.build, base.node)
    return Point(f"{base.id}-{suffix}", lambda: quantized(base.build, mode), base.node)


def qdq_families(op: str, base: Point) -> list[Family]:
    """The op's 8-bit and 16-bit families around one float point ``base``."""
    low = op.lower()
    return [
        Family(f"qdq-{low}-8bit", op, [_point(base, "float", None), _point(base, "qdq-uint8", "int8")],
               [{"id": f"{low}-not-8-bit", "input": 0, "dtype": [*FLOAT, "uint16", "int16"]}],
               note="float vs QDQ uint8 activations (QNN's QDQ preparation)"),
        Family(f"qdq-{low}-16bit", op, [_point(base, "qdq-uint16", "int16")],
               [{"id": f"{low}-not-16-bit", "input": 0, "dtype": [*FLOAT, "uint8", "int8"]}],
               note="QDQ uint16 activations (QNN's QDQ preparation, int16 mode)"),
    ]


def _reduce(op: str) -> Point:
    if op == "ReduceSum":  # axes is an input from opset 13
        return single("reducesum-axes-2-3", "ReduceSum", inits={"axes": i64(2, 3)}, extra=["axes"], keepdims=1)
    return single(f"{op.lower()}-axes-2-3", op, axes=[2, 3], keepdims=1)


REDUCTIONS = ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")
UNARY = ("Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Abs", "Neg", "Floor", "Softmax")


def _after_sigmoid(pid: str, op: str, inits: dict[str, Any] | None = None, extra: tuple[str, ...] = (),
                   **attrs: Any) -> Point:
    """Sigmoid (``before``) -> op: an op that carries its input's quantization is quantized only there."""
    return Point(pid, lambda: model([node("Sigmoid", ["x"], ["a"], name="before"),
                                     node(op, ["a", *extra], ["y"], **attrs)], None, inits))


def _others() -> dict[str, Point]:
    w = f32(16, 16, 3, 3, seed=1)
    return {
        "Conv": single("conv-3x3", "Conv", inits={"w": w, "b": f32(16, seed=2)}, extra=["w", "b"],
                       kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        "Add": single("add-constant", "Add", inits={"c": f32(*X, seed=3)}, extra=["c"]),
        "Mul": single("mul-constant", "Mul", inits={"c": f32(*X, seed=4)}, extra=["c"]),
        "Sub": single("sub-constant", "Sub", inits={"c": f32(*X, seed=5)}, extra=["c"]),
        "Div": single("div-constant", "Div", inits={"c": f32(*X, seed=6)}, extra=["c"]),
        "MatMul": single("matmul-32x8", "MatMul", inits={"w": f32(32, 8, seed=7)}, extra=["w"]),
        "AveragePool": _after_sigmoid("averagepool-2x2", "AveragePool", kernel_shape=[2, 2], strides=[2, 2]),
        "MaxPool": _after_sigmoid("maxpool-2x2", "MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        "GlobalAveragePool": single("globalaveragepool", "GlobalAveragePool"),
        "Transpose": _after_sigmoid("transpose-0132", "Transpose", perm=[0, 1, 3, 2]),
        "Reshape": _after_sigmoid("reshape-1x16x1024", "Reshape", inits={"s": i64(1, 16, 1024)}, extra=("s",)),
        "Resize": _after_sigmoid("resize-linear-x2", "Resize", inits={"r": np.zeros(0, np.float32),
                                                                     "s": np.asarray([1, 1, 2, 2], np.float32)},
                                 extra=("r", "s"), mode="linear"),
        "LeakyRelu": single("leakyrelu", "LeakyRelu", alpha=0.1),
        "InstanceNormalization": single("instancenormalization", "InstanceNormalization",
                                        inits={"g": f32(16, seed=8), "b": f32(16, seed=9)}, extra=["g", "b"]),
        "LayerNormalization": single("layernormalization-last-axis", "LayerNormalization",
                                     inits={"g": f32(32, seed=10), "b": f32(32, seed=11)}, extra=["g", "b"], axis=-1),
        "DepthToSpace": single("depthtospace-2", "DepthToSpace", blocksize=2),
        "Concat": Point("concat-two", lambda: model([node("Concat", ["x", "x"], ["y"], axis=1)])),
    }


def qdq() -> list[Family]:
    """The QDQ sweep behind the measured ``qnn-htp-qdq`` profile."""
    points: dict[str, Point] = {op: _reduce(op) for op in REDUCTIONS}
    points.update({op: single(f"{op.lower()}-{'x'.join(map(str, X))}", op) for op in UNARY})
    points.update(_others())
    out: list[Family] = []
    for op, base in points.items():
        out += qdq_families(op, base)
    return out + einsum_families()


def einsum_families() -> list[Family]:
    """The Einsum equations of the standard-einsum sweep (issue 22) in float and quantized in int8 and
    int16 mode (onnxruntime's quantizer quantizes Einsum: Q/DQ on both operands and the output). The
    hypothesis: the EP's equation forms, one fewer with 8-bit input, none with 16-bit (docs/qnn.md)."""
    bases = einsum_points()
    return [
        Family("qdq-einsum-8bit", "Einsum", [_point(b, s, m) for b in bases for s, m in
                                             (("float", None), ("qdq-uint8", "int8"))], EINSUM_QDQ_HYPOTHESIS,
               note="Einsum equations, float vs QDQ uint8 activations (QNN's QDQ preparation)"),
        Family("qdq-einsum-16bit", "Einsum", [_point(b, "qdq-uint16", "int16") for b in bases],
               EINSUM_QDQ_HYPOTHESIS,
               note="Einsum equations, QDQ uint16 activations (QNN's QDQ preparation, int16 mode)"),
    ]


def describe() -> dict[str, Any]:
    """What the sweep measures, for the docs."""
    return {"ops": sorted({f.op for f in qdq()}), "points": sum(len(f.points) for f in qdq())}
