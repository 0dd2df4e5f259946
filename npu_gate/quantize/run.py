"""Static quantization with onnxruntime (QDQ format) and its accuracy on hold-out samples.

onnxruntime is imported inside the functions (it is heavy); numpy and onnx are not. The per-layer
matching and SQNR are onnxruntime's own (``onnxruntime.quantization.qdq_loss_debug``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from npu_gate.contract.spec import Quantization
from npu_gate.errors import one_line

Rows = list[dict[str, np.ndarray]]
# Ops that say a model is quantized already (QDQ or QOperator form): it is analysed as it is.
QUANTIZED_OPS = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
    "ConvInteger", "MatMulInteger", "QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
    "QLinearConcat", "QLinearAveragePool", "QLinearGlobalAveragePool", "QGemm", "QLinearSoftmax",
})
WORST_LAYERS = 5  # layers listed in the result, lowest SQNR first


class QuantizationFailed(Exception):
    """The quantizer (or a run of the quantized model) raised; the message is one line."""


@dataclass
class OutputAccuracy:
    output: str
    max_abs_err: float
    cosine: float
    sqnr_db: float
    # the float or the quantized output holds NaN on the hold-out rows: no figure is a number
    nan: bool = False

    def to_dict(self) -> dict[str, Any]:
        if self.nan:  # 1.10: written as null with "nan": true (the gates fail it; null sqnr_db alone means no noise)
            return {"output": self.output, "max_abs_err": None, "cosine": None, "sqnr_db": None, "nan": True}
        return {"output": self.output, "max_abs_err": self.max_abs_err, "cosine": self.cosine,
                "sqnr_db": json_db(self.sqnr_db)}


@dataclass
class LayerError:
    tensor: str  # the activation compared (a node's output)
    node: str | None  # the float model's node producing it
    op_type: str | None
    sqnr_db: float  # float model vs quantized model at this tensor (onnxruntime's xmodel_err)
    qdq_sqnr_db: float  # before vs after this tensor's own Q/DQ (onnxruntime's qdq_err)

    def to_dict(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "node": self.node, "op_type": self.op_type,
                "sqnr_db": json_db(self.sqnr_db), "qdq_sqnr_db": json_db(self.qdq_sqnr_db)}


def json_db(value: float) -> float | None:
    """A figure in dB for JSON: null when infinite (no noise at all)."""
    return None if math.isinf(value) else value


def quantized_ops(model: onnx.ModelProto) -> list[str]:
    """The quantized op types the model already holds, sorted (empty: a float model)."""
    return sorted({n.op_type for n in model.graph.node if n.op_type in QUANTIZED_OPS})


class _Reader:
    """onnxruntime's CalibrationDataReader protocol over rows (subclassed lazily below)."""

    def __init__(self, rows: Rows) -> None:
        self._rows: Iterator[dict[str, np.ndarray]] = iter(rows)
        self._all = rows

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._rows, None)

    def rewind(self) -> None:
        self._rows = iter(self._all)


def reader(rows: Rows) -> Any:
    """A ``CalibrationDataReader`` yielding ``rows`` (with batch axis 1 added per input as-is)."""
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(_Reader, CalibrationDataReader):  # type: ignore[misc]
        pass

    return Reader(rows)


def quantize(float_path: Path, out_path: Path, calibration: Rows, spec: Quantization) -> None:
    """``float_path`` quantized statically (QDQ) into ``out_path``; raises QuantizationFailed."""
    import logging

    from onnxruntime.quantization import QuantFormat, quantize_static

    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # onnxruntime logs advice on the root logger
    try:
        quantize_static(str(float_path), str(out_path), reader(calibration), quant_format=QuantFormat.QDQ,
                        activation_type=quant_type(spec.activations), weight_type=quant_type(spec.weights),
                        per_channel=spec.per_channel, calibrate_method=calibration_method(spec.method),
                        extra_options={"CalibTensorRangeSymmetric": False})
    except Exception as exc:
        raise QuantizationFailed(one_line(exc)) from None
    finally:
        logging.getLogger().setLevel(quiet)


def quant_type(name: str) -> Any:
    """onnxruntime's ``QuantType`` for a contract dtype name (uint8, int8, uint16, int16)."""
    from onnxruntime.quantization import QuantType

    return {"uint8": QuantType.QUInt8, "int8": QuantType.QInt8, "uint16": QuantType.QUInt16,
            "int16": QuantType.QInt16}[name]


