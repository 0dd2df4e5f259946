"""One op each on x [1, 16, 32, 32]: activations and other single ops, binary ops against a tensor,
a per-channel and a scalar operand, input dtypes, and Relu and Add at ranks 1 to 5."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto

from npu_gate.calibrate.sweeps.builders import Family, Point, X, dims, f32, i64, model, node, single

# Activations and other single ops, rknn.md §6: each on x [1, 16, 32, 32].
UNARY = ["Relu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Softplus", "Sqrt", "Abs", "Neg",
         "Selu", "Celu", "Softsign", "Mish", "Erf", "Exp", "Log", "Reciprocal", "Sin", "Cos", "Floor", "Ceil",
         "Round", "Sign", "Not"]


def unary_families() -> list[Family]:
    out = [Family(f"{op.lower()}", op, [single(f"{op.lower()}-{dims(X)}", op,
                                               {"x": ("bool" if op == "Not" else "float32", X)},
                                               opset=18 if op == "Mish" else 17)]) for op in UNARY]
    more = [
        single("leakyrelu-alpha0.1", "LeakyRelu", alpha=0.1),
        single("prelu-slope-c", "PRelu", None, {"slope": f32(16, 1, 1)}, ["slope"]),
        single("clip-0-6", "Clip", None, {"lo": np.float32(0), "hi": np.float32(6)}, ["lo", "hi"]),
        single("softmax-axis-1", "Softmax", axis=-1), single("softmax-axis1", "Softmax", axis=1),
        single("logsoftmax-axis-1", "LogSoftmax", axis=-1),
        single("batchnormalization", "BatchNormalization", None,
               {"s": f32(16), "b": f32(16), "m": f32(16), "v": f32(16)}, ["s", "b", "m", "v"]),
        single("instancenormalization", "InstanceNormalization", None, {"s": f32(16), "b": f32(16)}, ["s", "b"]),
        single("lpnormalization-axis1", "LpNormalization", axis=1),
        single("layernormalization-eps", "LayerNormalization", None, {"s": f32(32), "b": f32(32)}, ["s", "b"],
               axis=-1, epsilon=1e-5),
        single("groupnormalization-4", "GroupNormalization", None, {"s": f32(4), "b": f32(4)}, ["s", "b"],
               opset=18, num_groups=4),
        single("lrn-size3", "LRN", size=3), single("meanvariancenormalization", "MeanVarianceNormalization"),
        single("depthtospace-2", "DepthToSpace", blocksize=2), single("spacetodepth-2", "SpaceToDepth", blocksize=2),
        single("reducemean-hw", "ReduceMean", axes=[2, 3]), single("reducemax-hw", "ReduceMax", axes=[2, 3]),
        single("reducemin-hw", "ReduceMin", axes=[2, 3]), single("reduceprod-hw", "ReduceProd", axes=[2, 3]),
        single("reducesum-hw", "ReduceSum", None, {"axes": i64(2, 3)}, ["axes"]),
        single("argmax-axis1", "ArgMax", axis=1), single("globalaveragepool", "GlobalAveragePool"),
        single("globalmaxpool", "GlobalMaxPool"), single("tile-1x1x2x2", "Tile", None, {"r": i64(1, 1, 2, 2)}, ["r"]),
        single("expand-to-2", "Expand", {"x": ("float32", [1, 16, 1, 32])}, {"s": i64(1, 16, 32, 32)}, ["s"]),
        single("cast-to-float16", "Cast", to=TensorProto.FLOAT16),
        single("topk-4", "TopK", None, {"k": i64(4)}, ["k"], outs=("y", "i")),
        Point("split-c-2", lambda: model([node("Split", ["x", "s"], ["y", "z"], name="split", axis=1)], None,
                                         {"s": i64(8, 8)}, ["y", "z"])),
        Point("concat-c", lambda: model([node("Concat", ["x", "x"], axis=1)])),
    ]
    by_op: dict[str, list[Point]] = {}
    for p in more:
        by_op.setdefault(p.build().graph.node[0].op_type, []).append(p)
    out += [Family(op.lower(), op, points) for op, points in by_op.items()]
    return out


def binary_point(op: str, kind: str, dtype: str = "float32") -> Point:
    """``op`` of x and a second operand: a graph input of x's shape (``tensor``), or a constant 2.0 per
    channel (``channel``) or as a scalar (``scalar``), all of ``dtype``."""
    shapes = {"tensor": X, "channel": [1, 16, 1, 1], "scalar": []}
    pid = f"{op.lower()}-{kind}" + (f"-{dtype}" if dtype != "float32" else "")
    if kind == "tensor":
        return single(pid, op, {"x": (dtype, X), "x2": (dtype, X)}, None, ["x2"])
    value = f32(*shapes[kind], value=2.0).astype(np.float32 if dtype == "float32" else np.dtype(dtype))
    return single(pid, op, {"x": (dtype, X)}, {"c": value}, ["c"])


BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Equal", "Less", "Greater"]


def binary_families() -> list[Family]:
    out = []
    for op in BINARY:
        constraints: list[dict[str, Any]] = []
        if op == "Pow":
            constraints = [{"id": "pow-constant-exponent", "input": 1, "constant": True}]
        if op in ("Max", "Min"):
            constraints = [{"id": f"{op.lower()}-second-input-rank-4", "input": 1, "rank": {"min": 4, "max": 4}}]
        out.append(Family(f"{op.lower()}-operands", op, [binary_point(op, k) for k in ("tensor", "channel", "scalar")],
                          constraints, note="a second input of the same shape, per channel, a scalar constant"))
    dtypes = [{"id": "add-input-dtype", "input": 0, "dtype": ["float32", "float16", "int8", "int32"]}]
    out.append(Family("add-dtypes", "Add",
                      [binary_point("Add", "tensor", d) for d in ("float16", "int8", "int32", "int64")],
                      dtypes, note="input dtypes"))
    out.append(Family("relu-dtypes", "Relu", [single(f"relu-{dims(X)}-{d}", "Relu", {"x": (d, X)})
                                              for d in ("float16", "int8", "int32", "int64")],
                      [{"id": "relu-input-float", "input": 0, "dtype": ["float32", "float16"]}],
                      note="input dtypes"))
    out.append(Family("where-condition", "Where", [
        single("where-bool-condition", "Where", {"x": ("bool", X), "a": ("float32", X), "b": ("float32", X)},
               None, ["a", "b"])]))
    return out


def rank_families() -> list[Family]:
    shapes = [[64], [4, 64], [2, 4, 64], [1, 16, 32, 32], [1, 2, 4, 8, 16]]
    return [Family("relu-ranks", "Relu", [single(f"relu-rank{len(s)}-{dims(s)}", "Relu", {"x": ("float32", s)})
                                          for s in shapes], note="ranks 1 to 5, last dim a multiple of 8"),
            Family("add-ranks", "Add", [single(f"add-rank{len(s)}-{dims(s)}", "Add",
                                               {"x": ("float32", s), "x2": ("float32", s)}, None, ["x2"])
                                        for s in shapes], note="ranks 1 to 5, last dim a multiple of 8")]
