"""The analysis stages of a run: ``Analysis`` runs ``analyse.analyse`` on the checked graph,
``Findings`` makes its findings once the probe (if any) has run, so a CPU fallback the compiler
did not make is judged by the compiler's placement from the start (``analyse.findings``)."""

from __future__ import annotations

from npu_gate.stages import analyse
from npu_gate.stages.run import Run, Stage


class Analysis(Stage):
    """Graph facts, placement and partitions of ``run.model`` into the result: ``run.analysis``."""

    name = "analysis"

    def applies(self, run: Run) -> bool:
        return run.model is not None

    def rows(self, run: Run) -> tuple[str, ...]:
        # stopped here, the probe of the same graph does not run either
        return ("analysis", "probe") if run.contract is not None and run.contract.probe else ("analysis",)

    def run(self, run: Run) -> None:
        assert run.model is not None
        run.analysis = analyse.analyse(run.model, run.settings, run.result, run.keep)


class Findings(Stage):
    """The analysis' findings, judged by the compiler's placement when it decides."""

    name = "findings"
    limited = False

    def applies(self, run: Run) -> bool:
        return run.analysis is not None

    def run(self, run: Run) -> None:
        assert run.analysis is not None
        measured = run.probe.measured if run.probe is not None else None
        run.result.findings.extend(analyse.findings(run.analysis, measured))
