"""The deadline interrupts a stage while it runs (issue 43 item 4): `--timeout` bounds the run even
when one stage never returns by itself. A SIGALRM raises inside the running stage `GRACE` seconds
past the deadline; the loop records it as a stage the deadline stopped (its rows skipped, the
`gate-timeout` error), the stages that record what was computed still run, and a child process of
the contract's code that the interruption catches mid-request is stopped, never left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from onnx import TensorProto as T
from onnx import helper as h

from npu_gate.contract.spec import load_contract
from npu_gate.model import worker
from npu_gate.model.worker import UserCode, WorkerFailed
from npu_gate.pipeline import run_stages
from npu_gate.process import interrupt
from npu_gate.profile.checks import matches as matches_check
from npu_gate.profile.spec import load_profile
from npu_gate.stages import timeout
from npu_gate.stages.context import Settings, new_result
from npu_gate.stages.run import Run, Stage
from npu_gate.stages.timeout import Deadline
from tests.helpers.common import CliRun, validate_result
from tests.helpers.hook_fixtures import write_onnx_contract

EQUATION = "abcdefghij,bcdefghijk,cdefghijkl,defghijklm,efghijklmn,fghijklmno->abcdefg"  # 74 characters


def _forever() -> None:
    """Python code that never ends by itself (as a stage stuck in a loop)."""
    while True:
        time.sleep(0.01)


class Forever(Stage):
    name = "analysis"

    def run(self, run: Run) -> None:
        run.result.log.append("forever started")
        _forever()


class Step(Stage):
    def __init__(self, name: str, *, limited: bool = True) -> None:
        self.name, self.limited = name, limited

    def run(self, run: Run) -> None:
        run.result.log.append(self.name)


def _run(seconds: float) -> Run:
    profile = load_profile("demo")
    return Run(Settings(profile=profile, deadline=Deadline.after(seconds, "load")),
               new_result("m", profile, {"source": "onnx"}))


def test_after_interrupts_a_python_loop_and_puts_everything_back() -> None:
    before = signal.getsignal(signal.SIGALRM)
    start = time.monotonic()
    with interrupt.after(0.2) as armed, pytest.raises(interrupt.Interrupted):
        _forever()
    assert armed
    assert 0.15 < time.monotonic() - start < 1.5
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with interrupt.after(5) as armed:  # a block that ends in time is not interrupted
        assert armed
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_deferred_section_is_interrupted_at_its_end_only() -> None:
    done = []

    def section_then_more() -> None:
        with interrupt.deferred():
            time.sleep(0.3)  # the ring comes in here
            done.append("section")
        done.append("after the section")  # never: the ring raised as the section ended

    with interrupt.after(0.05), pytest.raises(interrupt.Interrupted):
        section_then_more()
    assert done == ["section"]


def test_elsewhere_than_the_main_thread_the_block_runs_to_its_end() -> None:
    seen: list[bool] = []

    def body() -> None:
        with interrupt.after(0.01) as armed:
            time.sleep(0.1)
            seen.append(armed)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [False]


def test_a_timer_of_the_caller_is_kept() -> None:
    rang: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: rang.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with interrupt.after(0.01) as armed:
            assert not armed
            time.sleep(0.05)
        time.sleep(0.3)
        assert rang == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_the_loop_stops_a_stage_that_outlasts_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeout, "GRACE", 0.1)
    run = _run(0.2)
    start = time.monotonic()
    run_stages([Step("load", limited=False), Forever(), Step("numerics"), Step("verdict", limited=False)], run)
    assert time.monotonic() - start < 1.5
    # the stopped stage and the limited one after it: skipped; what records the result still ran
    assert run.result.log == ["load", "forever started", "verdict"]
    reason = "timeout: the run reached its 0.2 s limit (--timeout) during analysis"
    assert run.result.stages == {"analysis": {"status": "skipped", "reason": reason},
                                 "numerics": {"status": "skipped", "reason": reason}}
    [finding] = run.result.findings
    assert (finding.rule, finding.severity, finding.subject) == ("gate-timeout", "error", "analysis")
    assert finding.message == ("the run reached its time limit of 0.2 s (--timeout) during analysis: "
                               "analysis and the stages after it did not run; the verdict rests on what was analysed")
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_run_inside_a_stage_leaves_the_interruption_to_the_outer_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """An inner run (its own loop, inside a stage of the outer one) cannot arm a second timer: the
    outer one's ring goes through the inner loop to the stage it stops."""
    monkeypatch.setattr(timeout, "GRACE", 0.1)
    inner = _run(60)

    class Outer(Step):
        def run(self, run: Run) -> None:
            run_stages([Forever()], inner)

    outer = _run(0.2)
    run_stages([Outer("numerics"), Step("verdict", limited=False)], outer)
    assert inner.result.findings == [] and inner.result.stages == {}
    assert outer.result.log == ["verdict"]
    assert [(f.rule, f.subject) for f in outer.result.findings] == [("gate-timeout", "numerics")]


