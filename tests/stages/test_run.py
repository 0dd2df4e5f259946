"""One stage shape (issue 36 item 5): the pipeline's loop runs a list of stages on one ``Run``,
writes the rows of the stages that do not apply or that the deadline stops, and no stage's part
of the result is written again after the verdict."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from npu_gate.contract.spec import load_contract
from npu_gate.pipeline import check_contract, contract_stages, inspect_stages, run_stages
from npu_gate.profile.spec import load_profile
from npu_gate.result.types import PASS, GateResult
from npu_gate.stages import verdict
from npu_gate.stages.context import Settings, new_result
from npu_gate.stages.exporters import Compared
from npu_gate.stages.run import Run, Skipped, Stage
from npu_gate.stages.timeout import Deadline
from tests.helpers.hook_fixtures import tiny_model, write_onnx_contract


class Step(Stage):
    """A stage that records that it ran, in a run's log."""

    def __init__(self, name: str, *, applies: bool = True, unapplied: str | None = None, limited: bool = True,
                 rows: tuple[str, ...] | None = None) -> None:
        self.name, self.limited = name, limited
        self._applies, self._unapplied, self._rows = applies, unapplied, rows

    def applies(self, run: Run) -> bool:
        return self._applies

    def unapplied(self, run: Run) -> str | None:
        return self._unapplied

    def rows(self, run: Run) -> tuple[str, ...]:
        return self._rows if self._rows is not None else (self.name,)

    def run(self, run: Run) -> None:
        run.result.log.append(self.name)
        run.result.stages.setdefault(self.name, {"status": "ok"})


def a_run(deadline: Deadline | None = None) -> Run:
    profile = load_profile("demo")
    return Run(Settings(profile=profile, deadline=deadline), new_result("m", profile, {"source": "onnx"}))


def test_the_loop_runs_the_stages_in_order_and_writes_the_rows_of_those_that_do_not_apply() -> None:
    run = a_run()
    run_stages([Step("a"), Step("b", applies=False, unapplied="no b here"), Step("c", applies=False),
                Skipped("d", "never in this run"), Step("e")], run)
    assert run.result.log == ["a", "e"]
    assert run.result.stages == {"a": {"status": "ok"}, "b": {"status": "skipped", "reason": "no b here"},
                                 "d": {"status": "skipped", "reason": "never in this run"}, "e": {"status": "ok"}}
    assert run.result.findings == []


def test_past_the_deadline_the_loop_skips_the_limited_stages_and_names_the_first_it_stopped() -> None:
    deadline = Deadline(60.0, time.monotonic() + 60.0)
    run = a_run(deadline)

    class Late(Step):
        def run(self, run: Run) -> None:
            super().run(run)
            deadline.at = time.monotonic() - 1  # the limit passes while this stage runs

    run.result.stages["already"] = {"status": "ok", "by": "an earlier stage"}
    run_stages([Late("slow"), Step("next", rows=("next", "already")), Step("then"),
                Step("records", limited=False), Step("off", applies=False, unapplied="not for this run")], run)
    reason = "timeout: the run reached its 60 s limit (--timeout) during slow"
    assert run.result.log == ["slow", "records"]  # what only records what was computed still runs
    assert run.result.stages == {
        "already": {"status": "ok", "by": "an earlier stage"},  # a row written already stays as it is
        "slow": {"status": "ok"},
        "next": {"status": "skipped", "reason": reason},
        "then": {"status": "skipped", "reason": reason},
        "records": {"status": "ok"},
        "off": {"status": "skipped", "reason": "not for this run"},  # not applying comes first
    }
    [finding] = run.result.findings
    assert (finding.rule, finding.subject) == ("gate-timeout", "slow")
    assert "during slow: next and the stages after it did not run" in finding.message


def test_the_stage_lists() -> None:
    names = [s.name for s in inspect_stages()]
    assert names == ["load", "export", "analysis", "findings", "numerics", "verdict"]


