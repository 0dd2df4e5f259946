"""The probe stage (``target.probe``): build the model with the real compiler and compare its
placement with the gate's own, node by node. With ``decide: measured`` and a build, the
compiler's placement decides: the analysis stage's findings and the gates read ``CompilerPlacement``."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.contract.spec import Contract, Quantization
from npu_gate.errors import GateError
from npu_gate.findings.compiler import probe_findings
from npu_gate.result.probe import ProbeResult
from npu_gate.result.types import CPU, GateResult
from npu_gate.stages.analyse import CompilerPlacement
from npu_gate.stages.context import Settings, new_result
from npu_gate.stages.run import Run, Stage

FACTORY_CALIBRATION_ROWS = 4  # without a quantization section: as `npu-gate probe --factory`
QDQ_MODEL = "qnn-qdq.onnx"  # the QDQ model the QNN probe built, in its work folder and the bundle

if TYPE_CHECKING:
    import numpy as np

    from npu_gate.probe.base import Compiler, QuantRequest


@dataclass
class ProbeOutcome:
    probe: ProbeResult
    measured: CompilerPlacement | None  # the compiler's placement, when it decides
    calibration: str | None = None  # which samples calibrated a compiler that quantizes the module itself


class Probe(Stage):
    """The compiler builds the checked graph (the rewritten one once rewrites apply): ``run.probe``,
    read by the analysis' findings (``CompilerPlacement``) and recorded by ``Record``."""

    name = "probe"

    def applies(self, run: Run) -> bool:
        return run.the_contract().probe is not None and run.analysis is not None

    def run(self, run: Run) -> None:
        run.probe = probe_compiler(run, run.the_rewriting().compiled_path(run.the_model_path(), run.the_work()))


class Record(Stage):
    """The probe's row, log and findings (``record``), written where a result has always had them:
    after the analysis' findings and the exporter comparison's log, before the numerics (an ONNX
    contract's: after its quantization)."""

    name = "probe_record"
    limited = False

    def applies(self, run: Run) -> bool:
        return run.probe is not None

    def run(self, run: Run) -> None:
        assert run.probe is not None
        record(run.probe, run.the_contract(), run.result)


def probe_compiler(run: Run, onnx_path: Path) -> ProbeOutcome | None:
    """Probe ``onnx_path`` (the graph the gate analysed into the run's result) with the contract's
    compiler; the comparison is with the result's placement, never with one recomputed here,
    except when the compiler builds another graph: QNN with the contract's ``quantization`` mode
    int8/int16 builds the QDQ model ``prepare`` makes (in the work folder's ``probe-preparation``),
    compared with that model's own placement (QDQ units, the settings' profile). The compiler's
    timeout (``target.probe.timeout``, else the plug-in's) is at most the time left before the
    run's deadline."""
    contract, result, timings, deadline, settings, keep = (run.the_contract(), run.result, run.timings,
                                                           run.deadline, run.settings, run.keep)
    work = run.the_work() / "probe-preparation"
    spec = contract.probe
    if spec is None or not result.analysed:
        return None
    from npu_gate.probe import get_compiler, venv_for
    from npu_gate.probe.runner import probe

    compiler = get_compiler(spec.compiler)
    venv = venv_for(spec.venv, compiler)
    limit = spec.timeout or compiler.timeout_s
    if deadline is not None:
        limit = max(min(limit, deadline.left()), 0.1)
    given = f"{venv}" if spec.venv is not None else f"not given, so .venv-{compiler.name} in the current folder"
    options: dict[str, Any] = {"soc_model": spec.soc_model} if spec.soc_model is not None else {}
    model, preparation, prediction = onnx_path, None, result
    with tempfile.TemporaryDirectory(prefix="npu-gate-calibration-") as folder:
        calibration, quantization = None, None
        if compiler.needs_factory:  # the compiler lowers and quantizes the PyTorch module itself, in its own venv
            options, calibration = factory_options(contract, Path(folder))
        else:
            quantization = quant_request(contract)
            if quantization is not None:
                compiler.check_quant_mode(quantization.mode, f"{contract.path}: quantization.mode")
        if compiler.name == "qnn":  # a float model is quantized for the HTP first
            rows = quantization.calibration if quantization is not None and quantization.integer else None
            model, preparation = prepare(compiler.name, onnx_path, contract.quantization, rows,
                                         bool(quantization is not None and quantization.calibration_synthetic), work)
            if model != onnx_path:
                prediction = _placed(model, settings, result)
            if keep is not None and model != onnx_path:
                shutil.copyfile(model, keep.folder / QDQ_MODEL)
        venv_key = f"{contract.path}: target.probe.venv: {given}"
        trusted_venv(compiler, venv, venv_key)
        if failed(preparation):
            assert preparation is not None
            measured = unprepared(onnx_path, compiler, spec.target, compiler.python(venv), preparation, prediction,
                                  quantization, venv_key)
        else:
            measured = probe(model, compiler, spec.target, compiler.python(venv), prediction=prediction,
                             inputs={s.name: list(s.shape) for s in contract.inputs}, timeout=limit,
                             options=options or None, venv_key=venv_key,
                             target_key=f"{contract.path}: target.probe.target {spec.target}",
                             quantization=quantization)
    measured.preparation = preparation
    timings["probe_s"] = measured.timings["total_s"]
    decides = spec.decide == "measured" and measured.built
    return ProbeOutcome(measured, CompilerPlacement({n.name: n for n in measured.nodes}, measured.evidence) if decides
                        else None, calibration)


