"""Single-op ONNX models for the profile case files (tests/profile_cases/*.json).

Each builder takes keyword arguments from a case's ``args`` and returns a model whose
node under test is named ``node0``. The graph input is ``x``; weights are initializers
unless a case asks for them as graph inputs. Opset 17, nothing downloaded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
_DTYPES = {
    "float32": TensorProto.FLOAT,
    "float16": TensorProto.FLOAT16,
    "int64": TensorProto.INT64,
    "int32": TensorProto.INT32,
    "int8": TensorProto.INT8,
    "uint8": TensorProto.UINT8,
    "int16": TensorProto.INT16,
    "bool": TensorProto.BOOL,
}
_NP = {
    "float32": np.float32,
    "float16": np.float16,
    "int64": np.int64,
    "int32": np.int32,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "bool": np.bool_,
}


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    initializers: list[onnx.TensorProto],
    opset: int = OPSET,
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "case", inputs, outputs, initializer=initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="npu_gate.tests"
    )
    model.ir_version = 8
    return model


def _value(name: str, dtype: str, shape: list[Any] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, _DTYPES[dtype], shape)


def conv(
    x: list[int] = (1, 8, 16, 16),  # type: ignore[assignment]
    out_channels: int = 8,
    kernel: list[int] = (3, 3),  # type: ignore[assignment]
    explicit_kernel: bool = True,
    weight_input: bool = False,
    bias: bool = True,
    opset: int = OPSET,
    dtype: str = "float32",
    op: str = "Conv",
    **attrs: Any,
) -> onnx.ModelProto:
    """x -> Conv or ConvTranspose (node0). ``attrs``: strides, pads, dilations, group, auto_pad.
    ``dtype`` is x's and the weights' (int8 makes a graph ONNX's Conv schema refuses, as a
    quantized deploy model is: the facts still read it, the strict check says so)."""
    x = list(x)
    group = attrs.get("group", 1)
    if op == "ConvTranspose":
        w_shape = [x[1], out_channels // group, *kernel]
    else:
        w_shape = [out_channels, x[1] // group, *kernel]
    weight = numpy_helper.from_array(np.ones(w_shape, dtype=_NP[dtype]), "w")
    inputs = [_value("x", dtype, x)]
    initializers = []
    if weight_input:
        inputs.append(_value("w", dtype, w_shape))
    else:
        initializers.append(weight)
    names = ["x", "w"]
    if bias:
        bias_dtype = np.int32 if dtype in ("int8", "uint8") else _NP[dtype]
        initializers.append(numpy_helper.from_array(np.zeros([out_channels], dtype=bias_dtype), "b"))
        names.append("b")
    if explicit_kernel:
        attrs["kernel_shape"] = list(kernel)
    node = helper.make_node(op, names, ["y"], name="node0", **attrs)
    return _model([node], inputs, [_value("y", dtype, None)], initializers, opset)


def unary(
    op: str = "Relu",
    x: Sequence[Any] = (1, 4, 8, 8),
    dtype: str = "float32",
    opset: int = OPSET,
    **attrs: Any,
) -> onnx.ModelProto:
    """x -> op (node0) -> y."""
    node = helper.make_node(op, ["x"], ["y"], name="node0", **attrs)
    return _model([node], [_value("x", dtype, list(x))], [_value("y", dtype, None)], [], opset)


def binary(
    op: str = "Add",
    a: Sequence[Any] = (1, 4),
    b: Sequence[Any] = (1, 4),
    dtype_a: str = "float32",
    dtype_b: str = "float32",
    b_constant: bool = False,
    **attrs: Any,
) -> onnx.ModelProto:
    """x, b -> op (node0); ``b_constant`` makes b an initializer."""
    inputs = [_value("x", dtype_a, list(a))]
    initializers = []
    if b_constant:
        initializers.append(numpy_helper.from_array(np.ones(list(b), dtype=_NP[dtype_b]), "b"))
    else:
        inputs.append(_value("b", dtype_b, list(b)))
    node = helper.make_node(op, ["x", "b"], ["y"], name="node0", **attrs)
    return _model([node], inputs, [_value("y", dtype_a, None)], initializers)


def resize(
    mode: str = "nearest",
    coordinate_transformation_mode: str | None = None,
    nearest_mode: str | None = None,
    scales_constant: bool = True,
    scale: float = 2.0,
    sizes: list[int] | None = None,
    sizes_from_shape: bool = False,
    x: list[Any] = (1, 4, 8, 8),  # type: ignore[assignment]
    axes: list[int] | None = None,
    dtype: str = "float32",
) -> onnx.ModelProto:
    """x [1, 4, 8, 8] (``dtype``) -> Resize (node0) by ``scale`` on H and W; scales constant or an input;
    with ``sizes``, to those sizes (scales absent): an initializer, or (``sizes_from_shape``)
    Concat(Slice(Shape(x), 0, 2), sizes[2:]) as the TorchScript exporter writes it; ``axes``
    (opset 18) names the axes ``sizes`` gives."""
    attrs: dict[str, Any] = {"mode": mode}
    if coordinate_transformation_mode is not None:
        attrs["coordinate_transformation_mode"] = coordinate_transformation_mode
    if nearest_mode is not None:
        attrs["nearest_mode"] = nearest_mode
    if axes is not None:
        attrs["axes"] = axes
    scales = np.array([1, 1, scale, scale], dtype=np.float32)
    inputs = [_value("x", dtype, list(x))]
    initializers = []
    if sizes is not None:
        node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="node0", **attrs)
        if not sizes_from_shape:
            sizes_init = numpy_helper.from_array(np.array(sizes, dtype=np.int64), "sizes")
            return _model([node], inputs, [_value("y", dtype, None)], [sizes_init], 18 if axes else OPSET)
        shape = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
                 helper.make_node("Slice", ["s", "start", "end"], ["nc"], name="slice"),
                 helper.make_node("Concat", ["nc", "hw"], ["sizes"], name="concat", axis=0)]
        consts = [numpy_helper.from_array(np.array(v, dtype=np.int64), n)
                  for n, v in (("start", [0]), ("end", [2]), ("hw", sizes[2:]))]
        return _model([*shape, node], inputs, [_value("y", dtype, None)], consts)
    if scales_constant:
        initializers.append(numpy_helper.from_array(scales, "scales"))
    else:
        inputs.append(_value("scales", "float32", [4]))
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="node0", **attrs)
    return _model([node], inputs, [_value("y", dtype, None)], initializers)


def slice_(steps: list[int] | None = (1,), source: str = "initializer",  # type: ignore[assignment]
           x: list[Any] = (1, 4, 8, 8), axes: list[int] = (3,)) -> onnx.ModelProto:  # type: ignore[assignment]
    """x [1, 4, 8, 8] -> Slice (node0) of W (or of ``axes``) from 0 to 8 with ``steps`` (None:
    absent). ``source``: steps as an initializer, a Constant node, computed (an initializer of half
    the steps, times 2: folded) or a graph input."""
    init = [numpy_helper.from_array(np.array(v, dtype=np.int64), n)
            for n, v in (("starts", [0]), ("ends", [8]), ("axes", list(axes)))]
    inputs = [_value("x", "float32", list(x))]
    nodes = []
    values = np.array(steps or [], dtype=np.int64)
    if source == "initializer":
        init.append(numpy_helper.from_array(values, "steps"))
    elif source == "constant":
        nodes.append(helper.make_node("Constant", [], ["steps"], name="steps_constant",
                                      value=numpy_helper.from_array(values)))
    elif source == "computed":
        init += [numpy_helper.from_array(values // 2, "half"), numpy_helper.from_array(np.array(2, np.int64), "two")]
        nodes.append(helper.make_node("Mul", ["half", "two"], ["steps"], name="steps_mul"))
    else:
        inputs.append(_value("steps", "int64", [len(values)]))
    names = ["x", "starts", "ends", "axes"] + (["steps"] if steps is not None else [])
    nodes.append(helper.make_node("Slice", names, ["y"], name="node0"))
    return _model(nodes, inputs, [_value("y", "float32", None)], init)


def shape_slice(x: list[Any] = ("N", 3, 8, 8)) -> onnx.ModelProto:  # type: ignore[assignment]
    """x -> Shape (shape0) -> Slice (node0) of its first two elements: node0's input 0 is a shape
    vector (1-D int64 of length 4), not folded while a dim of x is dynamic."""
    init = [numpy_helper.from_array(np.array(v, dtype=np.int64), n)
            for n, v in (("starts", [0]), ("ends", [2]), ("axes", [0]))]
    nodes = [helper.make_node("Shape", ["x"], ["x_shape"], name="shape0"),
             helper.make_node("Slice", ["x_shape", "starts", "ends", "axes"], ["y"], name="node0")]
    return _model(nodes, [_value("x", "float32", list(x))], [_value("y", "int64", None)], init)


def pad(pads: list[int] = (0, 0, 1, 1, 0, 0, 1, 1), mode: str = "constant") -> onnx.ModelProto:  # type: ignore[assignment]
    """x [1, 4, 8, 8] -> Pad (node0) by ``pads`` ([begin..., end...], an initializer)."""
    init = [numpy_helper.from_array(np.array(pads, dtype=np.int64), "pads")]
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="node0", mode=mode)
    return _model([node], [_value("x", "float32", [1, 4, 8, 8])], [_value("y", "float32", None)], init)


def transpose_conv(perm: list[int] = (0, 3, 1, 2)) -> onnx.ModelProto:  # type: ignore[assignment]
    """x [1, 8, 8, 4] -> Transpose(perm) -> Relu -> Conv (node0): layouts follow the tensor."""
    weight = numpy_helper.from_array(np.ones([4, 4, 1, 1], dtype=np.float32), "w")
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="transpose0", perm=list(perm)),
        helper.make_node("Relu", ["t"], ["r"], name="relu0"),
        helper.make_node("Conv", ["r", "w"], ["y"], name="node0"),
    ]
    return _model(
        nodes, [_value("x", "float32", [1, 8, 8, 4])], [_value("y", "float32", None)], [weight]
    )


def gru(
    opset: int = OPSET, seq: int = 5, batch: int = 1, layout: int | None = None
) -> onnx.ModelProto:
    """x -> GRU (node0), hidden size 4; ``layout`` 1 (opset 14+) puts the batch first."""
    hidden, size = 4, 3
    x = [batch, seq, size] if layout == 1 else [seq, batch, size]
    attrs: dict[str, Any] = {"hidden_size": hidden}
    if layout is not None:
        attrs["layout"] = layout
    weights = [
        numpy_helper.from_array(np.ones((1, 3 * hidden, size), np.float32), "W"),
        numpy_helper.from_array(np.ones((1, 3 * hidden, hidden), np.float32), "R"),
    ]
    node = helper.make_node("GRU", ["x", "W", "R"], ["y"], name="node0", **attrs)
    return _model(
        [node], [_value("x", "float32", x)], [_value("y", "float32", None)], weights, opset
    )


def node(
    op: str,
    inputs: list[dict[str, Any]],
    opset: int = OPSET,
    outputs: int = 1,
    **attrs: Any,
) -> onnx.ModelProto:
    """One ``op`` node (node0) of any inputs. Each input is ``{"shape": [...], "dtype": "float32"}``
    (a graph input), with ``"value": [...]`` an initializer of those values (its shape, when given,
    reshapes them), with ``"constant": true`` an initializer of ones, or ``{"absent": true}`` (an
    empty name: an optional input left out)."""
    names, graph_inputs, initializers = [], [], []
    for i, spec in enumerate(inputs):
        if spec.get("absent"):
            names.append("")
            continue
        name = "x" if i == 0 else f"in{i}"
        names.append(name)
        dtype = spec.get("dtype", "float32")
        if "value" in spec:
            values: np.ndarray[Any, Any] = np.array(spec["value"], dtype=_NP[dtype])
            if "shape" in spec:
                values = values.reshape(spec["shape"])
            initializers.append(numpy_helper.from_array(values, name))
        elif spec.get("constant"):
            initializers.append(numpy_helper.from_array(np.ones(spec["shape"], dtype=_NP[dtype]), name))
        else:
            graph_inputs.append(_value(name, dtype, list(spec["shape"])))
    outs = [f"y{i}" for i in range(outputs)]
    made = helper.make_node(op, names, outs, name="node0", **attrs)
    out_dtype = inputs[0].get("dtype", "float32")
    return _model([made], graph_inputs, [_value(o, out_dtype, None) for o in outs], initializers, opset)


BUILDERS: dict[str, Callable[..., onnx.ModelProto]] = {
    "node": node,
    "gru": gru,
    "conv": conv,
    "unary": unary,
    "binary": binary,
    "resize": resize,
    "slice": slice_,
    "shape_slice": shape_slice,
    "pad": pad,
    "transpose_conv": transpose_conv,
}
