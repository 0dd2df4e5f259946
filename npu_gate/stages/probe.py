"""The probe stage (``target.probe``): build the model with the real compiler and compare its
placement with the gate's own, node by node. With ``decide: measured`` and a build, the
compiler's placement decides: the analysis stage's findings and the gates read ``Measured``."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.contract.spec import Contract
from npu_gate.result.probe import ProbeResult
from npu_gate.result.types import CPU, GateResult, make_finding
from npu_gate.stages.analyse import Measured
from npu_gate.stages.timeout import Deadline

FACTORY_CALIBRATION_ROWS = 4  # without a quantization section: as `npu-gate probe --factory`

if TYPE_CHECKING:
    from npu_gate.probe.base import QuantRequest


@dataclass
class ProbeOutcome:
    probe: ProbeResult
    measured: Measured | None  # the compiler's placement, when it decides
    calibration: str | None = None  # which samples calibrated a compiler that quantizes the module itself


def run(contract: Contract, onnx_path: Path, result: GateResult, timings: dict[str, float],
        deadline: Deadline | None = None) -> ProbeOutcome | None:
    """Probe ``onnx_path`` (the graph the gate analysed into ``result``) with the contract's
    compiler; the comparison is with ``result``'s placement, never with one recomputed here.
    The compiler's timeout (``target.probe.timeout``, else the plug-in's) is at most the time
    left before the run's ``deadline``."""
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
    with tempfile.TemporaryDirectory(prefix="npu-gate-calibration-") as folder:
        calibration, quantization = None, None
        if compiler.needs_factory:  # the compiler lowers and quantizes the PyTorch module itself, in its own venv
            options, calibration = factory_options(contract, Path(folder))
        else:
            quantization = quant_request(contract)
            if quantization is not None:
                compiler.check_quant_mode(quantization.mode, f"{contract.path}: quantization.mode")
        measured = probe(onnx_path, compiler, spec.target, compiler.python(venv), prediction=result,
                         inputs={s.name: list(s.shape) for s in contract.inputs}, timeout=limit,
                         options=options or None, venv_key=f"{contract.path}: target.probe.venv: {given}",
                         target_key=f"{contract.path}: target.probe.target {spec.target}",
                         quantization=quantization)
    timings["probe_s"] = measured.timings["total_s"]
    decides = spec.decide == "measured" and measured.built
    return ProbeOutcome(measured, Measured({n.name: n for n in measured.nodes}, measured.evidence) if decides
                        else None, calibration)


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
        "compiler": measured.compiler, "summary": measured.summary,
        "nodes": [n.to_dict() for n in measured.nodes], "segments": [g.to_dict() for g in measured.segments],
        "estimates": measured.estimates, "memory": measured.memory,
        "quantization": measured.quantization,
    }
    if outcome.calibration is not None:
        result.stages["probe"]["calibration"] = outcome.calibration
    result.findings += [make_finding(f["rule"], f["message"], severity=f["severity"]) for f in measured.findings]
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
