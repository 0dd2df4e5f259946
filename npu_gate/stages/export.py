"""The export stage: build the contract's PyTorch module and export it to ONNX (torch only), in
the child process that runs the contract's code (``model.worker``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from npu_gate.findings.model import export_failed
from npu_gate.graph.model_file import copy_model, load_onnx
from npu_gate.model.worker import WorkerFailed
from npu_gate.stages.run import Run, Stage


class Export(Stage):
    """A torch contract's module exported: ``run.model`` (loaded without external weights,
    ``load_onnx(weights=False)``) and ``run.model_path``. On failure both stay None: no stage that
    needs the graph applies, and the numerics row says the export failed."""

    name = "export"
    limited = False  # the first stage: the deadline starts with it

    def rows(self, run: Run) -> tuple[str, ...]:
        # stopped here, the numerics of the export do not run either: their row says why, not "export failed"
        return ("export", "numerics")

    @property
    def interruptible(self) -> bool:
        return True  # a factory or an exporter that outlasts the deadline is stopped, its child process with it

    def run(self, run: Run) -> None:
        export_model(run)


def export_model(run: Run) -> None:
    """Build the contract's module (seeded, eval mode) and export it into the run's work folder,
    both in the child process of the contract's code: the stage row and, on failure, an
    export-failed finding. What the factory's code printed starts the log. A factory that cannot
    be imported or returns no module is a ModelError, as a contract problem."""
    user, work, result, timings = run.the_user(), run.the_work(), run.result, run.timings
    spec = run.the_contract().torch
    assert spec is not None
    error: str | None
    try:
        built = user.build("model.torch")
        result.log.extend(built.log)
        error, onnx_path = built.error, None
        if error is None:
            outcome = user.export("model.torch", spec.exporter, work)
            timings["export_s"] = seconds(outcome.data, outcome.seconds)
            result.log.extend(outcome.log)
            error, onnx_path = outcome.error, outcome.data["onnx"]
    except WorkerFailed as exc:
        error, onnx_path = str(exc), None
    error = scrub(error, str(work))
    if error or onnx_path is None:
        result.stages["export"] = {"status": "failed", "reason": error}
        result.findings.append(export_failed(spec.exporter, error))
        return
    result.stages["export"] = {"status": "ok", "exporter": spec.exporter, "log_lines": len(outcome.log)}
    run.model, result.model["sha256"] = load_onnx(onnx_path, "exported model", weights=False)
    run.model_path = onnx_path
    if run.keep is not None:
        run.keep.model_path = copy_model(onnx_path, run.keep.folder)


def seconds(data: dict[str, Any], default: float) -> float:
    """The exporter's own time as the child measured it (a number, else the request's)."""
    value = data.get("seconds")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def scrub(text: str | None, workdir: str) -> str | None:
    """Messages that quote the temporary export folder name it "<export dir>": the result
    must not change from run to run (the evidence bundle compares them byte for byte)."""
    if text is None:
        return None
    for form in {workdir, str(Path(workdir).resolve())}:
        text = text.replace(form, "<export dir>")
    return text
