"""The whole-run time limit (issue 17 item 1, `--timeout`): past it the stages not yet run are
skipped, a gate-timeout error names the stage that was running and the limit, the report is
complete and the gate fails (exit 1, never a kill, never a pass, never cached)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from npu_gate import cli
from npu_gate.stages import analyse, timeout
from tests.helpers.common import CliRun, validate_result
from tests.helpers.hook_fixtures import contract_doc, tiny_model, write_onnx_contract

Run = Callable[..., CliRun]
REASON = "timeout: the run reached its 1 s limit (--timeout) during analysis"


def slow_fold_model(loops: int = 60, trips: int = 5000) -> onnx.ModelProto:
    """Pad's pads from a chain of Loops, each within the fold budget (~0.2 s of folding each),
    so that folding them all would take until the fold budget's 10 s."""
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Identity", ["v_in"], ["v_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("v_in", T.INT64, [8])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("v_out", T.INT64, [8])])
    nodes = [h.make_node("Constant", [], ["M"], name="trip", value=h.make_tensor("m", T.INT64, [], [trips])),
             h.make_node("Constant", [], ["cond"], name="cond", value=h.make_tensor("c", T.BOOL, [], [True])),
             h.make_node("Constant", [], ["p0"], name="init", value=h.make_tensor("p", T.INT64, [8], [0, 0, 1, 1] * 2))]
    nodes += [h.make_node("Loop", ["M", "cond", f"p{i}"], [f"p{i + 1}"], name=f"loop{i}", body=body)
              for i in range(loops)]
    nodes.append(h.make_node("Pad", ["x", f"p{loops}"], ["y"], name="pad"))
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
                         [h.make_tensor_value_info("y", T.FLOAT, ["a", "b"])])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


