"""Quantization: ``standalone-qdq``, ``quantized-op-unsupported``, ``quantization-failed``,
``quantization-error``."""

from __future__ import annotations

import math

from npu_gate.findings.constraint import failure_finding
from npu_gate.findings.doc import RuleDoc
from npu_gate.placement.place import Placement
from npu_gate.result.types import Finding, QuantizationResult, make_finding

STANDALONE_QDQ = RuleDoc(
    "standalone-qdq",
    finds="A Q/DQ node onnxruntime puts in no QDQ unit, which the target runs on CPU: CPU fallback. "
          "onnxruntime groups each op of a QDQ graph with its DequantizeLinear inputs and QuantizeLinear "
          "outputs into one node unit, but its Conv and Gemm selectors form none when the bias "
          "DequantizeLinear is not int32 (a bias quantized like an activation, e.g. through an exporter's "
          "Identity of a shared initializer). The op then runs in float and each Q/DQ is a node of its own.",
    why="The profile's `standalone_qdq` entry says the target runs this one on CPU, in the compiler's words "
        "when known (QNN's HTP: \"QNN EP does not support a standalone DQ op with per-channel quantization\").",
    example="None in PyTorch itself: the QDQ graph comes from quantizing the exported model; the bias is "
            "quantized like an activation when the exporter shares it through an Identity.",
    fix="Give the op an int32 bias (quantize the float model with its own bias initializers: npu-gate's QNN "
        "preparation folds Identity nodes of initializers first), or quantize the weight per tensor.",
    evidence="onnxruntime's node-unit grouping, and the profile's `standalone_qdq` entry (its evidence).",
    fields="`node`, `op_type`, `constraint` (the entry's id), `evidence` (the entry's).",
)


def standalone_qdq(placement: Placement, name: str, key: str, note: str, severity: str | None) -> Finding:
    """A Q/DQ node in no unit, which the profile's ``standalone_qdq`` entry puts on CPU."""
    alone = placement.standalone
    assert alone is not None
    return make_finding("standalone-qdq", "; ".join(placement.reasons) + note, severity=severity,
                        node=name, op_type=key, constraint=alone["id"], evidence=alone["evidence"])


QUANTIZED_OP_UNSUPPORTED = RuleDoc(
    "quantized-op-unsupported",
    finds="A quantized unit's op runs in float on the target but not in its integer dtypes: CPU fallback. In "
          "a QDQ graph each op is judged with its DequantizeLinear inputs and QuantizeLinear outputs as one "
          "unit, in the unit's integer dtypes (the quantized tensors' dtypes); the profile states a "
          "condition for those dtypes (`when`, docs/target-profiles.md) that the node fails, though its "
          "float form passes.",
    why="The unit runs on CPU, and the Q/DQ nodes of the unit go with it; they are never findings of their own.",
    example="None in PyTorch itself: it depends on the target's integer kernels for the op of a quantized "
            "graph (the contract's `quantization`, or a QDQ model).",
    fix="Keep the op in float (exclude it from quantization) or change it to a form the target runs in integers.",
    evidence="The profile's constraints under `when` for the unit's dtypes; `evidence` the profile's label.",
    fields="`node`, `op_type`; `constraint`, `actual` and `allowed` are the first failed constraint's; the "
           "message lists all the failed constraints.",
)


def quantized_op_unsupported(placement: Placement, name: str, key: str, note: str, evidence: str,
                             severity: str | None) -> Finding:
    """A unit's op with no kernel in the unit's integer dtypes (``placement.quantized``)."""
    why = "; ".join(f"{f.constraint}: {f.message}" for f in (*placement.failures, *placement.limit_failures))
    first = (placement.failures or placement.limit_failures)[0]
    return failure_finding("quantized-op-unsupported", f"{key} has no {placement.quantized} kernel on "
                           f"the target ({why}){note}", first, evidence, severity=severity, node=name, op_type=key)


