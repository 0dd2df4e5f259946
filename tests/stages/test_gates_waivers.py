"""Gates decide the verdict; waivers keep findings visible but stop them failing the gate."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate.contract.spec import Contract, load_contract
from npu_gate.pipeline import check_contract
from npu_gate.result.types import GateResult
from tests.helpers.common import REPO, RunCli, SaveModel, WriteContract, validate_result
from tests.helpers.gate_models import seed_onnx

TODAY = dt.date(2026, 12, 2)


SeedContract = Callable[..., Contract]
"""The ``seed_contract`` fixture: the seed net's contract with these top-level keys, loaded."""


@pytest.fixture
def seed_contract(save_model: SaveModel, write_contract: WriteContract) -> SeedContract:
    save_model(seed_onnx())

    def make(**extra: Any) -> Contract:
        doc: dict[str, Any] = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
               "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}]}
        doc.update(extra)
        return load_contract(write_contract(doc))

    return make


def summary(result: GateResult) -> list[tuple[str, str | None, bool]]:
    return [(f.rule, f.node, f.waived) for f in result.findings]


def test_gates_exceeded(seed_contract: SeedContract) -> None:
    result = check_contract(seed_contract(gates={"max_cpu_nodes": 0, "max_npu_partitions": 1,
                                                 "max_boundary_bytes": 12288}), today=TODAY)
    assert [(g.name, g.limit, g.actual, g.passed) for g in result.gates] == [
        ("max_cpu_nodes", 0, 1, False), ("max_npu_partitions", 1, 2, False),
        ("max_boundary_bytes", 12288, 12288, True), ("max_peak_activation_bytes", None, 12288, True),
        ("max_weight_bytes", None, 456, True)]
    assert [f.message for f in result.findings if f.rule == "gate-exceeded"] == [
        "max_cpu_nodes: 1 exceeds the limit 0", "max_npu_partitions: 2 exceeds the limit 1"]
    assert result.verdict == "fail"


def test_no_limits_means_every_gate_passes(seed_contract: SeedContract) -> None:
    result = check_contract(seed_contract(), today=TODAY)
    assert all(g.passed and g.limit is None for g in result.gates)
    assert summary(result) == [("unsupported-op", "/Clip", False)]


def test_active_waiver(seed_contract: SeedContract) -> None:
    waiver = {"rule": "unsupported-op", "op_type": "Clip", "reason": "rewrite planned", "expires": "2027-01-01"}
    result = check_contract(seed_contract(waivers=[waiver]), today=TODAY)
    assert summary(result) == [("unsupported-op", "/Clip", True)]
    assert result.findings[0].waiver_reason == "rewrite planned"
    assert result.verdict == "pass"
    assert result.summary["findings"] == {"error": 0, "warning": 0, "info": 0, "waived": 1}
    validate_result(result.to_dict())


def test_expired_waiver_stops_waiving_and_says_so(seed_contract: SeedContract) -> None:
    waiver = {"rule": "unsupported-op", "node": "/Clip", "reason": "old", "expires": "2026-12-01"}
    result = check_contract(seed_contract(waivers=[waiver]), today=TODAY)
    assert summary(result) == [("unsupported-op", "/Clip", False), ("waiver-expired", None, False)]
    assert result.findings[1].message == (
        "waivers[0] (rule=unsupported-op, node=/Clip) expired on 2026-12-01 and no longer waives")
    assert result.findings[1].severity == "warning"
    assert result.verdict == "fail"


def test_waiver_on_its_expiry_day_still_waives(seed_contract: SeedContract) -> None:
    waiver = {"rule": "unsupported-op", "reason": "r", "expires": TODAY.isoformat()}
    assert check_contract(seed_contract(waivers=[waiver]), today=TODAY).verdict == "pass"