@pytest.fixture
def slow_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis stage takes 1.3 s: a run limited to 1 s reaches its limit during it."""
    original = analyse.analyse

    def slow(*args: Any, **kwargs: Any) -> analyse.Analysis:
        time.sleep(1.3)
        return original(*args, **kwargs)

    monkeypatch.setattr(analyse, "analyse", slow)


def _timeouts(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["rule"] == "gate-timeout"]


def test_inspect_of_a_slow_fold_stops_at_the_limit_with_a_report(run_cli: Run, tmp_path: Path) -> None:
    onnx.save(slow_fold_model(), tmp_path / "slow.onnx")
    start = time.monotonic()
    run = run_cli("inspect", tmp_path / "slow.onnx", "--timeout", "1", "--json", tmp_path / "r.json",
                  "--markdown", tmp_path / "r.md")
    took = time.monotonic() - start
    assert run.code == 1, run.err
    assert took < 8, took  # without the limit folding runs to its own 10 s budget
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    assert doc["verdict"] == "fail"
    [finding] = _timeouts(doc)
    assert (finding["severity"], finding["subject"], finding["constraint"], finding["allowed"]) == (
        "error", "analysis", "seconds", 1)
    assert finding["message"].startswith("the run reached its time limit of 1 s (--timeout) during analysis: ")
    [cut] = [f for f in doc["findings"] if f["rule"] == "fold-budget"]
    assert cut["constraint"] == "deadline" and cut["node"].startswith("loop")
    assert "the run reached its time limit (--timeout) while folding" in cut["message"]
    assert "gate-timeout" in (tmp_path / "r.md").read_text()
    assert "error gate-timeout: the run reached its time limit of 1 s" in run.out


def test_check_stops_before_the_probe_and_fails(run_cli: Run, tmp_path: Path, slow_analysis: None) -> None:
    probe = {"compiler": "fake", "target": "fake1"}
    contract = write_onnx_contract(tmp_path / "m", tiny_model(), target={"profile": "demo", "probe": probe})
    run = run_cli("check", contract, "--timeout", "1", "--json", tmp_path / "r.json",
                  "--markdown", tmp_path / "r.md", "--no-cache")
    assert run.code == 1, run.err
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)  # a skipped probe row is valid (schema 1.7)
    assert doc["schema_version"] == "1.11"
    assert doc["stages"]["probe"] == {"status": "skipped", "reason": REASON}
    [finding] = _timeouts(doc)
    assert finding["subject"] == "analysis"
    assert "during analysis: probe and the stages after it did not run" in finding["message"]
    # what was analysed is all there, and alone it would pass: the limit alone fails the gate
    assert doc["summary"]["cpu_nodes"] == 0 and [f["rule"] for f in doc["findings"]] == ["gate-timeout"]
    assert "The compiler probe did not run: timeout: the run reached its 1 s limit" in (tmp_path / "r.md").read_text()
    assert f"  probe: skipped ({REASON})" in run.out


@pytest.mark.slow
def test_no_limit_with_timeout_0(run_cli: Run, tmp_path: Path, slow_analysis: None) -> None:
    contract = write_onnx_contract(tmp_path / "m", tiny_model())
    run = run_cli("check", contract, "--timeout", "0", "--json", tmp_path / "r.json", "--no-cache")
    assert run.code == 0, run.out + run.err
    assert _timeouts(json.loads((tmp_path / "r.json").read_text())) == []
    run = run_cli("inspect", tmp_path / "m" / "model.onnx", "--timeout", "0", "-q")
    assert run.code == 0


@pytest.mark.slow
def test_a_timed_out_result_is_not_cached(run_cli: Run, tmp_path: Path, slow_analysis: None) -> None:
    contract = write_onnx_contract(tmp_path / "m", tiny_model())
    cache_dir = tmp_path / "cache"
    run = run_cli("check", contract, "--timeout", "1", "--cache-dir", cache_dir, "-q")
    assert run.code == 1
    assert "not cached: the run reached its time limit (--timeout)" in run.err
    assert not list(cache_dir.rglob("*.json"))
    again = run_cli("check", contract, "--cache-dir", cache_dir)  # computed afresh, and passes
    assert again.code == 0 and "result from cache" not in again.out
    assert len(list(cache_dir.rglob("*.json"))) == 1


@pytest.mark.slow
def test_the_probe_gets_the_time_left_as_its_timeout(run_cli: Run, tmp_path: Path) -> None:
    model = tiny_model()
    model.graph.node[0].name = "hang_me"  # the fake compiler hangs on it; its own timeout is 30 s
    probe = {"compiler": "fake", "target": "fake1"}
    contract = write_onnx_contract(tmp_path / "m", model, target={"profile": "demo", "probe": probe})
    start = time.monotonic()
    run = run_cli("check", contract, "--timeout", "3", "--json", tmp_path / "r.json", "--no-cache")
    assert time.monotonic() - start < 15
    assert run.code == 1, run.err
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    probe_row = doc["stages"]["probe"]
    assert probe_row["probe_status"] == "crashed"
    limit = re.fullmatch(r"timed out after ([0-9.]+) s \(stage: load\)", probe_row["reason"])
    assert limit is not None and 1 < float(limit[1]) <= 3, probe_row["reason"]  # the time left, not 30 s
    assert [f["subject"] for f in _timeouts(doc)] == ["probe"]
    assert "compiler-failed" in [f["rule"] for f in doc["findings"]]


def test_check_onnx_takes_the_limit(run_cli: Run, tmp_path: Path, slow_analysis: None,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    write_onnx_contract(tmp_path, tiny_model())
    monkeypatch.chdir(tmp_path)
    run = run_cli("check-onnx", "model.onnx", "--timeout", "1", "--no-cache")
    assert run.code == 1
    assert "gate-timeout" in run.out


@pytest.mark.parametrize("value", ["-3", "abc", "nan", "inf"])
def test_a_bad_limit_is_exit_2_with_one_error_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["check"], ["inspect", "m.onnx"], ["check-onnx", "m.onnx"]):
        with pytest.raises(SystemExit) as stop:
            cli.main([*command, "--timeout", value])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if "error:" in line]
        assert errors == [f"npu-gate {command[0]}: error: argument --timeout: {value!r} is not a number of "
                          "seconds >= 0 (0: no limit)"], err
        assert "Traceback" not in err


def test_the_limit_is_documented_and_the_same_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.DEFAULT_TIMEOUT == timeout.DEFAULT_SECONDS == 1800
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--timeout SECONDS time limit of each model's run" in text
    assert "(0: no limit; default: 1800)" in text


def test_gate_timeout_cannot_be_waived(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "npu-gate.json"
    (tmp_path / "model.onnx").write_bytes(tiny_model().SerializeToString())
    path.write_text(json.dumps(contract_doc(waivers=[{"rule": "gate-timeout", "reason": "slow CI"}])))
    run = run_cli("check", path)
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {path}: waivers[0].rule: gate-timeout findings say the run did not "
                       "finish (raise --timeout instead) and cannot be waived\n")


@pytest.mark.torch
@pytest.mark.slow
def test_a_torch_contract_skips_numerics_past_the_limit(run_cli: Run, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    original = analyse.analyse

    def past_the_limit(model: Any, settings: Any, *args: Any, **kwargs: Any) -> analyse.Analysis:
        # the export (a child process importing torch) takes a while: the analysis outlasts what is left
        time.sleep(max(0.0, settings.deadline.left()) + 0.3)
        return original(model, settings, *args, **kwargs)

    monkeypatch.setattr(analyse, "analyse", past_the_limit)
    (tmp_path / "net.py").write_text(
        "import torch\n\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(4, 4))\n", encoding="utf-8")
    doc = {"model": {"torch": {"factory": "net:build", "exporter": "torchscript", "opset": 17}},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}], "target": {"profile": "demo"}}
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    run = run_cli("check", tmp_path, "--timeout", "20", "--json", tmp_path / "r.json", "--no-cache")
    assert run.code == 1, run.err
    result = json.loads((tmp_path / "r.json").read_text())
    validate_result(result)
    assert result["stages"]["export"]["status"] == "ok"
    assert result["stages"]["numerics"] == {
        "status": "skipped", "reason": "timeout: the run reached its 20 s limit (--timeout) during analysis"}
    assert result["numerics"] == []
    assert [f["subject"] for f in _timeouts(result)] == ["analysis"]