def test_a_stage_that_records_the_result_is_never_interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeout, "GRACE", 0.05)

    class Slow(Step):
        def run(self, run: Run) -> None:
            time.sleep(0.4)  # past the deadline and its grace
            super().run(run)

    run = _run(0.1)
    run_stages([Slow("verdict", limited=False)], run)
    assert run.result.log == ["verdict"] and run.result.findings == []


def test_an_interrupted_request_stops_the_child_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child of the contract's code, caught mid-request by the interruption, is stopped (with
    every process of its session) before the interruption goes on; later requests fail."""
    seen: list[Any] = []

    def no_answer(proc: Any, deadline: float) -> bytes | None:  # the child never answers
        seen.append(proc)
        _forever()
        return None

    monkeypatch.setattr(worker, "_read_line", no_answer)
    contract = load_contract(write_onnx_contract(tmp_path))
    with UserCode(contract) as user:
        with interrupt.after(0.5), pytest.raises(interrupt.Interrupted):
            user.request("imports")
        [proc] = seen
        assert proc.poll() is not None  # stopped and reaped, not left running
        with pytest.raises(WorkerFailed, match=r"^stopped at the run's time limit \(--timeout\)$"):
            user.request("imports")


def _einsum_contract(folder: Path) -> Path:
    """An ONNX contract of one Einsum with the issue's 74-character equation, under a profile whose
    `matches` pattern the static check accepts."""
    from npu_gate.calibrate.sweeps.einsum import EINSUM_FORMS

    folder.mkdir()
    (folder / "p.json").write_text(json.dumps({
        "name": "p", "description": "d", "source": "s", "evidence": "illustrative",
        "ops": {"Einsum": {"constraints": [
            {"id": "forms", "attribute": "equation", "matches": [EINSUM_FORMS["matmul"]]}]}}}), encoding="utf-8")
    einsum = h.make_node("Einsum", ["x", "x"], ["y"], name="einsum", equation=EQUATION)
    graph = h.make_graph([einsum], "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
                         [h.make_tensor_value_info("y", T.FLOAT, [1, 4])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    return write_onnx_contract(folder, model, target={"profile": "p.json"})


@pytest.mark.slow
def test_check_ends_within_the_limit_when_a_check_never_returns(tmp_path: Path, run_cli: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's run with a pattern that passes the static check, and a `matches` that never
    returns (Python code: what `re` itself, C code, would not let the interruption stop): `check
    --timeout 3` ends within 3 + 2 s, exit 1, with the gate-timeout error and the report."""

    def never(patterns: list[str], value: Any) -> bool:
        _forever()
        return False

    monkeypatch.setattr(matches_check, "matches", never)
    contract = _einsum_contract(tmp_path / "m")
    start = time.monotonic()
    r: CliRun = run_cli("check", contract, "--timeout", "3", "--json", tmp_path / "r.json", "--no-cache")
    took = time.monotonic() - start
    assert r.code == 1, r.err
    assert took < 5, took
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    assert doc["verdict"] == "fail"
    assert doc["stages"]["analysis"] == {
        "status": "skipped", "reason": "timeout: the run reached its 3 s limit (--timeout) during analysis"}
    assert [(f["rule"], f["subject"]) for f in doc["findings"]] == [("gate-timeout", "analysis")]
    assert "error gate-timeout: the run reached its time limit of 3 s (--timeout) during analysis" in r.out


FACTORY = '''
import time


def build():
    time.sleep(3600)
'''


@pytest.mark.slow
@pytest.mark.torch
def test_a_factory_that_never_returns_is_stopped_with_its_child(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The export is interrupted too: the contract's code hangs in its child process (importing
    torch, then in its factory), which the interruption stops with every process of its session."""
    from npu_gate.pipeline import check_contract

    started: list[subprocess.Popen[bytes]] = []

    class Recorded(subprocess.Popen[bytes]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(subprocess, "Popen", Recorded)  # the worker's child among them
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "hang_net.py").write_text(FACTORY, encoding="utf-8")
    doc = {"model": {"torch": {"factory": "hang_net:build", "exporter": "torchscript", "opset": 17}},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}], "target": {"profile": "demo"}}
    (folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    contract = load_contract(folder / "npu-gate.json")
    start = time.monotonic()
    result = check_contract(contract, time_limit=3).to_dict()
    assert time.monotonic() - start < 5
    assert result["verdict"] == "fail"
    stopped = {"status": "skipped", "reason": "timeout: the run reached its 3 s limit (--timeout) during export"}
    assert (result["stages"]["export"], result["stages"]["numerics"]) == (stopped, stopped)
    assert [(f["rule"], f["subject"]) for f in result["findings"]] == [("gate-timeout", "export")]
    [child] = started
    assert child.poll() is not None
    with pytest.raises(ProcessLookupError):  # nothing of its session is left
        os.killpg(child.pid, 0)