def test_unused_waiver_is_reported(seed_contract: SeedContract) -> None:
    waivers = [{"rule": "unsupported-op", "op_type": "Clip", "reason": "r"},
               {"rule": "unsupported-op", "node": "/Gone", "reason": "r"}]
    result = check_contract(seed_contract(waivers=waivers), today=TODAY)
    assert summary(result) == [("unsupported-op", "/Clip", True), ("waiver-unused", None, False)]
    assert result.findings[1].severity == "info"
    assert result.verdict == "pass"


def test_waiving_a_gate(seed_contract: SeedContract) -> None:
    result = check_contract(seed_contract(
        gates={"max_cpu_nodes": 0},
        waivers=[{"rule": "unsupported-op", "reason": "r"}, {"rule": "gate-exceeded", "reason": "r"}],
    ), today=TODAY)
    assert result.verdict == "pass"
    assert [g.passed for g in result.gates] == [False, True, True, True, True]


def test_today_flag_controls_expiry(seed_contract: SeedContract, run_cli: RunCli, tmp_path: Path) -> None:
    contract = seed_contract(waivers=[{"rule": "unsupported-op", "reason": "r", "expires": "2026-06-01"}])
    assert run_cli("check", contract.path, "--today", "2026-05-01", "-q").code == 0
    run = run_cli("check", contract.path, "--today", "2026-07-01", "--json", tmp_path / "r.json")
    assert run.code == 1
    assert "waiver-expired" in run.out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [f["rule"] for f in doc["findings"]] == ["unsupported-op", "waiver-expired"]


def summary_reasons(errors: int, warnings: int) -> list[str]:
    """The finding lines of the terminal summary for warnings listed before errors."""
    from npu_gate.render import text
    from npu_gate.result.types import Finding, GateResult

    findings = [Finding("waiver-expired", "warning", f"w{i}") for i in range(warnings)]
    findings += [Finding("unsupported-op", "error", f"e{i}", node=f"n{i}") for i in range(errors)]
    findings.append(Finding("waiver-unused", "info", "not shown"))
    result = GateResult(name="m", verdict="fail", profile={"name": "demo", "evidence": "illustrative"},
                        versions={}, model={}, findings=findings)
    return text.render(result).splitlines()[2:]


def test_terminal_summary_lists_errors_first_and_keeps_a_line_for_warnings() -> None:
    assert summary_reasons(7, 2) == [
        "  error unsupported-op [n0]: e0", "  error unsupported-op [n1]: e1", "  error unsupported-op [n2]: e2",
        "  error unsupported-op [n3]: e3", "  warning waiver-expired: w0",
        "  ... 4 more (--markdown PATH lists them)"]
    assert summary_reasons(5, 0) == [f"  error unsupported-op [n{i}]: e{i}" for i in range(5)]
    assert summary_reasons(6, 0)[-1] == "  ... 1 more (--markdown PATH lists them)"
    assert summary_reasons(1, 6) == [
        "  error unsupported-op [n0]: e0", *[f"  warning waiver-expired: w{i}" for i in range(4)],
        "  ... 2 more (--markdown PATH lists them)"]
    assert summary_reasons(0, 2) == ["  warning waiver-expired: w0", "  warning waiver-expired: w1"]


def test_terminal_summary_gives_one_line_per_message() -> None:
    """300 CPU Relus used to take the five lines and hide the gate's own errors in "... 297 more"."""
    from npu_gate.render import text
    from npu_gate.result.types import Finding, GateResult

    findings = [Finding("unsupported-op", "error", "op Relu not in profile demo", node=f"relu{i}") for i in range(150)]
    findings += [Finding("unsupported-op", "error", "op Sigmoid not in profile demo", node="sig0")]
    findings += [Finding("gate-exceeded", "error", f"gate {i} exceeded") for i in range(4)]
    findings += [Finding("dynamic-shape", "warning", "unknown dims") for _ in range(2)]
    result = GateResult(name="m", verdict="fail", profile={"name": "demo", "evidence": "illustrative"},
                        versions={}, model={}, findings=findings)
    assert text.render(result).splitlines()[2:] == [
        "  error unsupported-op ×150 [relu0, relu1, relu2 and 147 more]: op Relu not in profile demo",
        "  error unsupported-op [sig0]: op Sigmoid not in profile demo",
        "  error gate-exceeded: gate 0 exceeded",
        "  error gate-exceeded: gate 1 exceeded",
        "  warning dynamic-shape ×2: unknown dims",
        "  ... 2 more (--markdown PATH lists them)"]
    findings.append(Finding("gate-exceeded", "error", "gate 3 exceeded"))  # a second finding of one reason
    assert text.render(result).splitlines()[-1] == "  ... 2 more reasons (3 findings) (--markdown PATH lists them)"