def calibration_method(name: str) -> Any:
    """onnxruntime's ``CalibrationMethod`` for a contract method name."""
    from onnxruntime.quantization import CalibrationMethod

    return {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
            "percentile": CalibrationMethod.Percentile}[name]


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def model_outputs(path: Path, rows: Rows) -> Rows:
    """Per row, every output of the model at ``path`` by name (onnxruntime CPU); raises QuantizationFailed."""
    try:
        session = _session(path)
        names = [o.name for o in session.get_outputs()]
        return [dict(zip(names, session.run(names, row), strict=True)) for row in rows]
    except Exception as exc:
        raise QuantizationFailed(one_line(exc)) from None


def output_accuracy(float_path: Path, quant_path: Path, holdout: Rows) -> list[OutputAccuracy]:
    """Per output, float vs quantized on every hold-out sample together (onnxruntime CPU)."""
    try:
        reference, quantized = _session(float_path), _session(quant_path)
        names = [o.name for o in reference.get_outputs()]
        ref = [reference.run(names, row) for row in holdout]
        got = [quantized.run(names, row) for row in holdout]
    except Exception as exc:
        raise QuantizationFailed(one_line(exc)) from None
    out = []
    for k, name in enumerate(names):
        a = np.concatenate([np.asarray(r[k], dtype=np.float64).ravel() for r in ref])
        b = np.concatenate([np.asarray(g[k], dtype=np.float64).ravel() for g in got])
        if np.isnan(a).any() or np.isnan(b).any():
            out.append(OutputAccuracy(name, math.nan, math.nan, math.nan, nan=True))
            continue
        out.append(OutputAccuracy(name, float(np.max(np.abs(a - b))) if a.size else 0.0, cosine(a, b), sqnr_db(a, b)))
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity; 1.0 when both are all zero, 0.0 when only one is."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return float(np.dot(a, b) / (na * nb))


def sqnr_db(a: np.ndarray, b: np.ndarray) -> float:
    """Signal (``a``) to quantization noise (``a - b``) in dB, as onnxruntime's
    ``compute_signal_to_quantization_noice_ratio`` computes it for one tensor; inf: no noise."""
    from onnxruntime.quantization.qdq_loss_debug import compute_signal_to_quantization_noice_ratio

    value = float(compute_signal_to_quantization_noice_ratio([a], [b]))
    return value if math.isfinite(value) else math.inf


def layer_errors(float_path: Path, quant_path: Path, holdout: Rows, work: Path) -> list[LayerError]:
    """Every matched activation, float vs quantized, lowest SQNR first (ties: graph order)."""
    from onnxruntime.quantization.qdq_loss_debug import (
        collect_activations,
        compute_activation_error,
        create_activation_matching,
        modify_model_output_intermediate_tensors,
    )

    float_aug, quant_aug = work / "float-augmented.onnx", work / "quantized-augmented.onnx"
    try:
        modify_model_output_intermediate_tensors(str(float_path), str(float_aug))
        modify_model_output_intermediate_tensors(str(quant_path), str(quant_aug))
        float_acts = collect_activations(str(float_aug), reader(holdout),
                                         execution_providers=["CPUExecutionProvider"])
        quant_acts = collect_activations(str(quant_aug), reader(holdout),
                                         execution_providers=["CPUExecutionProvider"])
        errors = compute_activation_error(create_activation_matching(quant_acts, float_acts))
    except Exception as exc:
        raise QuantizationFailed(one_line(exc)) from None
    model = onnx.load(str(float_path), load_external_data=False)
    producer = {o: (n.name, n.op_type, i) for i, n in enumerate(model.graph.node) for o in n.output}
    rows = []
    for tensor, err in errors.items():
        node = producer.get(tensor)
        rows.append((LayerError(tensor, node[0] if node else None, node[1] if node else None,
                                _finite(err.get("xmodel_err")), _finite(err.get("qdq_err"))),
                     node[2] if node else -1))
    rows.sort(key=lambda r: (r[0].sqnr_db, r[1]))
    return [r[0] for r in rows]


def _finite(value: Any) -> float:
    if value is None:
        return math.inf
    value = float(value)
    return value if math.isfinite(value) else math.inf
