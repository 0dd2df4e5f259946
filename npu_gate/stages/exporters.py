"""``compare_exporters``: export with the exporter the contract does not gate, analyse that
graph the same way, and diff it against the gated one (only the gated graph is judged).

Two stages: ``Comparison`` exports and analyses the other graph where the contract's stages
run (before the numerics, within the run's deadline); ``Diff`` makes the result's
``exporter_comparison`` once the verdict is decided, so the gated side shows the verdict it got.
Nothing the diff compares (summary figures, ops, nodes, shape chains) changes after the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu_gate.compare.diff import diff_results
from npu_gate.graph.model_file import load_onnx
from npu_gate.model.worker import WorkerFailed
from npu_gate.result.types import GateResult
from npu_gate.stages import verdict
from npu_gate.stages.analyse import analyse_with_findings
from npu_gate.stages.context import new_result
from npu_gate.stages.export import seconds
from npu_gate.stages.run import Run, Stage


@dataclass
class Compared:
    """The other exporter's export: its analysed and judged result, or why it failed."""

    exporter: str
    labels: tuple[str, str]  # the diff's sides: the gated exporter, the compared one
    result: GateResult | None = None  # None: the export failed (``reason``)
    reason: str | None = None

    def entry(self, gated: GateResult) -> dict[str, Any]:
        """The result's ``exporter_comparison``: the other exporter's verdict and the diff with
        ``gated`` (its verdict decided)."""
        if self.result is None:
            return {"exporter": self.exporter, "status": "failed", "reason": self.reason}
        diff = diff_results(gated.to_dict(), self.result.to_dict(), self.labels)
        return {"exporter": self.exporter, "status": "ok", "verdict": self.result.verdict, "diff": diff}


class Comparison(Stage):
    name = "exporter_comparison"

    def applies(self, run: Run) -> bool:
        spec = run.the_contract().torch
        return spec is not None and spec.compare_exporters and run.model_path is not None

    def run(self, run: Run) -> None:
        run.compared = compare(run)


class Diff(Stage):
    """The comparison's entry in the result, after the verdict."""

    name = "exporter_diff"
    limited = False

    def applies(self, run: Run) -> bool:
        return run.compared is not None

    def run(self, run: Run) -> None:
        assert run.compared is not None
        run.result.exporter_comparison = run.compared.entry(run.result)


def compare(run: Run) -> Compared:
    """The module exported again with the other exporter (in the child process of the contract's
    code), analysed and judged as the gate does it."""
    contract, gated = run.the_contract(), run.result
    spec = contract.torch
    assert spec is not None
    other = "torchscript" if spec.exporter == "dynamo" else "dynamo"
    compared = Compared(other, (f"{spec.exporter} (gated)", f"{other} (compared)"))
    folder = run.the_work() / other
    folder.mkdir()
    try:
        outcome = run.the_user().export("model.torch", other, folder)
    except WorkerFailed as exc:
        compared.reason = str(exc)
        return compared
    run.timings[f"export_{other}_s"] = seconds(outcome.data, outcome.seconds)
    gated.log.extend(f"[{other}] {line}" for line in outcome.log)
    path = outcome.data["onnx"]
    if outcome.error or path is None:
        compared.reason = outcome.error
        return compared
    model, sha256 = load_onnx(path, f"{other} export", weights=False)
    alt = new_result(contract.name, contract.profile,
                     {"source": "torch", "factory": spec.factory, "exporter": other,
                      "opset_requested": spec.opset, "sha256": sha256})
    analyse_with_findings(model, run.settings, alt)
    verdict.decide(alt, run.settings)
    compared.result = alt
    return compared
