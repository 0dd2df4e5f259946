"""Tiny ONNX models for the rewrite catalog, built in code (no torch, nothing downloaded)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [1, 4, 6, 6]


def init(name: str, value: npt.ArrayLike, dtype: npt.DTypeLike = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], out_shape: list[int] | None = None,
          opset: int = 17, in_shape: list[int] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "rewrite_zoo",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape or SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape or SHAPE)],
        initializer=inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="rewrite_zoo")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def conv(name: str, x: str, out: str, scale: float = 0.3, seed: int = 0,
         bias: bool = True) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    rng = np.random.default_rng(seed)
    w = init(f"{name}_w", rng.standard_normal((4, 4, 3, 3)) * scale)
    inputs = [x, w.name]
    inits = [w]
    if bias:
        b = init(f"{name}_b", rng.standard_normal(4) * scale)
        inputs.append(b.name)
        inits.append(b)
    return helper.make_node("Conv", inputs, [out], name=name, pads=[1, 1, 1, 1]), inits


def hardswish() -> onnx.ModelProto:
    """Conv → HardSwish → Conv."""
    c0, i0 = conv("conv0", "x", "a", seed=1)
    c1, i1 = conv("conv1", "h", "y", seed=2)
    return model([c0, helper.make_node("HardSwish", ["a"], ["h"], name="hswish"), c1], i0 + i1)


def hardswish_by_hand() -> onnx.ModelProto:
    """Conv → x·Clip(x+3,0,6)/6 (the lesson's form, constants in initializers) → Conv."""
    c0, i0 = conv("conv0", "x", "a", seed=1)
    c1, i1 = conv("conv1", "h", "y", seed=2)
    nodes = [c0,
             helper.make_node("Add", ["a", "three"], ["s"], name="/act/Add"),
             helper.make_node("Clip", ["s", "zero", "six"], ["g"], name="/act/Clip"),
             helper.make_node("Mul", ["a", "g"], ["p"], name="/act/Mul"),
             helper.make_node("Div", ["p", "six"], ["h"], name="/act/Div"),
             c1]
    return model(nodes, i0 + i1 + [init("three", 3.0), init("zero", 0.0), init("six", 6.0)])


def hardsigmoid_swish(alpha: float | None = 1 / 6) -> onnx.ModelProto:
    """Conv → x·HardSigmoid(x) → Conv with small weights → ReduceMean: the activation's effect
    on the output is shrunk, so an error there hides end to end."""
    c0, i0 = conv("conv0", "x", "a", seed=1)
    c1, i1 = conv("conv1", "h", "c", scale=0.003, seed=2, bias=False)
    attrs: dict[str, Any] = {} if alpha is None else {"alpha": alpha}
    nodes = [c0,
             helper.make_node("HardSigmoid", ["a"], ["g"], name="/act/HardSigmoid", **attrs),
             helper.make_node("Mul", ["a", "g"], ["h"], name="/act/Mul"),
             c1,
             helper.make_node("ReduceMean", ["c"], ["y"], name="/head/ReduceMean", axes=[2, 3], keepdims=0)]
    return model(nodes, i0 + i1, out_shape=[1, 4])


def gelu_op() -> onnx.ModelProto:
    return model([helper.make_node("Gelu", ["x"], ["y"], name="/mlp/Gelu")], [], opset=20)


def gelu_erf() -> onnx.ModelProto:
    """0.5·x·(1 + Erf(x/√2)) as the TorchScript exporter writes it."""
    nodes = [helper.make_node("Div", ["x", "sqrt2"], ["d"], name="/mlp/Div"),
             helper.make_node("Erf", ["d"], ["e"], name="/mlp/Erf"),
             helper.make_node("Add", ["e", "one"], ["a"], name="/mlp/Add"),
             helper.make_node("Mul", ["x", "a"], ["m"], name="/mlp/Mul"),
             helper.make_node("Mul", ["m", "half"], ["y"], name="/mlp/Mul_1")]
    return model(nodes, [init("sqrt2", math.sqrt(2)), init("one", 1.0), init("half", 0.5)])


def layernorm(axis: int = -1, bias: bool = True, opset: int = 17) -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    norm_shape = SHAPE[axis:]
    inits = [init("scale", rng.standard_normal(norm_shape))]
    inputs = ["x", "scale"]
    if bias:
        inits.append(init("bias", rng.standard_normal(norm_shape)))
        inputs.append("bias")
    node = helper.make_node("LayerNormalization", inputs, ["y"], name="/ln/LayerNormalization",
                            axis=axis, epsilon=1e-3)
    return model([node], inits, opset=opset)


def reflect_pad() -> onnx.ModelProto:
    pads = init("pads", [0, 0, 2, 1, 0, 0, 3, 2], np.int64)
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="/pad/Pad", mode="reflect")
    return model([node], [pads], out_shape=[1, 4, 11, 9])
