"""The quantization stage: the float graph quantized with onnxruntime's static quantization (QDQ),
then float vs quantized on hold-out samples, per output and per layer (docs/quantization.md).

It runs in-process (onnxruntime is npu-gate's own dependency; no user code runs). A model that is
quantized already is analysed as it is: there is no float model to compare it with. The gates
(``gates.min_output_sqnr_db``, ``gates.min_output_cosine``) are judged by the verdict stage from
the figures recorded here (``gate_findings``).
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.contract.parts import Gates
from npu_gate.findings.gates import unmeasured
from npu_gate.findings.quantization import quantization_error, quantization_failed
from npu_gate.findings.rewrites import quantized_task_metric
from npu_gate.result.types import GateResult, QuantizationResult
from npu_gate.stages.context import Settings, new_result
from npu_gate.stages.run import Run, Stage

if TYPE_CHECKING:  # the contract reader only for annotations: `inspect` runs gate_findings
    from npu_gate.contract.spec import Contract
    from npu_gate.model.worker import UserCode
    from npu_gate.probe.base import QuantRequest
    from npu_gate.result.probe import ProbeResult


class Quantization(Stage):
    """Contract ``quantization``: the checked graph (the rewritten one once rewrites apply) quantized and measured."""

    name = "quantization"

    def applies(self, run: Run) -> bool:
        return run.the_contract().quantization is not None and run.result.analysed

    def run(self, run: Run) -> None:
        quantize_and_measure(run, run.the_rewriting().compiled_path(run.the_model_path(), run.the_work()))


def quantize_and_measure(run: Run, float_path: Path) -> None:
    """Quantize ``float_path`` (the graph the gate checked, with its weights), measure it, and
    place the quantized graph against the profile (its units' ops that have no integer kernel
    there are ``quantized-op-unsupported`` findings). With a contract ``metric``, the metric
    judges the quantized model against the float one on the hold-out samples, in the child process
    of the contract's code (``quantization.metric``; a miss is a ``task-metric`` error). The nodes
    the analysis folds (top-level indices) are replaced by their values before quantizing, as the
    compiler sees the graph (``quantization.graph`` says what was done); the accuracy compares the
    quantized graph with ``float_path`` itself."""
    contract, settings, work, result, timings, keep, user = (run.the_contract(), run.settings, run.the_work(),
                                                             run.result, run.timings, run.keep, run.user)
    folded: Collection[int] = run.analysis.folded if run.analysis is not None else ()
    spec = contract.quantization
    if spec is None:
        return
    if not spec.quantizes:
        result.stages["quantization"] = {"status": "skipped", "reason": f"quantization.mode is {spec.mode}"}
        return
    import onnx

    from npu_gate.quantize import run as quant
    from npu_gate.quantize.samples import sample_sets
    from npu_gate.versions import tool_versions

    start = time.perf_counter()
    already = quant.quantized_ops(onnx.load(str(float_path), load_external_data=False))
    if already:
        result.stages["quantization"] = {"status": "skipped", "reason": "the model is quantized already "
                                         f"({', '.join(already)}): analysed as it is, no float model to compare"}
        return
    samples = sample_sets(contract)
    runtime = tool_versions().get("onnxruntime")
    record: QuantizationResult = {
        "mode": spec.mode, "format": "QDQ", "activations": spec.activations, "weights": spec.weights,
        "per_channel": spec.per_channel, "method": spec.method,
        "evidence": f"measured by onnxruntime {runtime} (CPU): quantize_static, float vs quantized",
        "calibration": {"samples": len(samples.calibration), "synthetic": samples.calibration_synthetic},
        "holdout": {"samples": len(samples.holdout), "synthetic": samples.holdout_synthetic},
        "placement": None, "outputs": [], "worst_layers": [],
    }
    result.quantization = record
    quantized = work / "quantized.onnx"
    source, record["graph"] = _folded_float(float_path, folded, work, settings)
    try:
        quant.quantize(source, quantized, samples.calibration, spec)
        timings["quantization_s"] = time.perf_counter() - start
        record["outputs"] = [o.to_dict() for o in quant.output_accuracy(float_path, quantized, samples.holdout)]
        folder = work / "quantization-debug"
        folder.mkdir(exist_ok=True)
        layers = quant.layer_errors(float_path, quantized, samples.holdout, folder)
    except quant.QuantizationFailed as exc:
        message = f"onnxruntime quantize_static: {exc}"
        result.stages["quantization"] = {"status": "failed", "reason": message}
        result.findings.append(quantization_failed(message))
        return
    if contract.metric is not None and user is not None:
        _metric(contract, user, float_path, quantized, samples.holdout, record, result)
    record["placement"] = _placement(quantized, settings, result)
    sources = {n.name: n.source for n in result.nodes if n.source is not None}
    record["worst_layers"] = [{**layer.to_dict(), "source": sources.get(layer.node or "")}
                              for layer in layers[:quant.WORST_LAYERS]]
    timings["quantization_accuracy_s"] = time.perf_counter() - start - timings["quantization_s"]
    result.stages["quantization"] = {"status": "ok", "samples": len(samples.holdout)}
    if keep is not None:
        shutil.copyfile(quantized, keep.folder / "quantized.onnx")  # the graph the quantization stage measured


def _folded_float(float_path: Path, folded: Collection[int], work: Path, settings: Settings) -> tuple[Path, str]:
    """The float graph to quantize: ``float_path`` with its folded nodes replaced by initializers
    (``graph.edit.folded_model``, within the run's fold budget), and a note saying so; the graph
    as it is when nothing folds or the values cannot be computed (the note says why)."""
    if not folded:
        return float_path, "the checked graph (no node folds)"
    import onnx

    from npu_gate.graph.edit import folded_model
    from npu_gate.graph.fold_budget import FoldBudget

    model = onnx.shape_inference.infer_shapes(onnx.load(str(float_path)))
    deadline = settings.deadline.at if settings.deadline is not None else None
    replaced, note = folded_model(model, set(folded), FoldBudget(deadline=deadline))
    if replaced is model:
        return float_path, f"the checked graph ({note})"
    path = work / "folded-float.onnx"
    onnx.save(replaced, str(path))
    return path, f"the folded graph: {note}"


def _metric(contract: Contract, user: UserCode, float_path: Path, quantized: Path, holdout: list[Any],
            record: QuantizationResult, result: GateResult) -> None:
    """The contract's task metric, float model (reference) vs quantized model (candidate), on the
    hold-out samples; recorded with its evidence, a miss or an error is a ``task-metric`` finding."""
    from npu_gate.quantize import run as quant_run
    from npu_gate.rewrites.metric import evaluate

    assert contract.metric is not None
    try:
        reference = quant_run.model_outputs(float_path, holdout)
        candidate = quant_run.model_outputs(quantized, holdout)
    except quant_run.QuantizationFailed as exc:
        task: dict[str, Any] = {"callable": contract.metric.callable, "values": {}, "checks": [], "passed": False,
                                "error": f"onnxruntime: {exc}"}
    else:
        task = evaluate(contract.metric, user, reference, candidate, holdout)
    record["metric"] = {**task, "evidence": f"the contract's metric, float (reference) vs {record['mode']} "
                                            f"(candidate) on {len(holdout)} hold-out samples, onnxruntime CPU"}
    if not task["passed"]:
        result.findings.append(quantized_task_metric(task))


def _placement(quantized: Path, settings: Settings, result: GateResult) -> dict[str, int | str]:
    """The quantized graph placed as the target would see it (QDQ units, placement/qdq.py); its
    ``quantized-op-unsupported`` findings join the result's."""
    from npu_gate.graph.model_file import load_onnx
    from npu_gate.stages import analyse

    model, _ = load_onnx(quantized, weights=False)
    scratch = new_result(result.name, settings.profile, {"source": "onnx", "path": quantized.name, "sha256": None})
    analysis = analyse.analyse(model, settings, scratch)
    result.findings.extend(f for f in analyse.findings(analysis) if f.rule == "quantized-op-unsupported")
    s = scratch.summary
    return {"npu_nodes": s.get("npu_nodes", 0), "cpu_nodes": s.get("cpu_nodes", 0),
            "qdq_nodes": s.get("qdq_nodes", 0), "npu_partitions": s.get("npu_partitions", 0),
            "evidence": f"predicted by profile {settings.profile.name} ({settings.profile.evidence})"}


def gate_findings(result: GateResult, gates: Gates) -> list[tuple[str, float | None, float | None, bool]]:
    """The quantization gates as (name, limit, actual, passed); their findings are appended to
    ``result.findings``. A gate whose figure was not measured fails (never open)."""
    checks: list[tuple[str, float | None, float | None, bool]] = []
    record = result.quantization
    for name, limit, key in (("min_output_sqnr_db", gates.min_output_sqnr_db, "sqnr_db"),
                             ("min_output_cosine", gates.min_output_cosine, "cosine")):
        if limit is None:
            continue
        outputs = record["outputs"] if record is not None else []
        if record is None or not outputs:
            checks.append((name, limit, None, False))
            result.findings.append(unmeasured(name, _why_unmeasured(result), limit))
            continue
        # a NaN output fails every gate (-inf); a null SQNR without it is no noise at all (inf)
        figures = [(-math.inf if o.get("nan") else math.inf if o[key] is None else o[key], o["output"])
                   for o in outputs]
        worst, _ = min(figures)
        checks.append((name, limit, None if math.isinf(worst) else worst, worst >= limit))
        for figure, output in figures:
            if figure < limit:
                result.findings.append(quantization_error(record, name, limit, figure, output))
    return checks


def _why_unmeasured(result: GateResult) -> str:
    row = result.stages.get("quantization")
    if row is None:
        return "the quantization stage did not run"
    return f"quantization {row['status']}: {row.get('reason', '')}".rstrip(": ")


def beside_probe(model: Path, quant: QuantRequest, probe: ProbeResult, work: Path) -> None:
    """npu_gate's own float-vs-quantized figures for a probe's quantized build, from the same
    calibration and hold-out rows (onnxruntime ``quantize_static``, QDQ, the contract defaults:
    activations/weights of the mode, per channel, minmax), put beside the compiler's in
    ``probe.quantization["onnxruntime"]``: per output and every matched layer, lowest SQNR first."""
    if probe.quantization is None or not quant.integer or not quant.holdout or not model.is_file():
        return
    from npu_gate.contract.spec import QUANT_DTYPES, Quantization
    from npu_gate.quantize import run as quant_run
    from npu_gate.versions import tool_versions

    activations, weights = QUANT_DTYPES[quant.mode]
    spec = Quantization(mode=quant.mode, activations=activations, weights=weights)
    record: dict[str, Any] = {
        "evidence": f"measured by onnxruntime {tool_versions().get('onnxruntime')} (CPU): quantize_static QDQ "
                    f"{activations} activations, {weights} weights per channel, minmax; float vs quantized",
        "error": None, "outputs": [], "layers": []}
    start = time.perf_counter()
    quantized = work / "quantized.onnx"
    try:
        quant_run.quantize(model, quantized, quant.calibration, spec)
        record["outputs"] = [o.to_dict() for o in quant_run.output_accuracy(model, quantized, quant.holdout)]
        record["layers"] = [layer.to_dict() for layer in quant_run.layer_errors(model, quantized, quant.holdout, work)]
    except quant_run.QuantizationFailed as exc:
        record["error"] = f"onnxruntime quantize_static: {exc}"
    probe.quantization["onnxruntime"] = record
    probe.timings["onnxruntime_quantization_s"] = round(time.perf_counter() - start, 3)