def test_the_stages_of_a_contract_in_order(tmp_path: Path) -> None:
    onnx_contract = load_contract(write_onnx_contract(tmp_path / "onnx"))
    assert [s.name for s in contract_stages(onnx_contract)] == [
        "rewrite_plan", "load", "export", "apply_rewrites", "analysis", "rewrite_weights", "probe", "findings",
        "quantization", "probe_record", "numerics", "rewrites", "verdict", "exporter_diff", "review"]
    folder = tmp_path / "torch"
    folder.mkdir()
    (folder / "net.py").write_text("def build():\n    raise NotImplementedError\n", encoding="utf-8")
    doc = {"model": {"torch": {"factory": "net:build", "compare_exporters": True}},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}], "target": {"profile": "demo"}}
    (folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    torch_contract = load_contract(folder / "npu-gate.json")
    assert [s.name for s in contract_stages(torch_contract)] == [
        "rewrite_plan", "export", "apply_rewrites", "analysis", "rewrite_weights", "probe", "findings",
        "exporter_comparison", "probe_record", "numerics", "quantization", "rewrites", "verdict", "exporter_diff",
        "review"]


def test_an_onnx_contract_gets_its_rows_from_the_loop_and_its_run_is_closed(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows of the stages an ONNX contract has no use for are the loop's; the run's work folder
    and the child process of the contract's code end with the run."""
    from npu_gate.model.worker import UserCode

    opened: list[Run] = []
    original = Run.opened

    @contextmanager
    def keeping(*args: Any, **kwargs: Any) -> Iterator[Run]:
        with original(*args, **kwargs) as run:
            opened.append(run)
            yield run

    closed: list[UserCode] = []
    close = UserCode.close

    def closing(self: UserCode) -> None:
        closed.append(self)
        close(self)

    monkeypatch.setattr(Run, "opened", keeping)
    monkeypatch.setattr(UserCode, "close", closing)
    result = check_contract(load_contract(write_onnx_contract(tmp_path, tiny_model("Relu"))))
    assert result.stages == {"export": {"status": "skipped", "reason": "ONNX file given"},
                             "numerics": {"status": "skipped", "reason": "no PyTorch reference (ONNX contract)"},
                             "suggestions": {"status": "ok", "tried": 0, "listed": 0, "rejected": []}}
    [run] = opened
    assert run.result is result and run.model is not None and run.analysis is not None
    assert run.work is not None and not run.work.exists()
    assert closed == [run.user]


def _analysed(name: str, cpu_nodes: int) -> GateResult:
    result = new_result(name, load_profile("demo"), {"source": "torch", "exporter": "dynamo"})
    result.summary = {"node_count": 3, "cpu_nodes": cpu_nodes}
    return result


def test_the_exporter_comparison_is_made_with_the_verdict_the_gated_graph_got() -> None:
    """No back-patching: the comparison keeps the other exporter's judged result, and its entry in
    the result is made after the verdict, from the gated result as it is then."""
    other = _analysed("m", 1)
    verdict.decide(other, Settings(profile=load_profile("demo")))
    compared = Compared("torchscript", ("dynamo (gated)", "torchscript (compared)"), other)
    gated = _analysed("m", 0)
    verdict.decide(gated, Settings(profile=load_profile("demo")))
    assert gated.verdict == PASS
    entry = compared.entry(gated)
    assert (entry["exporter"], entry["status"], entry["verdict"]) == ("torchscript", "ok", other.verdict)
    assert (entry["diff"]["a"]["label"], entry["diff"]["a"]["verdict"]) == ("dynamo (gated)", PASS)
    assert [m for m in entry["diff"]["metrics"] if m["metric"] == "cpu_nodes"] == [
        {"metric": "cpu_nodes", "a": 0, "b": 1, "delta": 1}]
    failed = Compared("torchscript", ("dynamo (gated)", "torchscript (compared)"), reason="export crashed")
    assert failed.entry(gated) == {"exporter": "torchscript", "status": "failed", "reason": "export crashed"}


@pytest.mark.torch
@pytest.mark.slow
def test_a_compared_exporter_is_in_the_result_only_after_the_verdict(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    decide = verdict.decide

    def watching(result: GateResult, settings: Settings) -> None:
        if result.model.get("exporter") == "torchscript":  # the gated result, not the other exporter's
            seen.append(result.exporter_comparison)
        decide(result, settings)

    monkeypatch.setattr(verdict, "decide", watching)
    (tmp_path / "net.py").write_text(
        "import torch\n\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n",
        encoding="utf-8")
    doc = {"name": "gated", "model": {"torch": {"factory": "net:build", "exporter": "torchscript",
                                                "compare_exporters": True}},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}], "target": {"profile": "demo"},
           "numerics": {"samples": 0}}
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    result = check_contract(load_contract(tmp_path / "npu-gate.json"))
    assert seen == [None]  # not there when the verdict was decided, so nothing to patch after it
    assert result.exporter_comparison is not None and result.exporter_comparison["status"] == "ok"
    assert result.exporter_comparison["diff"]["a"]["verdict"] == result.verdict
    assert result.exporter_comparison["diff"]["a"]["label"] == "torchscript (gated)"
