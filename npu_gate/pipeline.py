"""The gate as lists of stages (``npu_gate.stages``), run by one loop (``run_stages``).

``check_contract`` gates a contract; ``inspect_model`` looks at any ONNX file with the
model's own shapes. Both return one GateResult and never print. The stages of a run receive
its ``Run`` (``stages/run.py``), which the pipeline opens and closes: the work folder and the
child process that runs the contract's own code live as long as the run.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.graph.source import repository_root
from npu_gate.profile.spec import Profile
from npu_gate.result.types import GateResult, ModelInfo
from npu_gate.stages import timeout, verdict
from npu_gate.stages.analysis import Analysis, Findings
from npu_gate.stages.context import Artifacts, Settings, new_result
from npu_gate.stages.load import Load
from npu_gate.stages.run import Run, Skipped, Stage, skipped

# Only what `inspect_model` runs is imported here: the stages of a contract run (rewrites,
# compiler, quantize, export, numerics) are imported by `contract_stages`, so that
# `npu-gate inspect` does not pay for importing them (tests/commands/test_speed_paths.py).
if TYPE_CHECKING:
    from npu_gate.contract.spec import Contract
    from npu_gate.probe.base import Compiler, QuantRequest
    from npu_gate.result.probe import ProbeResult

__all__ = ["Artifacts", "Settings", "check_contract", "inspect_model", "probe_model", "replay_model"]


def run_stages(stages: Iterable[Stage], run: Run) -> None:
    """Each stage in order (see ``stages.run.Stage``): one that does not apply is skipped, with
    the row its ``unapplied`` reason gives (unless its row is written already); once the run's
    deadline has passed, a ``limited`` stage is skipped with its ``rows`` saying so (unless
    written already) and the run's ``gate-timeout`` finding is made; else it runs, and an
    ``interruptible`` one still running past the deadline is stopped (``timeout.stopping``) and
    recorded the same way."""
    result, deadline = run.result, run.deadline
    for stage in stages:
        if not stage.applies(run):
            reason = stage.unapplied(run)
            if reason is not None:  # a row written already (the deadline stopped the stage it needed) stays
                result.stages.setdefault(stage.name, skipped(reason))
            continue
        if deadline is None:
            stage.run(run)
            continue
        if stage.limited:
            if deadline.passed():
                _stopped(stage, run, deadline)
                continue
            deadline.running = stage.name
        if not stage.interruptible:
            stage.run(run)
            continue
        armed = False
        try:
            with timeout.stopping(deadline) as armed:
                stage.run(run)
        except timeout.Interrupted:
            if not armed:  # not this loop's: an outer run's (this run is inside one of its stages)
                raise
            _stopped(stage, run, deadline)


def _stopped(stage: Stage, run: Run, deadline: timeout.Deadline) -> None:
    """A stage the deadline stopped, before it ran or while it ran: its rows (unless written
    already) and the run's ``gate-timeout`` finding."""
    for row in stage.rows(run):
        run.result.stages.setdefault(row, skipped(timeout.skip_reason(deadline)))
    timeout.finish(deadline, run.result, before=stage.name)


def inspect_stages(shapes: dict[str, list[int]] | None = None) -> list[Stage]:
    """``inspect``: an ONNX file, analysed and judged by the profile alone."""
    return [Load(shapes), Skipped("export", "ONNX file given"), Analysis(), Findings(),
            Skipped("numerics", "no PyTorch reference (inspect)"), verdict.Verdict()]


def contract_stages(contract: Contract) -> list[Stage]:
    """A contract's check. The stages of an ONNX contract and of a torch one are the same but for
    the export, the exporter comparison and the numerics; an ONNX contract's quantization comes
    before the probe's row, as its result has always had it."""
    from npu_gate.stages import compiler, exporters, numerics, quantize, rewrites
    from npu_gate.stages.export import Export

    analysis: list[Stage] = [rewrites.Apply(), Analysis(), rewrites.Weights(), compiler.Probe(), Findings()]
    if contract.onnx_path is not None:
        middle: list[Stage] = [Load(), Skipped("export", "ONNX file given"), *analysis, quantize.Quantization(),
                               compiler.Record(), Skipped("numerics", "no PyTorch reference (ONNX contract)")]
    else:
        middle = [Export(), *analysis, exporters.Comparison(), compiler.Record(), numerics.Numerics(),
                  quantize.Quantization()]
    return [rewrites.Plan(), *middle, rewrites.Evaluate(), verdict.Verdict(), exporters.Diff(), rewrites.Review()]


def inspect_model(path: Path, profile: Profile, *, keep: Artifacts | None = None,
                  shapes: dict[str, list[int]] | None = None,
                  time_limit: float | None = timeout.DEFAULT_SECONDS) -> GateResult:
    """``shapes``: static input shapes that replace the model's (a probe's ``--inputs``), applied
    as a contract's are; None or empty: the model's own. ``time_limit``: seconds (None or 0:
    no limit; see ``stages.timeout``)."""
    start = time.perf_counter()
    settings = Settings(profile=profile, source_root=repository_root(path.parent) or Path.cwd(),
                        deadline=timeout.Deadline.after(time_limit))
    result = new_result(path.stem, profile, {"source": "onnx", "path": path.name, "sha256": None})
    with Run.opened(settings, result, source=path, keep=keep) as run:
        run_stages(inspect_stages(shapes), run)
    result.timings = run.timings | {"total_s": time.perf_counter() - start}
    return result


def check_contract(
    contract: Contract, *, today: dt.date | None = None, keep: Artifacts | None = None,
    time_limit: float | None = timeout.DEFAULT_SECONDS,
) -> GateResult:
    """``time_limit``: seconds for the whole run (None or 0: no limit; see ``stages.timeout``)."""
    start = time.perf_counter()
    onnx = contract.onnx_path is not None
    settings = Settings(
        profile=contract.profile,
        inputs=contract.inputs,
        gates=contract.gates,
        waivers=contract.waivers,
        today=today or dt.date.today(),
        source_root=repository_root(contract.path.parent) or contract.path.parent,
        deadline=timeout.Deadline.after(time_limit, "load" if onnx else "export"),
    )
    model: ModelInfo = {"source": "onnx", "path": contract.onnx_ref, "sha256": None}
    if not onnx:
        spec = contract.torch
        assert spec is not None
        model = {"source": "torch", "factory": spec.factory, "exporter": spec.exporter,
                 "opset_requested": spec.opset, "sha256": None}
    result = new_result(contract.name, contract.profile, model)
    result.contract = {"path": contract.path.name, "sha256": contract.sha256}
    with Run.opened(settings, result, contract=contract, source=contract.onnx_path, keep=keep,
                    prefix="npu-gate-probe-" if onnx else "npu-gate-") as run:
        run_stages(contract_stages(contract), run)
        result.code_files = run.the_user().code_files_read()
    result.timings = run.timings | {"total_s": time.perf_counter() - start}
    return result


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
