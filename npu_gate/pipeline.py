"""The gate, in order: contract → model → graph facts → placement/partitions → probe → numerics
→ rewrites → verdict. This module only calls the stages (``npu_gate.stages``) in that order.

``check_contract`` gates a contract; ``inspect_model`` looks at any ONNX file with the
model's own shapes. Both return one GateResult and never print.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.graph import facts as graph_facts
from npu_gate.graph.model_file import copy_model, load_onnx
from npu_gate.graph.source import repository_root
from npu_gate.profile.spec import Profile
from npu_gate.result.types import GateResult
from npu_gate.stages import analyse, timeout, verdict
from npu_gate.stages.context import Artifacts, Settings, new_result

# Only what `inspect_model` runs is imported here: the stages of a contract run (rewrites,
# probe, quantize, export, numerics) are imported by the functions that run them, so that
# `npu-gate inspect` does not pay for importing them (tests/commands/test_speed_paths.py).
if TYPE_CHECKING:
    from onnx import ModelProto

    from npu_gate.contract.spec import Contract, InputSpec
    from npu_gate.probe.base import Compiler, QuantRequest
    from npu_gate.result.probe import ProbeResult
    from npu_gate.stages.compiler import ProbeOutcome
    from npu_gate.stages.rewrites import Rewriting

__all__ = ["Artifacts", "Settings", "check_contract", "inspect_model", "probe_model", "replay_model"]


def inspect_model(path: Path, profile: Profile, *, keep: Artifacts | None = None,
                  shapes: dict[str, list[int]] | None = None,
                  time_limit: float | None = timeout.DEFAULT_SECONDS) -> GateResult:
    """``shapes``: static input shapes that replace the model's (a probe's ``--inputs``), applied
    as a contract's are; None or empty: the model's own. ``time_limit``: seconds (None or 0:
    no limit; see ``stages.timeout``)."""
    start = time.perf_counter()
    deadline = timeout.Deadline.after(time_limit)
    model, sha256 = load_onnx(path, weights=False)
    loaded = time.perf_counter()
    result = new_result(path.stem, profile, {"source": "onnx", "path": path.name, "sha256": sha256})
    result.stages["export"] = {"status": "skipped", "reason": "ONNX file given"}
    if keep is not None:
        keep.model_path = copy_model(path, keep.folder)
    settings = Settings(profile=profile, inputs=_given_shapes(model, shapes) if shapes else None,
                        source_root=repository_root(path.parent) or Path.cwd(), deadline=deadline)
    if timeout.starts(deadline, result, "analysis"):
        analyse.analyse_with_findings(model, settings, result, keep)
    result.stages["numerics"] = {"status": "skipped", "reason": "no PyTorch reference (inspect)"}
    timeout.finish(deadline, result)
    verdict.decide(result, Settings(profile=profile))
    result.timings = {"load_s": loaded - start, "total_s": time.perf_counter() - start}
    return result


def _given_shapes(model: ModelProto, shapes: dict[str, list[int]]) -> list[InputSpec]:
    """Input specs for the given shapes, with the model's own dtypes (only the shapes are asked for)."""
    from npu_gate.contract.spec import InputSpec

    dtypes = {v.name: graph_facts.tensor_info_from_type(v.name, v.type).dtype for v in model.graph.input}
    return [InputSpec(name, list(shape), dtypes.get(name) or "float32", None, (0.0, 1.0))
            for name, shape in shapes.items()]


