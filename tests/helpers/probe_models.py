"""Small ONNX models for probing a real compiler, built by hand (no torch), opset 17.

Each one shows one thing RKNN-Toolkit2 2.5.0 does (measured, see tests/fixtures/rknn/):
- ``seed_hardswish``: the lesson's net exactly as the torchscript exporter writes it
  (Conv, then x * clip(x + 3, 0, 6) / 6 with Constant nodes): one NPU op, Clip fused away.
- ``erf_between``: Conv, Erf, Conv: a lone Erf runs on CPU, giving 2 NPU segments.
- ``gelu_head``: GlobalAveragePool, Flatten, Gemm and a decomposed GELU: lowering to Conv,
  GELU fused into the Gemm's Conv, a rank adapter for the 2-D output.
- ``residual_block``: Conv+Relu, then Conv+Relu, Conv, Add (skip), Relu: the last three
  become one ``ConvAddRelu`` whose table name is ``<conv>_ConvAddRelu``.
- ``matmul_rank2``: MatMul + Relu on a 2-D input: lowered to Transpose/Conv/Transpose with the
  Relu fused (after a rule swaps it past the Transpose) and Reshape adapters added.
- ``convtranspose_stride3``: ConvTranspose stride 3 splits into a CPU zero-insertion op and an
  NPU Conv.
- ``resize_cubic``: cubic Resize crashes the toolkit (SIGSEGV).
- ``layernorm_no_epsilon``: a rewrite rule raises; the log names it, the retry builds.
- ``opset20``: refused at load (opset > 19).
- ``gelu_half_first``: Conv and a decomposed GELU in the order the dynamo exporter writes it
  (Div, Erf, Add, Mul by 0.5, Mul by x): fused into ``ConvExGelu``.
- ``silu``: Conv, Sigmoid, Mul (x * sigmoid(x), both exporters' SiLU): fused into ``ConvExSwish``.
- ``attention``: MatMul(q, kᵀ), Div by √d, Softmax, MatMul(·, v): one ``exSDPAttention``.
- ``rank2_odd_dims``: MatMul, Relu, MatMul on a 2-D input whose last dims (12 in, 10 out) are
  not multiples of 8: the rank adapters the compiler adds at the graph input and output.
- ``resize_odd_dims``: a linear Resize x2 (sizes) of a 33x33 input: the Resize runs on the NPU
  behind a Conv the compiler inserts, whose op-table row has no FullName.
- ``unnamed_nodes``: Conv, Relu (both without a name), Conv: the toolkit names an unnamed node
  after its first output (``a`` for the first Conv, whose row becomes ``ConvRelu``).
- ``groupnorm``: GroupNorm as exported before opset 18 (Reshape, InstanceNormalization, Reshape,
  Mul, Add): ``fuse_two_reshape`` merges the first Reshape into the rank adapter the toolkit puts
  before its norm op and logs only the removal.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_F = TensorProto.FLOAT


def _model(name: str, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto], opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="npu_gate.tests.probe_models")
    model.ir_version = 8
    return model


def _w(name: str, *shape: int, seed: int = 0) -> onnx.TensorProto:
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _scalar(value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.float32))


def _x(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, _F, shape)


def seed_hardswish() -> onnx.ModelProto:
    c = helper.make_node
    nodes = [
        c("Conv", ["images", "conv.weight", "conv.bias"], ["/conv/Conv_output_0"], name="/conv/Conv",
          kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        c("Constant", [], ["/Constant_output_0"], name="/Constant", value=_scalar(3.0)),
        c("Add", ["/conv/Conv_output_0", "/Constant_output_0"], ["/Add_output_0"], name="/Add"),
        c("Constant", [], ["/Constant_1_output_0"], name="/Constant_1", value=_scalar(0.0)),
        c("Constant", [], ["/Constant_2_output_0"], name="/Constant_2", value=_scalar(6.0)),
        c("Clip", ["/Add_output_0", "/Constant_1_output_0", "/Constant_2_output_0"], ["/Clip_output_0"], name="/Clip"),
        c("Mul", ["/conv/Conv_output_0", "/Clip_output_0"], ["/Mul_output_0"], name="/Mul"),
        c("Constant", [], ["/Constant_3_output_0"], name="/Constant_3", value=_scalar(6.0)),
        c("Div", ["/Mul_output_0", "/Constant_3_output_0"], ["out"], name="/Div"),
    ]
    return _model("seed_hardswish", nodes, [_w("conv.weight", 4, 3, 3, 3), _w("conv.bias", 4, seed=1)],
                  [_x("images", [1, 3, 16, 16])], [_x("out", [1, 4, 16, 16])])


def _conv(name: str, x: str, y: str) -> onnx.NodeProto:
    return helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [y], name=name, kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1])


def _conv_weights(name: str, c: int, seed: int) -> list[onnx.TensorProto]:
    return [_w(f"{name}.w", c, c, 3, 3, seed=seed), _w(f"{name}.b", c, seed=seed + 1)]


def erf_between() -> onnx.ModelProto:
    nodes = [_conv("conv1", "x", "c1"), helper.make_node("Erf", ["c1"], ["e"], name="erf"), _conv("conv2", "e", "y")]
    return _model("erf_between", nodes, _conv_weights("conv1", 8, 0) + _conv_weights("conv2", 8, 2),
                  [_x("x", [1, 8, 16, 16])], [_x("y", [1, 8, 16, 16])])


def gelu_head() -> onnx.ModelProto:
    c = helper.make_node
    nodes = [
        _conv("conv1", "x", "c1"),
        c("GlobalAveragePool", ["c1"], ["p"], name="gap"),
        c("Flatten", ["p"], ["f"], name="flat"),
        c("Gemm", ["f", "fc.w", "fc.b"], ["g"], name="fc", transB=1),
        c("Div", ["g", "sqrt2"], ["d"], name="gelu_div"),
        c("Erf", ["d"], ["e"], name="gelu_erf"),
        c("Add", ["e", "one"], ["a"], name="gelu_add"),
        c("Mul", ["g", "a"], ["m"], name="gelu_mul"),
        c("Mul", ["m", "half"], ["y"], name="gelu_mul2"),
    ]
    inits = [*_conv_weights("conv1", 8, 0), _w("fc.w", 16, 8, seed=4), _w("fc.b", 16, seed=5),
             numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    return _model("gelu_head", nodes, inits, [_x("x", [1, 8, 16, 16])], [_x("y", [1, 16])])


def residual_block() -> onnx.ModelProto:
    c = helper.make_node
    nodes = [
        _conv("conv_a", "x", "a"), c("Relu", ["a"], ["ra"], name="relu_a"),
        _conv("conv_b", "ra", "b"), c("Relu", ["b"], ["rb"], name="relu_b"),
        _conv("conv_c", "rb", "cc"), c("Add", ["cc", "ra"], ["s"], name="add"),
        c("Relu", ["s"], ["y"], name="relu_out"),
    ]
    inits = _conv_weights("conv_a", 8, 0) + _conv_weights("conv_b", 8, 2) + _conv_weights("conv_c", 8, 4)
    return _model("residual_block", nodes, inits, [_x("x", [1, 8, 16, 16])], [_x("y", [1, 8, 16, 16])])


def matmul_rank2() -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["x", "mm.w"], ["m"], name="mm"),
             helper.make_node("Relu", ["m"], ["y"], name="relu")]
    return _model("matmul_rank2", nodes, [_w("mm.w", 32, 16)], [_x("x", [4, 32])], [_x("y", [4, 16])])


def convtranspose_stride3() -> onnx.ModelProto:
    nodes = [helper.make_node("ConvTranspose", ["x", "deconv.w"], ["y"], name="deconv", strides=[3, 3],
                              kernel_shape=[3, 3])]
    return _model("convtranspose_stride3", nodes, [_w("deconv.w", 8, 8, 3, 3)], [_x("x", [1, 8, 8, 8])],
                  [_x("y", [1, 8, 24, 24])])


def resize_cubic() -> onnx.ModelProto:
    nodes = [_conv("conv1", "x", "c1"),
             helper.make_node("Resize", ["c1", "", "scales"], ["y"], name="resize", mode="cubic")]
    inits = [*_conv_weights("conv1", 8, 0), numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    return _model("resize_cubic", nodes, inits, [_x("x", [1, 8, 16, 16])], [_x("y", [1, 8, 32, 32])])


def layernorm_no_epsilon() -> onnx.ModelProto:
    nodes = [helper.make_node("LayerNormalization", ["x", "ln.scale", "ln.bias"], ["y"], name="ln", axis=-1)]
    return _model("layernorm_no_epsilon", nodes, [_w("ln.scale", 16), _w("ln.bias", 16, seed=1)],
                  [_x("x", [1, 4, 16])], [_x("y", [1, 4, 16])])


def opset20() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return _model("opset20", nodes, [], [_x("x", [1, 4, 8, 8])], [_x("y", [1, 4, 8, 8])], opset=20)


def gelu_half_first() -> onnx.ModelProto:
    c = helper.make_node
    nodes = [
        _conv("conv1", "x", "g"),
        c("Div", ["g", "sqrt2"], ["d"], name="gelu_div"),
        c("Erf", ["d"], ["e"], name="gelu_erf"),
        c("Add", ["e", "one"], ["a"], name="gelu_add"),
        c("Mul", ["half", "a"], ["h"], name="gelu_half"),
        c("Mul", ["g", "h"], ["y"], name="gelu_mul"),
    ]
    inits = [*_conv_weights("conv1", 8, 0),
             numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    return _model("gelu_half_first", nodes, inits, [_x("x", [1, 8, 16, 16])], [_x("y", [1, 8, 16, 16])])


def silu() -> onnx.ModelProto:
    nodes = [_conv("conv1", "x", "c1"), helper.make_node("Sigmoid", ["c1"], ["s"], name="sigmoid"),
             helper.make_node("Mul", ["c1", "s"], ["y"], name="mul")]
    return _model("silu", nodes, _conv_weights("conv1", 8, 0), [_x("x", [1, 8, 16, 16])], [_x("y", [1, 8, 16, 16])])


def attention() -> onnx.ModelProto:
    c = helper.make_node
    nodes = [
        c("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
        c("MatMul", ["q", "kt"], ["s"], name="scores"),
        c("Div", ["s", "scale"], ["sd"], name="scale"),
        c("Softmax", ["sd"], ["p"], name="softmax", axis=-1),
        c("MatMul", ["p", "v"], ["y"], name="context"),
    ]
    inits = [numpy_helper.from_array(np.array(np.sqrt(32.0), np.float32), "scale")]
    shape = [1, 2, 16, 32]
    return _model("attention", nodes, inits, [_x("q", shape), _x("k", shape), _x("v", shape)], [_x("y", shape)])


def rank2_odd_dims() -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["x", "mm1.w"], ["m"], name="mm1"),
             helper.make_node("Relu", ["m"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "mm2.w"], ["y"], name="mm2")]
    return _model("rank2_odd_dims", nodes, [_w("mm1.w", 12, 16), _w("mm2.w", 16, 10, seed=1)],
                  [_x("x", [2, 12])], [_x("y", [2, 10])])


def resize_odd_dims() -> onnx.ModelProto:
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize", mode="linear",
                              coordinate_transformation_mode="half_pixel")]
    inits = [numpy_helper.from_array(np.array([1, 16, 66, 66], np.int64), "sizes")]
    return _model("resize_odd_dims", nodes, inits, [_x("x", [1, 16, 33, 33])], [_x("y", [1, 16, 66, 66])])


def unnamed_nodes() -> onnx.ModelProto:
    nodes = [helper.make_node("Conv", ["x", "conv_a.w", "conv_a.b"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r"]),
             _conv("conv_b", "r", "y")]
    inits = [_w("conv_a.w", 8, 3, 3, 3), _w("conv_a.b", 8, seed=1), _w("conv_b.w", 8, 8, 3, 3, seed=2),
             _w("conv_b.b", 8, seed=3)]
    return _model("unnamed_nodes", nodes, inits, [_x("x", [1, 3, 16, 16])], [_x("y", [1, 8, 16, 16])])


def groupnorm() -> onnx.ModelProto:
    """GroupNorm(4, 16) after a Conv as torch's exporter writes it before opset 18: Reshape to
    [0, 4, -1], InstanceNormalization, Reshape back to the Conv's Shape, Mul and Add (random affine)."""
    c = helper.make_node
    nodes = [
        c("Conv", ["x", "conv.w", "conv.b"], ["h"], name="conv", kernel_shape=[1, 1]),
        c("Reshape", ["h", "groups"], ["g"], name="to_groups"),
        c("InstanceNormalization", ["g", "in.scale", "in.bias"], ["n"], name="norm", epsilon=1e-5),
        c("Shape", ["h"], ["s"], name="shape"),
        c("Reshape", ["n", "s"], ["r"], name="back"),
        c("Mul", ["r", "gn.w"], ["m"], name="affine_mul"),
        c("Add", ["m", "gn.b"], ["y"], name="affine_add"),
    ]
    inits = [_w("conv.w", 16, 8, 1, 1), _w("conv.b", 16, seed=1),
             numpy_helper.from_array(np.array([0, 4, -1], np.int64), "groups"),
             numpy_helper.from_array(np.ones(4, np.float32), "in.scale"),
             numpy_helper.from_array(np.zeros(4, np.float32), "in.bias"),
             _w("gn.w", 16, 1, 1, seed=2), _w("gn.b", 16, 1, 1, seed=3)]
    return _model("groupnorm", nodes, inits, [_x("x", [1, 8, 16, 16])], [_x("y", [1, 16, 16, 16])], opset=16)


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "seed_hardswish": seed_hardswish,
    "erf_between": erf_between,
    "gelu_head": gelu_head,
    "residual_block": residual_block,
    "matmul_rank2": matmul_rank2,
    "convtranspose_stride3": convtranspose_stride3,
    "resize_cubic": resize_cubic,
    "layernorm_no_epsilon": layernorm_no_epsilon,
    "opset20": opset20,
    "gelu_half_first": gelu_half_first,
    "silu": silu,
    "attention": attention,
    "rank2_odd_dims": rank2_odd_dims,
    "resize_odd_dims": resize_odd_dims,
    "unnamed_nodes": unnamed_nodes,
    "groupnorm": groupnorm,
}