def trusted_venv(compiler: Compiler, venv: Path, venv_key: str) -> None:
    """A venv the contract names (or the default one) decides only when ``probe setup`` made it
    (``setup_env.venv_problem``): a folder of the pull request is refused, exit 2. A venv that is
    not there is left to the probe's own error (it says how to create one)."""
    from npu_gate.probe.setup_env import venv_problem

    if compiler.python(venv).exists():
        problem = venv_problem(compiler, venv)
        if problem is not None:
            raise GateError(f"{venv_key}: not a compiler venv made by `npu-gate probe setup`: {problem}")


def factory_options(contract: Contract, folder: Path) -> tuple[dict[str, Any], str]:
    """What a compiler lowering the contract's PyTorch module needs: the factory and where it is
    imported from (the child imports it, never this process), and the calibration rows: the
    contract's ``quantization`` samples, else seeded rows from the inputs' ranges; with the words
    that say which."""
    from npu_gate.model.samples import make_samples
    from npu_gate.model.worker import save_rows

    assert contract.torch is not None  # the contract's load refuses an ONNX model for such a compiler
    if contract.quantization is not None:
        from npu_gate.quantize.samples import sample_sets

        sets = sample_sets(contract)
        rows = sets.calibration
        source = "synthetic, drawn from the inputs' ranges" if sets.calibration_synthetic \
            else "quantization.calibration.samples_file"
        words = f"{len(rows)} rows of the contract's quantization calibration samples ({source})"
    else:
        rows = make_samples(contract.inputs, FACTORY_CALIBRATION_ROWS, contract.numerics.seed)
        words = f"{len(rows)} synthetic rows drawn from the inputs' ranges (the contract has no quantization)"
    names = [i.name for i in contract.inputs]
    samples = folder / "calibration.npz"
    save_rows(samples, rows, names)
    return {"factory": contract.torch.factory, "kwargs": contract.torch.kwargs,
            "folders": [str(f) for f in contract.import_folders], "seed": contract.numerics.seed,
            "samples_file": str(samples), "ranges": {i.name: list(i.range) for i in contract.inputs}}, words


def quant_request(contract: Contract) -> QuantRequest | None:
    """The contract's ``quantization`` as the compiler's build request: an integer mode with the
    calibration and hold-out rows the quantization stage uses (``quantize/samples.py``); fp16 and
    none without samples; None without a ``quantization`` key (the compiler's default build)."""
    q = contract.quantization
    if q is None:
        return None
    from npu_gate.probe.base import QuantRequest

    if not q.quantizes:
        return QuantRequest(q.mode, calibration_synthetic=False, holdout_synthetic=False)
    from npu_gate.quantize.samples import sample_sets

    samples = sample_sets(contract)
    return QuantRequest(q.mode, samples.calibration, samples.holdout, samples.calibration_synthetic,
                        samples.holdout_synthetic)


def prepare(compiler: str, model: Path, quantization: Quantization | None,
            calibration: list[dict[str, np.ndarray]] | None, synthetic: bool,
            folder: Path) -> tuple[Path, dict[str, Any] | None]:
    """The model ``compiler`` builds and how it was prepared (the probe result's ``preparation``).

    QNN: a model holding Q/DQ (or QOperator) ops is built as it is; a float one with
    ``quantization`` mode int8/int16 is quantized first for the HTP (``quantize/qnn.py``, the
    ``calibration`` rows) into ``folder``/qnn-qdq.onnx; else it is built in fp16. Other compilers:
    the model as it is, no preparation said. A quantizer that raises on the model is a result, not
    an error: the model itself comes back with the preparation's ``error`` (``failed``), and the
    probe reports it (``unprepared``) without running the compiler."""
    if compiler != "qnn":
        return model, None
    import onnx

    from npu_gate.probe.runner import PREPARATION
    from npu_gate.quantize import qnn
    from npu_gate.quantize.run import QuantizationFailed, quantized_ops

    already = quantized_ops(onnx.load(str(model), load_external_data=False))
    folder.mkdir(parents=True, exist_ok=True)
    out, info = model, dict[str, Any]()
    if already:
        info = {"method": "as-is", "reason": f"the model is quantized already ({', '.join(already)})"}
    elif quantization is None or not quantization.quantizes or calibration is None:
        mode = quantization.mode if quantization is not None else "none"
        info = {"method": "fp16", "reason": f"a float model, quantization mode {mode}: enable_htp_fp16_precision"}
    else:
        out = folder / QDQ_MODEL
        try:
            info = qnn.prepare(model, out, calibration, quantization)
        except QuantizationFailed as exc:
            out, info = model, {"method": "qnn-qdq", "mode": quantization.mode, "activations": quantization.activations,
                                "weights": quantization.weights, "per_channel": quantization.per_channel,
                                "calibration_method": quantization.method, "error": str(exc)}
        info["calibration"] = {"samples": len(calibration), "synthetic": synthetic}
    (folder / PREPARATION).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return out, info