QUANTIZATION_FAILED = RuleDoc(
    "quantization-failed",
    finds="The contract's quantization could not run: the quantizer or the quantized model raised. "
          "onnxruntime's static quantization (`quantize_static`, QDQ format) of the checked graph, or a run "
          "of the float or quantized model on the hold-out samples, raised; the message is the error in one "
          "line. The QNN probe too (`npu-gate probe --compiler qnn --quantize int8|int16`, or a contract's "
          "`target.probe` with `quantization`): when its QDQ preparation for the HTP (`qnn_preprocess_model`, "
          "`get_qnn_qdq_config`, `quantize`) raises on the model, the probe's status is failed with the "
          "quantizer's error line, the compiler is not run and nothing of the quantized build is checked.",
    why="The quantization gates (`min_output_sqnr_db`, `min_output_cosine`) are then not measured and fail "
        "too: nothing says how the integer model the NPU runs computes.",
    example="None specific: it is the quantizer's error on the exported graph (see docs/quantization.md).",
    fix="Read the error line; see docs/quantization.md (and docs/qnn.md for the probe). `npu-gate probe` "
        "exits 1 (as for `compiler-failed`), a contract's gate fails.",
    evidence="onnxruntime's quantizer (or QNN's QDQ preparation) and its error.",
    fields="`subject` \"quantization\"; the message is `onnxruntime quantize_static: <error>`.",
)


def quantization_failed(message: str) -> Finding:
    return make_finding("quantization-failed", message, subject="quantization")


QUANTIZATION_ERROR = RuleDoc(
    "quantization-error",
    finds="An output of the quantized model is below a quantization gate on the hold-out samples. The float "
          "graph and its quantized form (onnxruntime CPU) were run on the hold-out samples, which are never "
          "calibration samples; an output's SQNR (dB) or cosine similarity is below "
          "`gates.min_output_sqnr_db` / `gates.min_output_cosine`.",
    why="The NPU runs the quantized graph: its outputs, not the float model's, are what the product gets.",
    example="""def forward(self, x):        # x in [0, 1]
    return torch.cat([x, 1e4 * x], 1)  # one per-tensor scale for values of very different magnitudes""",
    fix="A per-tensor scale shared by values of very different magnitudes (a branch spanning 1e4 beside "
        "values in [0, 1]) is the usual cause: rescale the branch, keep it apart from the small values, or "
        "use more bits (`quantization.mode` int16).",
    evidence="onnxruntime CPU runs of the float and the quantized graph on the hold-out samples; the worst "
             "layer as onnxruntime's `qdq_loss_debug` matches them.",
    fields="`subject` the output, `actual` the figure, `allowed` the limit, `constraint` the gate; `node` the "
           "worst layer: the activation with the lowest float-vs-quantized SQNR.",
)


def quantization_error(record: QuantizationResult, gate: str, limit: float, figure: float, output: str) -> Finding:
    """An output below a quantization gate, with the worst layer (lowest SQNR) of the record."""
    what = "SQNR" if gate == "min_output_sqnr_db" else "cosine similarity"
    unit = " dB" if gate == "min_output_sqnr_db" else ""
    if figure == -math.inf:
        message = (f"output {output}: {what} is not a number: the float or the quantized output holds NaN on the "
                   f"hold-out samples, below {gate} {limit:g}{unit}")
    else:
        message = f"output {output}: {what} {figure:.4g}{unit} is below {gate} {limit:g}{unit} (hold-out samples)"
    worst = record["worst_layers"][0] if record["worst_layers"] else None
    node = None
    if worst is not None:
        node = worst["node"]
        db = "no noise" if worst["sqnr_db"] is None else f"SQNR {worst['sqnr_db']:.4g} dB"
        where = f"node {node} ({worst['op_type']})" if node else f"tensor {worst['tensor']}"
        source = worst.get("source") or {}
        line = f" at {source['file']}:{source['line']}" if source.get("file") and source.get("line") else ""
        message += f"; worst layer: {where}{line}, {db}"
    return make_finding("quantization-error", message, subject=f"output {output}", node=node,
                        constraint=gate, actual=figure, allowed=limit)


DOCS = (STANDALONE_QDQ, QUANTIZED_OP_UNSUPPORTED, QUANTIZATION_FAILED, QUANTIZATION_ERROR)
