"""target.probe in a contract: the check also builds with a (fake) compiler; `decide` says which
evidence the verdict rests on."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate.contract.spec import load_contract
from npu_gate.pipeline import check_contract
from npu_gate.probe.base import Compiler
from npu_gate.probe.fake import FakeCompiler
from npu_gate.result.probe import ProbeResult
from npu_gate.result.types import GateResult
from tests.helpers.common import REPO, RunCli, SaveModel, WriteContract, validate_result
from tests.helpers.gate_models import seed_onnx

TODAY = dt.date(2026, 12, 2)
GATES = {"max_cpu_nodes": 0, "max_npu_partitions": 1}
MakeContract = Callable[..., Path]  # the ``contract`` fixture: contract(probe, **top-level keys) -> its path


@pytest.fixture
def contract(save_model: SaveModel, write_contract: WriteContract) -> MakeContract:
    save_model(seed_onnx())

    def make(probe: dict[str, Any] | None = None, **extra: Any) -> Path:
        target: dict[str, Any] = {"profile": "demo"}
        if probe is not None:
            target["probe"] = probe
        doc = {"model": {"onnx": "model.onnx"}, "target": target, "gates": GATES,
               "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}], **extra}
        return write_contract(doc)

    return make


def _findings(result: GateResult) -> list[tuple[str, str, str | None, bool]]:
    return [(f.rule, f.severity, f.node, f.waived) for f in result.findings]


def test_measured_placement_decides(contract: MakeContract) -> None:
    result = check_contract(load_contract(contract({"compiler": "fake", "target": "fake1", "decide": "measured"})),
                            today=TODAY)
    validate_result(result.to_dict())
    assert result.verdict == "pass"
    assert result.summary["evidence"] == "measured: fake-compiler 0.1 fake1"
    assert result.summary["measured"] == {"cpu_nodes": 0, "npu_partitions": 1, "cpu_partitions": 0}
    assert result.summary["cpu_nodes"] == 1  # the prediction stays in the result
    assert [(g.name, g.actual, g.passed) for g in result.gates[:2]] == [
        ("max_cpu_nodes", 0, True), ("max_npu_partitions", 1, True)]
    clip = next(f for f in result.findings if f.rule == "unsupported-op")
    assert (clip.severity, clip.node) == ("info", "/Clip")
    assert clip.message.endswith("(measured on the NPU: measured: fake-compiler 0.1 fake1)")
    probe = result.stages["probe"]
    assert (probe["status"], probe["probe_status"], probe["decide"]) == ("ok", "ok", "measured")
    assert [s["device"] for s in probe["segments"]] == ["npu"]
    assert any(line.startswith("probe: ROW 0 Conv NPU") for line in result.log)


def test_prediction_decides_by_default_and_the_probe_is_reported(contract: MakeContract, run_cli: RunCli,
                                                                 tmp_path: Path) -> None:
    path = contract({"compiler": "fake", "target": "fake1"})
    run = run_cli("check", path, "--json", tmp_path / "r.json", "--markdown", tmp_path / "r.md")
    assert run.code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["summary"]["evidence"] == "prediction: profile demo"
    assert "measured" not in doc["summary"]
    assert doc["stages"]["probe"]["summary"]["disagreements_by_cause"] == {"op support, shape or attribute rule": 1}
    assert "  probe measured: fake-compiler 0.1 fake1: ok (compared, prediction decides)" in run.out
    report = (tmp_path / "r.md").read_text()
    assert "### Real compiler: measured: fake-compiler 0.1 fake1" in report
    assert "The verdict rests on the profile's prediction" in report


def test_compiler_failure_is_a_finding_and_can_be_waived(contract: MakeContract,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    original = FakeCompiler.request
    monkeypatch.setattr(FakeCompiler, "request", lambda self, *a: {**original(self, *a), "fail": "no"})
    waivers = [{"rule": "compiler-failed", "reason": "vendor bug #7"},
               {"rule": "unsupported-op", "reason": "Clip is fused on the real target"}]
    path = contract({"compiler": "fake", "target": "fake1", "decide": "measured"}, waivers=waivers,
                    gates={})
    result = check_contract(load_contract(path), today=TODAY)
    assert _findings(result) == [("unsupported-op", "error", "/Clip", True),
                                 ("compiler-failed", "error", None, True)]
    assert result.verdict == "pass"
    assert result.summary["evidence"] == "prediction: profile demo"  # nothing was measured
    assert result.stages["probe"]["reason"] == "build: no"


def test_the_report_of_a_failed_build_compares_no_segments(contract: MakeContract,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The Markdown report used to set the 0 / 0 segments of a build that never happened against
    the prediction ("0 npu / 0 cpu vs 2 npu / 1 cpu (differ)") where the text said there were none."""
    from npu_gate.render.markdown import render as render_markdown
    from npu_gate.render.text import render as render_text

    original = FakeCompiler.request
    monkeypatch.setattr(FakeCompiler, "request", lambda self, *a: {**original(self, *a), "fail": "no"})
    result = check_contract(load_contract(contract({"compiler": "fake", "target": "fake1"})), today=TODAY)
    nothing = ("no segments to compare: the compiler built nothing (predicted partitions of the model's nodes "
               "(the profile has no rank_adapters rule): 2 npu / 1 cpu)")
    assert f"    {nothing}\n" in render_text(result)
    report = " ".join(render_markdown(result).split())  # table cells are padded
    assert f"| Partitions | {nothing} |" in report
    assert "differ" not in report


