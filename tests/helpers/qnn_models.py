"""Small ONNX models for probing onnxruntime-qnn's HTP (tests/fixtures/qnn/), built by hand.

The RKNN set (probe_models.py) plus what the QNN EP refuses or treats specially, measured with
onnxruntime-qnn 2.7.0 (QNN 2.51):
- ``einsum_unsupported``: Einsum ``bchw,bcHw->bhH`` between Convs: the EP refuses that equation.
- ``det``: Conv then Det: "Operators of type 'Det' are not supported by QNN EP".
- ``qdq_erf_between``: ``erf_between`` quantized to QDQ (uint8, onnxruntime's QNN QDQ config):
  the graph-input QuantizeLinear stays on CPU, an I/O adapter, and the Erf unit goes to CPU.
- ``shared_bias``: three Convs, the first two sharing one zero bias initializer, the second through an
  ``Identity`` (what the torchscript exporter writes for random-init BatchNorms folded into Convs).
  ``qdq_shared_bias`` is it quantized by onnxruntime's QNN config alone (uint8 activations, int8
  per-channel weights): the shared bias becomes uint8, onnxruntime forms no QDQ unit for conv1 and
  conv2, and the EP refuses their per-channel weight DQs ("standalone DQ op with per-channel
  quantization"). ``int8_shared_bias`` is npu-gate's ``--quantize int8``, which folds the Identity
  first: every Conv gets its int32 bias and one unit.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

    class Reader(CalibrationDataReader):  # type: ignore[misc]  # onnxruntime ships no type hints
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


def shared_bias() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), f"conv{i}.w")
               for i in (1, 2, 3)]
    biases = [numpy_helper.from_array(np.zeros(4, np.float32), "shared.b"),
              numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "conv3.b")]
    conv: dict[str, Any] = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    nodes = [helper.make_node("Identity", ["shared.b"], ["conv2.b"], name="bias_identity"),
             helper.make_node("Conv", ["x", "conv1.w", "shared.b"], ["a"], name="conv1", **conv),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "conv2.w", "conv2.b"], ["c"], name="conv2", **conv),
             helper.make_node("Conv", ["c", "conv3.w", "conv3.b"], ["y"], name="conv3", **conv)]
    return _model("shared_bias", nodes, weights + biases, [_x("x", [1, 4, 8, 8])], [_x("y", [1, 4, 8, 8])])


def qdq_shared_bias() -> onnx.ModelProto:
    """shared_bias quantized with onnxruntime's QNN QDQ config as it is (no Identity folded first)."""
    return _qnn_quantized(shared_bias(), (1, 4, 8, 8), weight_type="int8", per_channel=True)


def _qnn_quantized(model: onnx.ModelProto, shape: tuple[int, ...], weight_type: str = "uint8",
                   per_channel: bool = False) -> onnx.ModelProto:
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    class Reader(CalibrationDataReader):  # type: ignore[misc]  # onnxruntime ships no type hints
        def __init__(self) -> None:
            self.rows = [{"x": np.random.default_rng(i).standard_normal(shape).astype(np.float32)} for i in range(4)]

        def get_next(self) -> dict[str, np.ndarray] | None:
            return self.rows.pop() if self.rows else None

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "qdq.onnx"
        onnx.save(model, str(src))
        config = get_qnn_qdq_config(str(src), Reader(), activation_type=QuantType.QUInt8,
                                    weight_type=QuantType.QInt8 if weight_type == "int8" else QuantType.QUInt8,
                                    per_channel=per_channel)
        quantize(str(src), str(dst), config)
        return onnx.load(str(dst))


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    **probe_models.MODELS,
    "einsum_unsupported": einsum_unsupported,
    "det": det,
    "qdq_erf_between": qdq_erf_between,
    "shared_bias": shared_bias,
    "qdq_shared_bias": qdq_shared_bias,
}
# float models probed with ``--quantize MODE``: npu-gate's QNN QDQ preparation (the kept work folder
# holds qnn-qdq.onnx, what the EP built); name -> (float model, mode)
QUANTIZED = {"int8_erf_between": ("erf_between", "int8"), "int16_erf_between": ("erf_between", "int16"),
             "int8_residual_block": ("residual_block", "int8"), "int8_gelu_head": ("gelu_head", "int8"),
             "int8_attention": ("attention", "int8"), "int8_einsum_unsupported": ("einsum_unsupported", "int8"),
             "int8_shared_bias": ("shared_bias", "int8")}
for _name, (_float, _mode) in QUANTIZED.items():
    MODELS[_name] = MODELS[_float]