def cli_preparation(compiler: str, model: Path, quantization: QuantRequest | None,
                    folder: Path) -> tuple[Path, dict[str, Any] | None]:
    """``npu-gate probe --quantize MODE [--calibration NPZ]``: ``prepare`` with the mode's default
    dtypes (``contract.spec.QUANT_DTYPES``) and the request's calibration rows (the file's, else
    seeded samples drawn in [0, 1] with the model's input shapes: ``commands/probe.py``)."""
    from npu_gate.contract.spec import QUANT_DTYPES

    if compiler != "qnn":
        return model, None
    mode = quantization.mode if quantization is not None else "none"
    activations, weights = QUANT_DTYPES.get(mode, ("uint8", "int8"))
    spec = Quantization(mode=mode, activations=activations, weights=weights)
    rows = quantization.calibration if quantization is not None and spec.quantizes else None
    synthetic = bool(quantization is not None and quantization.calibration_synthetic)
    return prepare(compiler, model, spec, rows, synthetic, folder)


def failed(preparation: dict[str, Any] | None) -> bool:
    """Whether ``prepare`` could not make the model the compiler builds (its quantizer raised)."""
    return preparation is not None and preparation.get("error") is not None


def unprepared(model: Path, compiler: Compiler, target: str, python: Path, preparation: dict[str, Any],
               prediction: GateResult | None, quantization: QuantRequest | None,
               venv_key: str | None = None) -> ProbeResult:
    """The probe of a model whose preparation failed (``failed``): a ``quantization-failed`` finding
    with the quantizer's error line, status failed, the compiler not run (so nothing of the quantized
    build is checked: the gate fails, never open)."""
    from npu_gate.probe.runner import not_built

    error = f"QNN QDQ preparation ({preparation['mode']}) failed: {preparation['error']}"
    message = (f"{model.name}: {error}; the {compiler.product} build was not run, so the {preparation['mode']} "
               "model's placement is not checked")
    out = not_built(model, compiler, target, python, "quantization-failed", error, message, prediction=prediction,
                    quantization=quantization, venv_key=venv_key)
    out.preparation = preparation
    return out


def prepared(work: Path) -> bool:
    """Whether a kept probe folder holds a model the probe quantized (``preparation.json`` says qnn-qdq)."""
    from npu_gate.probe.runner import PREPARATION

    try:
        return bool(json.loads((work / PREPARATION).read_text(encoding="utf-8")).get("method") == "qnn-qdq")
    except (OSError, ValueError):
        return False


def _placed(model: Path, settings: Settings, result: GateResult) -> GateResult:
    """``model`` (the QDQ graph the compiler builds) placed by ``settings``' profile, in QDQ units."""
    from npu_gate.graph.model_file import load_onnx
    from npu_gate.stages import analyse

    loaded, _ = load_onnx(model, weights=False)
    scratch = new_result(result.name, settings.profile, {"source": "onnx", "path": model.name, "sha256": None})
    analyse.analyse(loaded, settings, scratch)
    return scratch


def record(outcome: ProbeOutcome, contract: Contract, result: GateResult) -> None:
    """The probe's stage row, log and findings into ``result``; with the measurement deciding,
    the measured CPU nodes and partitions the gates judge (``summary.measured``)."""
    measured = outcome.probe
    spec = contract.probe
    assert spec is not None
    result.log.extend(f"probe: {line}" for line in measured.log)
    result.stages["probe"] = {
        "status": "ok" if measured.built else "failed", "probe_status": measured.status,
        "reason": measured.error, "evidence": measured.evidence, "decide": spec.decide,
        "compiler": measured.compiler, "preparation": measured.preparation, "summary": measured.summary,
        "nodes": [n.to_dict() for n in measured.nodes], "segments": [g.to_dict() for g in measured.segments],
        "estimates": measured.estimates, "memory": measured.memory,
        "quantization": measured.quantization,
    }
    if outcome.calibration is not None:
        result.stages["probe"]["calibration"] = outcome.calibration
    result.findings += probe_findings(measured.findings)
    if outcome.measured is None:
        result.summary["evidence"] = f"prediction: profile {contract.profile.name}"
        return
    result.summary["evidence"] = measured.evidence
    s: dict[str, Any] = measured.summary
    result.summary["measured"] = {
        # a node the compiler's output could not be tied to counts as the prediction placed it (never as NPU)
        "cpu_nodes": sum(1 for n in measured.nodes
                         if n.runs_on in (CPU, "split") or (n.unmapped and n.predicted == CPU)),
        "npu_partitions": s["npu_segments"], "cpu_partitions": s["cpu_segments"],
    }