def test_unknown_compiler_is_a_contract_error(contract: MakeContract, run_cli: RunCli) -> None:
    run = run_cli("check", contract({"compiler": "hisi", "target": "x"}))
    assert run.code == 2
    assert "target.probe.compiler: unknown compiler 'hisi' (known: ethos-u, qnn, rknn)" in run.err


def test_soc_model_is_a_qnn_key(contract: MakeContract, run_cli: RunCli) -> None:
    run = run_cli("check", contract({"compiler": "rknn", "target": "rk3588", "soc_model": 57}))
    assert run.code == 2
    assert run.err.endswith("target.probe.soc_model: only the qnn compiler takes a SoC model "
                            "(compiler is 'rknn')\n")
    run = run_cli("check", contract({"compiler": "qnn", "target": "htp", "soc_model": 0}))
    assert run.code == 2 and "target.probe.soc_model" in run.err


def test_a_target_the_compiler_refuses_names_the_contract_key(contract: MakeContract, run_cli: RunCli) -> None:
    path = contract({"compiler": "fake", "target": "rk1"})
    run = run_cli("check", path)
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {path}: target.probe.target rk1: fake-compiler refused the configuration: "
                       "config: unknown target rk1\n")


def test_missing_compiler_venv_stops_the_check(contract: MakeContract, run_cli: RunCli, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The message names the contract and its key; `check` has no --venv to suggest."""
    path = contract({"compiler": "rknn", "target": "rk3588", "venv": "no-such-venv"})
    run = run_cli("check", path)
    assert run.code == 2
    venv = tmp_path / "no-such-venv"
    assert run.err == (f"npu-gate: error: {path}: target.probe.venv: {venv}: no rknn-toolkit2 environment there "
                       f"(no {venv}/bin/python); create it with `npu-gate probe setup rknn {venv}`\n")
    monkeypatch.chdir(tmp_path)
    run = run_cli("check", contract({"compiler": "rknn", "target": "rk3588"}))
    assert run.code == 2
    assert run.err.startswith(f"npu-gate: error: {path}: target.probe.venv: not given, so .venv-rknn in the "
                              "current folder: no rknn-toolkit2 environment there "
                              f"(no {tmp_path}/.venv-rknn/bin/python)")


def test_the_probe_builds_the_rewritten_graph_the_gate_checks(contract: MakeContract) -> None:
    """With rewrites, the gate checks the rewritten graph: the compiler must build that one,
    not the file as given, or `decide: measured` would judge a graph nobody gated."""
    path = contract({"compiler": "fake", "target": "fake1", "decide": "measured"}, rewrites=["fuse-hardswish"])
    result = check_contract(load_contract(path), today=TODAY)
    probed = [(n["name"], n["op_type"]) for n in result.stages["probe"]["nodes"]]
    gated = [(n.name, n.op_type) for n in result.nodes]
    assert [op for _, op in probed] == [op for _, op in gated] == ["Conv", "HardSwish"]
    assert probed == gated
    assert result.stages["rewrites"]["applied"] == ["fuse-hardswish (1 regions)"]


def test_without_rewrites_the_probe_builds_the_file_as_given(contract: MakeContract) -> None:
    result = check_contract(load_contract(contract({"compiler": "fake", "target": "fake1"})), today=TODAY)
    assert [n["op_type"] for n in result.stages["probe"]["nodes"]] == [n.op_type for n in result.nodes]
    assert "Clip" in [n["op_type"] for n in result.stages["probe"]["nodes"]]


def _replay_instead_of_building(name: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Copy the rknn fixture ``name``'s model into ``folder`` and make every probe replay its
    captured compiler run instead of building."""
    from npu_gate.probe import runner

    fixture = REPO / "tests" / "fixtures" / "rknn" / name
    shutil.copy(fixture / "model.onnx", folder / "model.onnx")

    def replayed(model: Path, compiler: Compiler, target: str, python: Path, *, prediction: GateResult | None,
                 **options: Any) -> ProbeResult:
        result = runner.replay(fixture / "model.onnx", compiler, target, fixture / "work", prediction)
        result.timings["total_s"] = 0.0
        return result

    monkeypatch.setattr(runner, "probe", replayed)


def test_stages_probe_carries_the_adapter_comparison(write_contract: WriteContract, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """stages.probe.summary of a check: the rknn fixture rank2_odd_dims replayed in place of a build."""
    from npu_gate.render.markdown import render as render_markdown
    from npu_gate.render.text import render as render_text

    _replay_instead_of_building("rank2_odd_dims", tmp_path, monkeypatch)
    probe = {"compiler": "rknn", "target": "rk3588"}
    path = write_contract({"model": {"onnx": "model.onnx"}, "target": {"profile": "rknn-rk3588-fused", "probe": probe},
                           "inputs": [{"name": "x", "shape": [2, 12], "dtype": "float32"}]})
    result = check_contract(load_contract(path), today=TODAY)
    doc = result.to_dict()
    validate_result(doc)
    s = doc["stages"]["probe"]["summary"]
    assert s["adapters"] == {
        "predicted": [{"tensor": "x", "side": "input", "device": "cpu"},
                      {"tensor": "y", "side": "output", "device": "cpu"}],
        "actual": [{"row": 1, "op_type": "Reshape", "device": "cpu", "side": "input", "tensor": "x"},
                   {"row": 6, "op_type": "Reshape", "device": "cpu", "side": "output", "tensor": "y"}],
        "agree": True,
    }
    assert [s[k] for k in ("predicted_npu_partitions", "predicted_cpu_partitions",
                           "predicted_npu_partitions_with_adapters", "predicted_cpu_partitions_with_adapters",
                           "npu_segments", "cpu_segments")] == [1, 0, 1, 2, 1, 2]
    assert [r["tensor"] for r in doc["rank_adapters"]] == ["x", "y"]  # the check's own prediction, same rule
    text = render_text(result)
    assert ("    segments vs predicted partitions with the rank adapters: 1 npu / 2 cpu vs 1 npu / 2 cpu "
            "(match)\n") in text
    assert ("    rank adapters: predicted x (input, cpu), y (output, cpu); compiler added Reshape x (input, cpu), "
            "Reshape y (output, cpu): agree\n") in text
    report = " ".join(render_markdown(result).split())  # table cells are padded
    assert "| Partitions | segments vs predicted partitions with the rank adapters: 1 npu / 2 cpu vs 1 npu / 2 cpu " \
           "(match) |" in report
    assert "| Rank adapters | predicted x (input, cpu), y (output, cpu); compiler added Reshape x (input, cpu), " \
           "Reshape y (output, cpu): agree |" in report



def test_measured_a_predicted_cpu_node_the_compiler_folded_away_is_no_error(write_contract: WriteContract,
                                                                            tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """decide: measured on the rknn fixture gelu_head (replayed in place of a build): the Flatten
    that `demo` sends to CPU was removed by the compiler (no CPU node, one NPU segment measured),
    yet its unsupported-op error used to stay and fail the gate."""
    _replay_instead_of_building("gelu_head", tmp_path, monkeypatch)
    probe = {"compiler": "rknn", "target": "rk3588", "decide": "measured"}
    path = write_contract({"model": {"onnx": "model.onnx"}, "target": {"profile": "demo", "probe": probe},
                           "inputs": [{"name": "x", "shape": [1, 8, 16, 16], "dtype": "float32"}], "gates": GATES})
    result = check_contract(load_contract(path), today=TODAY)
    assert result.summary["measured"] == {"cpu_nodes": 0, "npu_partitions": 1, "cpu_partitions": 0}
    flat = next(f for f in result.findings if f.node == "flat")
    assert (flat.rule, flat.severity) == ("unsupported-op", "info")
    assert flat.message == ("op Flatten not in profile demo (measured: folded away by the compiler: "
                            "measured: rknn-toolkit2 2.5.0 rk3588)")
    assert result.verdict == "pass"

# --- the result cache and the compiler venv -------------------------------------------------

CACHED = "result from cache (key "


def _rknn_venv(folder: Path, version: str = "2.5.0") -> Path:
    """The files the cache key reads from an rknn venv (nothing in it is run)."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(sys.executable)
    (folder / "npu-gate-probe.json").write_text('{"compiler": "rknn", "complete": true}\n')
    (folder / "lib" / "python3.11" / "site-packages" / f"rknn_toolkit2-{version}.dist-info").mkdir(parents=True)
    return folder


def test_the_cache_key_covers_the_compiler_venv(contract: MakeContract, tmp_path: Path) -> None:
    from npu_gate import cache

    venv = _rknn_venv(tmp_path / "venv-rknn")
    loaded = load_contract(contract({"compiler": "rknn", "target": "rk3588", "venv": "venv-rknn"}))
    assert loaded.probe is not None
    assert cache.probe_environment(loaded.probe) == {
        "compiler": "rknn", "venv": str(venv.resolve()), "python": str(Path(sys.executable).resolve()),
        "manifest": cache._sha256_file(venv / "npu-gate-probe.json"), "installed": "2.5.0"}
    keys = [cache.contract_key(loaded, TODAY)]
    (venv / "npu-gate-probe.json").write_text('{"compiler": "rknn", "complete": true, "torch": "real"}\n')
    keys.append(cache.contract_key(loaded, TODAY))
    dist = venv / "lib" / "python3.11" / "site-packages"
    (dist / "rknn_toolkit2-2.5.0.dist-info").rename(dist / "rknn_toolkit2-2.6.0.dist-info")
    keys.append(cache.contract_key(loaded, TODAY))
    assert len(set(keys)) == 3
    assert cache.contract_key(loaded, TODAY) == keys[-1]
    shutil.rmtree(venv)
    with pytest.raises(cache.NotCacheable, match=r"target.probe: .*venv-rknn/bin/python does not exist"):
        cache.contract_key(loaded, TODAY)


def test_a_cached_probe_verdict_is_not_replayed_once_the_venv_is_gone(contract: MakeContract, run_cli: RunCli,
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The walkthrough's case: the venv removed, `check` still passed from the cache."""
    monkeypatch.setattr(FakeCompiler, "python", lambda self, venv: venv / "bin" / "python")
    (tmp_path / "venv-fake" / "bin").mkdir(parents=True)
    (tmp_path / "venv-fake" / "bin" / "python").symlink_to(sys.executable)
    path = contract({"compiler": "fake", "target": "fake1", "venv": "venv-fake", "decide": "measured"})
    first, second = run_cli("check", path), run_cli("check", path)
    assert (first.code, second.code) == (0, 0)
    assert CACHED not in first.out and CACHED in second.out
    shutil.rmtree(tmp_path / "venv-fake")
    gone = run_cli("check", path)
    assert gone.code == 2
    assert CACHED not in gone.out
    assert "venv-fake/bin/python" in gone.err
