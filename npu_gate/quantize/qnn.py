"""Qualcomm HTP's QDQ preparation, with onnxruntime's own QNN helpers (npu-gate's onnxruntime, in
process): first npu-gate folds the exporter's Identity nodes of initializers (``fold_identities``), then
``qnn_preprocess_model`` (fuses Erf-GELU into Gelu, LayerNorm patterns, ...), then ``quantize``
with the config ``get_qnn_qdq_config`` builds for the HTP (its data types, its per-op overrides)
from the calibration samples. The QDQ model is what the QNN probe hands the EP.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from npu_gate.contract.spec import Quantization
from npu_gate.errors import one_line
from npu_gate.quantize.run import QuantizationFailed, Rows, calibration_method, quant_type, reader

PREPROCESSED = "qnn-preprocessed.onnx"  # next to the QDQ model, when qnn_preprocess_model changed the graph
LARGE = 1 << 30  # a model above this is written with its weights in external data (protobuf's 2 GB limit)
IDENTITIES_FOLDED = "qnn-identities-folded.onnx"  # next to the QDQ model, when ``fold_identities`` changed the graph


def fold_identities(model: Any) -> int:
    """Replace every Identity of an initializer by an initializer (the same values, the Identity's
    output name), in place; how many.

    The torchscript exporter deduplicates equal initializers and reads the copies through
    ``Identity`` nodes (random-init BatchNorms fold into equal, zero, Conv biases: resnet18 has 16
    such Identities over 4 initializers). onnxruntime's quantizer quantizes an Identity's input like
    an activation (uint8, per tensor, with a Q/DQ pair after the Identity), so the Conv reading it
    gets a uint8 bias instead of its own int32 one, and onnxruntime's Conv selector forms no QDQ
    node unit from a Conv whose bias is not int32: the QNN EP then sees the weight's per-channel
    DequantizeLinear as a node of its own and refuses it ("QNN EP does not support a standalone DQ
    op with per-channel quantization", measured with onnxruntime-qnn 2.7.0). An initializer read
    directly by several Convs needs nothing: the quantizer gives each its own int32 bias.
    """
    from onnx import numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    outputs = {o.name for o in graph.output}
    keep, folded = [], 0
    for node in graph.node:
        source = node.input[0] if node.op_type == "Identity" and node.domain in ("", "ai.onnx") and node.input else ""
        if source in inits and node.output[0] not in outputs and node.output[0] not in inits:
            copy = numpy_helper.from_array(numpy_helper.to_array(inits[source]), node.output[0])
            graph.initializer.append(copy)
            inits[copy.name] = copy  # an Identity of this Identity folds too (the nodes are in order)
            folded += 1
        else:
            keep.append(node)
    if folded:
        del graph.node[:]
        graph.node.extend(keep)
    return folded


def prepare(float_path: Path, out_path: Path, calibration: Rows, spec: Quantization) -> dict[str, Any]:
    """``float_path`` with its Identities of initializers folded, preprocessed and quantized to QDQ
    for the HTP into ``out_path``; what was done, as the probe result's ``preparation``. Raises
    QuantizationFailed (one line)."""
    import onnx
    import onnxruntime
    from onnxruntime.quantization import quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config, qnn_preprocess_model

    preprocessed = out_path.with_name(PREPROCESSED)
    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # onnxruntime logs advice on the root logger
    try:
        model = onnx.load(str(float_path))
        identities = fold_identities(model)
        source = float_path
        if identities:
            source = out_path.with_name(IDENTITIES_FOLDED)
            onnx.save(model, str(source), save_as_external_data=model.ByteSize() > LARGE)
        changed = qnn_preprocess_model(str(source), str(preprocessed))
        source = preprocessed if changed else source
        config = get_qnn_qdq_config(str(source), reader(calibration), calibrate_method=calibration_method(spec.method),
                                    activation_type=quant_type(spec.activations), weight_type=quant_type(spec.weights),
                                    per_channel=spec.per_channel)
        quantize(str(source), str(out_path), config)
    except Exception as exc:
        raise QuantizationFailed(one_line(exc)) from None
    finally:
        logging.getLogger().setLevel(quiet)
    info: dict[str, Any] = {
        "method": "qnn-qdq", "mode": spec.mode, "activations": spec.activations, "weights": spec.weights,
        "per_channel": spec.per_channel, "calibration_method": spec.method, "preprocessed": bool(changed),
        "evidence": f"onnxruntime {onnxruntime.__version__}: qnn_preprocess_model, get_qnn_qdq_config, quantize (QDQ)"}
    if identities:
        info["reason"] = (f"npu-gate replaced {identities} Identity node(s) of an initializer by the initializer "
                          "before quantizing (an exporter's deduplicated weights: quantized through the Identity, "
                          "a bias is not int32 and the EP forms no QDQ unit for its Conv)")
    return info
