"""Qualcomm HTP's QDQ preparation, with onnxruntime's own QNN helpers (npu-gate's onnxruntime, in
process): ``qnn_preprocess_model`` (fuses Erf-GELU into Gelu, LayerNorm patterns, ...), then
``quantize`` with the config ``get_qnn_qdq_config`` builds for the HTP (its data types, its
per-op overrides) from the calibration samples. The QDQ model is what the QNN probe hands the EP.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from npu_gate.contract.spec import Quantization
from npu_gate.errors import one_line
from npu_gate.quantize.run import QuantizationFailed, Rows, calibration_method, quant_type, reader

PREPROCESSED = "qnn-preprocessed.onnx"  # next to the QDQ model, when qnn_preprocess_model changed the graph


def prepare(float_path: Path, out_path: Path, calibration: Rows, spec: Quantization) -> dict[str, Any]:
    """``float_path`` preprocessed and quantized to QDQ for the HTP into ``out_path``; what was
    done, as the probe result's ``preparation``. Raises QuantizationFailed (one line)."""
    import onnxruntime
    from onnxruntime.quantization import quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config, qnn_preprocess_model

    preprocessed = out_path.with_name(PREPROCESSED)
    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # onnxruntime logs advice on the root logger
    try:
        changed = qnn_preprocess_model(str(float_path), str(preprocessed))
        source = preprocessed if changed else float_path
        config = get_qnn_qdq_config(str(source), reader(calibration), calibrate_method=calibration_method(spec.method),
                                    activation_type=quant_type(spec.activations), weight_type=quant_type(spec.weights),
                                    per_channel=spec.per_channel)
        quantize(str(source), str(out_path), config)
    except Exception as exc:
        raise QuantizationFailed(one_line(exc)) from None
    finally:
        logging.getLogger().setLevel(quiet)
    return {"method": "qnn-qdq", "mode": spec.mode, "activations": spec.activations, "weights": spec.weights,
            "per_channel": spec.per_channel, "calibration_method": spec.method, "preprocessed": bool(changed),
            "evidence": f"onnxruntime {onnxruntime.__version__}: qnn_preprocess_model, get_qnn_qdq_config, "
                        "quantize (QDQ)"}
