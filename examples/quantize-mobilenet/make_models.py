"""Build this example's two models with onnx.helper (weights seeded, so the files are the same on
every run): ``mobilenet.onnx``, a few MobileNetV3-style blocks that quantize well, and
``outlier/outlier.onnx``, a net whose ``mix`` Concat puts a branch spanning [0, 1e4] beside
channels in [0, 1] under one per-tensor scale, so int8 quantization wipes out the small ones.
Run ``python examples/quantize-mobilenet/make_models.py`` to rewrite both.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent


class Builder:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], name: str, **attrs: object) -> str:
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def conv(self, x: str, name: str, cin: int, cout: int, k: int = 1, stride: int = 1, group: int = 1) -> str:
        fan_in = cin // group * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)
        b = self.rng.standard_normal(cout) * 0.05
        return self.node("Conv", [x, self.const(f"{name}.w", w), self.const(f"{name}.b", b)], name,
                         kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)

    def model(self, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
              name: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="npu-gate-example")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def block(b: Builder, x: str, name: str, cin: int, expand: int, cout: int, stride: int, se: bool) -> str:
    """An inverted residual: 1x1 expand, 3x3 depthwise, optional squeeze-excite, 1x1 project."""
    h = b.node("HardSwish", [b.conv(x, f"{name}.expand", cin, expand)], f"{name}.expand_act")
    h = b.node("Relu", [b.conv(h, f"{name}.dw", expand, expand, 3, stride, group=expand)], f"{name}.dw_act")
    if se:
        s = b.node("GlobalAveragePool", [h], f"{name}.se_pool")
        s = b.node("Relu", [b.conv(s, f"{name}.se_reduce", expand, expand // 4)], f"{name}.se_act")
        s = b.node("HardSigmoid", [b.conv(s, f"{name}.se_expand", expand // 4, expand)], f"{name}.se_gate",
                   alpha=1 / 6, beta=0.5)
        h = b.node("Mul", [h, s], f"{name}.se_scale")
    out = b.conv(h, f"{name}.project", expand, cout)
    return b.node("Add", [x, out], f"{name}.residual") if stride == 1 and cin == cout else out


def mobilenet() -> onnx.ModelProto:
    b = Builder(0)
    x = b.node("HardSwish", [b.conv("images", "stem", 3, 16, 3, 2)], "stem_act")
    x = block(b, x, "block1", 16, 32, 16, 1, se=True)
    x = block(b, x, "block2", 16, 48, 24, 2, se=False)
    x = block(b, x, "block3", 24, 72, 24, 1, se=True)
    x = b.node("GlobalAveragePool", [x], "pool")
    x = b.node("Flatten", [x], "flatten")
    w = b.rng.standard_normal((10, 24)) * np.sqrt(1.0 / 24)
    b.node("Gemm", [x, b.const("fc.w", w), b.const("fc.b", np.zeros(10))], "logits", transB=1)
    return b.model([helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 32, 32])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], "mobilenet-v3-style")


def outlier() -> onnx.ModelProto:
    """x -> conv (4 channels in about [0, 1]) and big = x * 1e4 (one channel in [0, 1e4]) -> mix
    (Concat, one per-tensor scale of about 1e4 / 255) -> head (1x1 Conv reading only the small
    channels) -> y."""
    b = Builder(1)
    small = b.node("Sigmoid", [b.conv("x", "conv", 1, 4, 3)], "small")
    big = b.node("Mul", ["x", b.const("ten_thousand", np.array(1e4))], "big")
    mix = b.node("Concat", [small, big], "mix", axis=1)
    head = np.array([[1.0, -1.0, 0.5, 0.25, 0.0]]).reshape(1, 5, 1, 1)
    b.node("Conv", [mix, b.const("head.w", head), b.const("head.b", np.zeros(1))], "head", kernel_shape=[1, 1])
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 16, 16])],
                   [helper.make_tensor_value_info("head", TensorProto.FLOAT, [1, 1, 16, 16])], "outlier-branch")


if __name__ == "__main__":
    onnx.save(mobilenet(), HERE / "mobilenet.onnx")
    onnx.save(outlier(), HERE / "outlier" / "outlier.onnx")