def check_contract(
    contract: Contract, *, today: dt.date | None = None, keep: Artifacts | None = None,
    time_limit: float | None = timeout.DEFAULT_SECONDS,
) -> GateResult:
    """``time_limit``: seconds for the whole run (None or 0: no limit; see ``stages.timeout``)."""
    from npu_gate.stages.rewrites import Rewriting

    start = time.perf_counter()
    settings = Settings(
        profile=contract.profile,
        inputs=contract.inputs,
        gates=contract.gates,
        waivers=contract.waivers,
        today=today or dt.date.today(),
        source_root=repository_root(contract.path.parent) or contract.path.parent,
        deadline=timeout.Deadline.after(time_limit, "load" if contract.onnx_path is not None else "export"),
    )
    timings: dict[str, float] = {}
    rewriting = Rewriting(contract)  # the contract's rewrites, suggestions, review table
    if contract.onnx_path is not None:
        result = _check_onnx(contract, contract.onnx_path, settings, rewriting, timings, keep)
    else:
        result = _check_torch(contract, settings, rewriting, timings, keep)
    result.contract = {"path": contract.path.name, "sha256": contract.sha256}
    if timeout.starts(settings.deadline, result, "rewrites", rewriting.pending(result)):
        rewriting.evaluate(settings, result, timings)
    timeout.finish(settings.deadline, result)
    verdict.decide(result, settings)
    if result.exporter_comparison and "diff" in result.exporter_comparison:
        result.exporter_comparison["diff"]["a"]["verdict"] = result.verdict  # known only now
    rewriting.review(result, timings)
    result.code_files = rewriting.user.code_files_read()
    rewriting.close()
    timings["total_s"] = time.perf_counter() - start
    result.timings = timings
    return result


def _check_onnx(contract: Contract, path: Path, settings: Settings, rewriting: Rewriting,
                timings: dict[str, float], keep: Artifacts | None) -> GateResult:
    from npu_gate.stages import compiler as compiler_stage

    start = time.perf_counter()
    model, sha256 = load_onnx(path, weights=False)
    timings["load_s"] = time.perf_counter() - start
    analyse.check_contract_inputs(model, contract.inputs, str(contract.path))  # exit 2 before analysis
    result = new_result(contract.name, contract.profile, {"source": "onnx", "path": contract.onnx_ref,
                                                          "sha256": sha256})
    result.stages["export"] = {"status": "skipped", "reason": "ONNX file given"}
    if keep is not None:
        keep.model_path = copy_model(path, keep.folder)
    model = rewriting.prepare(model, result)
    with tempfile.TemporaryDirectory(prefix="npu-gate-probe-") as work:
        outcome, folded = _analyse(contract, model, settings, result, timings, keep, rewriting, path, Path(work))
        _quantize(contract, rewriting.compiled_path(path, Path(work)), Path(work), settings, result, timings, keep,
                  rewriting, folded)
    if outcome is not None:
        compiler_stage.record(outcome, contract, result)
    result.stages["numerics"] = {"status": "skipped", "reason": "no PyTorch reference (ONNX contract)"}
    return result


def _check_torch(contract: Contract, settings: Settings, rewriting: Rewriting, timings: dict[str, float],
                 keep: Artifacts | None) -> GateResult:
    from npu_gate.stages import compiler as compiler_stage
    from npu_gate.stages import export, exporters, numerics  # the torch path only

    spec = contract.torch
    assert spec is not None
    result = new_result(contract.name, contract.profile,
                        {"source": "torch", "factory": spec.factory, "exporter": spec.exporter,
                         "opset_requested": spec.opset, "sha256": None})
    user = rewriting.user  # the child process that runs the contract's code (model.worker)
    with tempfile.TemporaryDirectory(prefix="npu-gate-") as folder:
        work = Path(folder)
        exported = export.run(contract, user, work, result, timings)
        if exported is None:
            return result
        if keep is not None:
            keep.model_path = copy_model(exported.onnx_path, keep.folder)
        model = rewriting.prepare(exported.model, result)
        outcome, folded = _analyse(contract, model, settings, result, timings, keep, rewriting, exported.onnx_path,
                                   work)
        if spec.compare_exporters and timeout.starts(settings.deadline, result, "exporter_comparison"):
            result.exporter_comparison = exporters.compare(contract, user, settings, work, result, timings)
        if outcome is not None:
            compiler_stage.record(outcome, contract, result)
        compared = rewriting.numerics_path(exported.onnx_path, work)
        if timeout.starts(settings.deadline, result, "numerics"):
            numerics.run(contract, user, compared, work, result, timings, keep)
        _quantize(contract, rewriting.compiled_path(exported.onnx_path, work), work, settings, result, timings, keep,
                  rewriting, folded)
    return result


