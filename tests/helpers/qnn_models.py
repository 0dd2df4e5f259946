"""Small ONNX models for probing onnxruntime-qnn's HTP (tests/fixtures/qnn/), built by hand.

The RKNN set (probe_models.py) plus what the QNN EP refuses or treats specially, measured with
onnxruntime-qnn 2.7.0 (QNN 2.51):
- ``einsum_unsupported``: Einsum ``bchw,bcHw->bhH`` between Convs: the EP refuses that equation.
- ``det``: Conv then Det: "Operators of type 'Det' are not supported by QNN EP".
- ``qdq_erf_between``: ``erf_between`` quantized to QDQ (uint8, onnxruntime's QNN QDQ config):
  the graph-input QuantizeLinear stays on CPU, an I/O adapter, and the Erf unit goes to CPU.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.helpers import probe_models


def _x(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _conv(name: str, x: str, y: str) -> onnx.NodeProto:
    return helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [y], name=name, kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1])


def _conv_weights(name: str, c: int, seed: int) -> list[onnx.TensorProto]:
    rng = np.random.default_rng(seed)
    return [numpy_helper.from_array(rng.standard_normal((c, c, 3, 3)).astype(np.float32), f"{name}.w"),
            numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), f"{name}.b")]


def _model(name: str, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto],
           inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="npu_gate.tests.qnn_models")
    model.ir_version = 8
    return model


def einsum_unsupported() -> onnx.ModelProto:
    nodes = [_conv("conv1", "x", "a"), _conv("conv2", "x", "b"),
             helper.make_node("Einsum", ["a", "b"], ["y"], name="einsum", equation="bchw,bcHw->bhH")]
    return _model("einsum_unsupported", nodes, _conv_weights("conv1", 4, 0) + _conv_weights("conv2", 4, 2),
                  [_x("x", [1, 4, 8, 8])], [_x("y", [1, 8, 8])])


def det() -> onnx.ModelProto:
    nodes = [_conv("conv", "x", "c"), helper.make_node("Det", ["c"], ["y"], name="det")]
    return _model("det", nodes, _conv_weights("conv", 4, 0), [_x("x", [1, 4, 8, 8])], [_x("y", [1, 4])])


def qdq_erf_between() -> onnx.ModelProto:
    """erf_between quantized with onnxruntime (npu_gate's own venv) and QNN's QDQ config."""
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.rows = [{"x": np.random.default_rng(i).standard_normal((1, 8, 16, 16)).astype(np.float32)}
                         for i in range(4)]

        def get_next(self) -> dict[str, np.ndarray] | None:
            return self.rows.pop() if self.rows else None

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "qdq.onnx"
        onnx.save(probe_models.erf_between(), str(src))
        config = get_qnn_qdq_config(str(src), Reader(), activation_type=QuantType.QUInt8,
                                    weight_type=QuantType.QUInt8)
        quantize(str(src), str(dst), config)
        return onnx.load(str(dst))


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    **probe_models.MODELS,
    "einsum_unsupported": einsum_unsupported,
    "det": det,
    "qdq_erf_between": qdq_erf_between,
}
# float models probed with ``--quantize MODE``: npu-gate's QNN QDQ preparation (the kept work folder
# holds qnn-qdq.onnx, what the EP built); name -> (float model, mode)
QUANTIZED = {"int8_erf_between": ("erf_between", "int8"), "int16_erf_between": ("erf_between", "int16"),
             "int8_residual_block": ("residual_block", "int8"), "int8_gelu_head": ("gelu_head", "int8"),
             "int8_attention": ("attention", "int8"), "int8_einsum_unsupported": ("einsum_unsupported", "int8")}
for _name, (_float, _mode) in QUANTIZED.items():
    MODELS[_name] = MODELS[_float]