def test_an_expired_waiver_is_not_cut_from_the_terminal_summary(run_cli: RunCli, tmp_path: Path) -> None:
    """examples/custom-profile has six errors; an expired waiver adds a warning that the
    terminal used to cut (it listed the first five findings in their order)."""
    shutil.copytree(REPO / "examples" / "custom-profile", tmp_path / "cp")
    contract = tmp_path / "cp" / "npu-gate.json"
    doc = json.loads(contract.read_text())
    doc["waivers"] = [{"rule": "op-constraint", "node": "conv0", "reason": "old", "expires": "2020-01-01"}]
    contract.write_text(json.dumps(doc))
    run = run_cli("check", contract, "--today", "2026-12-02")
    assert run.code == 1
    assert run.out.splitlines()[3] == ("  memory (estimated upper bound): peak activations 61,952 bytes in partition 3 "
                                       "(u from resize0); weights 0 bytes")
    assert run.out.splitlines()[4:] == [
        "  error op-constraint [conv0]: conv-stride: stride [3, 3] not in {1, 2}",
        "  error op-constraint [conv0]: conv-square-kernel: kernel [3, 5] is not square",
        "  error op-constraint [conv0]: conv-group: group 2: dense (1) or depthwise (input channels) only, "
        "allowed [1, 16]",
        "  error unsupported-op [resize0]: op Resize not in profile team-npu",
        "  warning waiver-expired: waivers[0] (rule=op-constraint, node=conv0) expired on 2020-01-01 and no longer "
        "waives",
        "  ... 2 more (--markdown PATH lists them)"]


def test_unnamed_and_duplicate_nodes_get_display_names(save_model: SaveModel, write_contract: WriteContract) -> None:
    """``<name or op type>#<index>``; a waiver by a duplicated name says which names to use."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="dup"),
             helper.make_node("Sigmoid", ["a"], ["b"], name="dup"),
             helper.make_node("Relu", ["b"], ["c"]),  # unnamed: Relu#2, but a node is really named so
             helper.make_node("Sigmoid", ["c"], ["y"], name="Relu#2")]
    graph = helper.make_graph(nodes, "g", [x], [y])
    save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    doc: dict[str, Any] = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
           "waivers": [{"rule": "unsupported-op", "node": "dup", "reason": "by the model's name"},
                       # copied from a rendered report: the word joiner after "#" is ignored
                       {"rule": "unsupported-op", "node": "dup#\u20601", "reason": "by the display name"}]}
    result = check_contract(load_contract(write_contract(doc)), today=TODAY)
    assert summary(result) == [("unsupported-op", "dup#0", False), ("unsupported-op", "dup#1", True),
                               ("unsupported-op", "Relu#2_2", False), ("unsupported-op", "Relu#2", False),
                               ("waiver-unused", None, False)]
    assert result.findings[-1].message == (
        "waivers[0] (rule=unsupported-op, node=dup) matched no finding: node 'dup' is not unique in "
        "the model: use dup#0, dup#1")
    doc = result.to_dict()
    validate_result(doc)
    assert [(n["name"], n.get("original_name")) for n in doc["nodes"]] == [
        ("dup#0", "dup"), ("dup#1", "dup"), ("Relu#2_2", ""), ("Relu#2", None)]