def _quantize(contract: Contract, float_path: Path, work: Path, settings: Settings, result: GateResult,
              timings: dict[str, float], keep: Artifacts | None, rewriting: Rewriting, folded: set[int]) -> None:
    """Contract ``quantization``: the checked graph, its ``folded`` nodes replaced by their values,
    quantized and measured (stages/quantize.py), the contract's metric run on it in the child
    process of the contract's code."""
    from npu_gate.stages import quantize

    if contract.quantization is not None and result.analysed and timeout.starts(settings.deadline, result,
                                                                                 "quantization"):
        quantize.run(contract, settings, float_path, work, result, timings, keep, rewriting.user, folded)


def _analyse(contract: Contract, model: ModelProto, settings: Settings, result: GateResult,
             timings: dict[str, float], keep: Artifacts | None, rewriting: Rewriting, source: Path,
             work: Path) -> tuple[ProbeOutcome | None, set[int]]:
    """The analysis, then the probe of the same graph against the analysis' own placement,
    then the analysis' findings, judged by the compiler's placement when it decides; with the
    nodes the analysis folds."""
    from npu_gate.stages import compiler as compiler_stage

    if not timeout.starts(settings.deadline, result, "analysis", ("analysis", "probe") if contract.probe else None):
        return None, set()
    analysis = analyse.analyse(model, settings, result, keep)
    rewriting.load_weights(source.resolve().parent, result)  # while an export's temporary folder exists
    outcome = None
    if contract.probe is not None and timeout.starts(settings.deadline, result, "probe"):
        outcome = compiler_stage.run(contract, rewriting.compiled_path(source, work), result, timings,
                                  settings.deadline, settings=settings, work=work / "probe-preparation", keep=keep)
    result.findings.extend(analyse.findings(analysis, outcome.measured if outcome else None))
    return outcome, analysis.folded


def probe_model(model: Path, compiler: Compiler, target: str, python: Path, *, profile: Profile | None = None,
                inputs: dict[str, list[int]] | None = None, quantization: QuantRequest | None = None,
                **options: Any) -> ProbeResult:
    """``npu-gate probe``: the model prepared for the compiler (QNN: ``quantization`` int8/int16
    quantizes a float model for the HTP first, with its calibration rows), the gate's prediction of
    what the compiler builds under ``profile`` (None: none), then the probe comparing the compiler
    with it (``options``: ``probe.runner.probe``'s); ``quantization``: a quantized build
    (``--quantize``) with its calibration and hold-out samples."""
    from npu_gate.probe.runner import probe
    from npu_gate.stages import compiler as compiler_stage

    with tempfile.TemporaryDirectory(prefix="npu-gate-prepare-") as tmp:
        keep = options.get("keep")
        built, preparation = compiler_stage.cli_preparation(compiler.name, model, quantization,
                                                         keep if keep is not None else Path(tmp))
        prediction = _predict(built, profile, inputs)
        if compiler_stage.failed(preparation):  # the quantizer refused the model: a result, the compiler not run
            assert preparation is not None
            result = compiler_stage.unprepared(model, compiler, target, python, preparation, prediction, quantization)
        else:
            result = probe(built, compiler, target, python, inputs=inputs, prediction=prediction,
                           quantization=quantization, **options)
    result.preparation = preparation
    if quantization is not None and quantization.integer and preparation is None:
        from npu_gate.stages import quantize as quantize_stage

        with tempfile.TemporaryDirectory(prefix="npu-gate-quantize-") as tmp:
            quantize_stage.beside_probe(model, quantization, result, Path(tmp))
    return result


def replay_model(model: Path, compiler: Compiler, target: str, work: Path,
                 profile: Profile | None = None) -> ProbeResult:
    """A kept probe (``--keep-work``) replayed and compared with the prediction under ``profile``."""
    from npu_gate.probe.runner import replay, requested_inputs
    from npu_gate.stages import compiler as compiler_stage

    built = work / compiler_stage.QDQ_MODEL  # the QDQ model a QNN probe quantized the given one to
    model = built if compiler_stage.prepared(work) and built.is_file() else model
    return replay(model, compiler, target, work, _predict(model, profile, requested_inputs(work)))


def _predict(model: Path, profile: Profile | None, inputs: dict[str, list[int]] | None) -> GateResult | None:
    """The gate's analysis of the model a compiler builds, with the input shapes it is given."""
    if profile is None or not model.is_file():
        return None  # probe() names a missing model file itself
    return inspect_model(model, profile, shapes=inputs)
