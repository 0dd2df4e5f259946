"""Placement findings are made once, after the probe, from one registry; the probe compares the
compiler with the gate's own placement and never analyses the model again (#16).

Before #16, ``target.probe.decide: measured`` downgraded only ``unsupported-op`` and
``op-constraint`` findings (its own list, not the registry's), so a ``profile-limit`` CPU
fallback the compiler did not make still failed the verdict; and the probe compared the
compiler with a prediction of its own, recomputed without the contract's ``inputs[].layout``.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_gate.contract.spec import load_contract
from npu_gate.pipeline import check_contract
from npu_gate.profile.spec import load_profile
from npu_gate.result.probe import ProbeNode
from npu_gate.result.types import CPU, FOLDED, NPU, GateResult
from npu_gate.rules import INFO, PLACEMENT_RULES, RULES
from npu_gate.stages import analyse as analyse_stage
from npu_gate.stages.context import Artifacts, Settings, new_result
from tests.helpers.common import RunCli, SaveModel, WriteContract, validate_result

TODAY = dt.date(2026, 12, 2)


class MakeContract(Protocol):
    """The ``contract`` fixture: writes the profile and a contract gating ``conv_add``, returns its path."""

    def __call__(self, profile: dict[str, Any], probe: dict[str, Any] | None, layout: str | None = None) -> Path: ...


FAKE = {"compiler": "fake", "target": "fake1"}  # the fake runs every op but Erf on the NPU
EVIDENCE = "measured: fake-compiler 0.1 fake1"
HEAD = {"description": "d", "source": "s", "evidence": "illustrative"}
RANK3 = {**HEAD, "name": "rank3", "extends": "demo", "limits": {"max_rank": 3}, "ops": {}}
NCHW_CONV = {**HEAD, "name": "nchw-conv", "extends": "demo",
             "ops": {"Conv": {"constraints": [{"id": "conv-nchw", "input": 0, "layout": ["NCHW"]}]}}}


def conv_add() -> onnx.ModelProto:
    """x [1, 3, 8, 8] → Conv (conv0) → Add (add0, y + y): rank-4 tensors, ops of the demo profile."""
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["y", "y"], ["z"], name="add0")]
    graph = helper.make_graph(nodes, "conv_add", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture
def contract(tmp_path: Path, save_model: SaveModel, write_contract: WriteContract) -> MakeContract:
    """A contract gating ``conv_add`` (max_cpu_nodes 0) with a profile file written next to it."""
    save_model(conv_add())

    def make(profile: dict[str, Any], probe: dict[str, Any] | None, layout: str | None = None) -> Path:
        (tmp_path / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
        target: dict[str, Any] = {"profile": "profile.json"}
        if probe is not None:
            target["probe"] = probe
        spec: dict[str, Any] = {"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}
        if layout is not None:
            spec["layout"] = layout
        return write_contract({"model": {"onnx": "model.onnx"}, "inputs": [spec], "target": target,
                               "gates": {"max_cpu_nodes": 0}})

    return make


def test_measured_placement_downgrades_profile_limit_findings(contract: MakeContract, run_cli: RunCli,
                                                              tmp_path: Path) -> None:
    """Bug 1: max_rank 3 puts both rank-4 nodes on CPU; the fake compiler runs them on the NPU."""
    out = tmp_path / "r.json"
    run = run_cli("check", contract(RANK3, {**FAKE, "decide": "measured"}), "--json", out)
    doc = json.loads(out.read_text())
    validate_result(doc)
    assert (run.code, doc["verdict"]) == (0, "pass"), run.out
    assert doc["summary"]["cpu_nodes"] == 2  # the prediction stays in the result
    assert doc["summary"]["measured"]["cpu_nodes"] == 0
    assert all(g["passed"] for g in doc["gates"])
    limits = [f for f in doc["findings"] if f["rule"] == "profile-limit"]
    assert {f["node"] for f in limits} == {"conv0", "add0"}
    for f in limits:
        assert f["severity"] == "info"
        assert f["message"].endswith(f"(measured on the NPU: {EVIDENCE})")
    assert not [f for f in doc["findings"] if f["severity"] == "error"]


def test_the_prediction_decides_profile_limit_findings_by_default(contract: MakeContract, run_cli: RunCli,
                                                                  tmp_path: Path) -> None:
    """The same contract without ``decide: measured``: the rank-4 nodes are CPU fallbacks."""
    out = tmp_path / "r.json"
    run = run_cli("check", contract(RANK3, FAKE), "--json", out)
    doc = json.loads(out.read_text())
    assert (run.code, doc["verdict"]) == (1, "fail")
    assert "measured" not in doc["summary"]
    limits = [f for f in doc["findings"] if f["rule"] == "profile-limit"]
    assert {f["node"] for f in limits} == {"conv0", "add0"}
    assert {f["severity"] for f in limits} == {"error"}
    assert [(g["name"], g["actual"], g["passed"]) for g in doc["gates"][:1]] == [("max_cpu_nodes", 2, False)]


def test_the_probe_compares_with_the_gates_own_placement(contract: MakeContract) -> None:
    """Bug 2: the NHWC input fails conv-nchw, so the gate puts Conv on CPU; the probe's
    prediction is that placement (it used to be recomputed without the layout: npu, 2/2 agree)."""
    result = check_contract(load_contract(contract(NCHW_CONV, FAKE, layout="NHWC")), today=TODAY)
    validate_result(result.to_dict())
    assert {n.name: n.placement for n in result.nodes} == {"conv0": CPU, "add0": NPU}
    assert [(f.rule, f.node, f.constraint) for f in result.findings if f.rule == "op-constraint"] == [
        ("op-constraint", "conv0", "conv-nchw")]
    probe = result.stages["probe"]
    nodes = {n["name"]: (n["predicted"], n["actual"], n["agrees"]) for n in probe["nodes"]}
    assert nodes == {"conv0": (CPU, NPU, False), "add0": (NPU, NPU, True)}
    summary = probe["summary"]
    assert (summary["compared"], summary["agree"], summary["disagree"]) == (2, 1, 1)
    assert [(d["node"], d["predicted"], d["actual"]) for d in summary["disagreements"]] == [("conv0", CPU, NPU)]
    assert (summary["predicted_npu_partitions"], summary["predicted_cpu_partitions"]) == (
        sum(1 for p in result.partitions if p.device == NPU), sum(1 for p in result.partitions if p.device == CPU))


def test_without_a_layout_the_probe_agrees(contract: MakeContract) -> None:
    """The counter-check: no declared layout, Conv passes conv-nchw, prediction and compiler agree."""
    result = check_contract(load_contract(contract(NCHW_CONV, FAKE)), today=TODAY)
    assert result.verdict == "pass"
    summary = result.stages["probe"]["summary"]
    assert (summary["compared"], summary["agree"], summary["disagree"]) == (2, 2, 0)


def test_a_check_with_a_probe_analyses_the_model_once(contract: MakeContract, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe used to run inspect_model again on the file it built."""
    calls: list[str] = []
    original = analyse_stage.analyse

    def counting(model: onnx.ModelProto, settings: Settings, result: GateResult,
                 keep: Artifacts | None = None) -> analyse_stage.Analysis:
        calls.append(model.graph.name)
        return original(model, settings, result, keep)

    monkeypatch.setattr(analyse_stage, "analyse", counting)
    result = check_contract(load_contract(contract(RANK3, {**FAKE, "decide": "measured"})), today=TODAY)
    assert result.stages["probe"]["status"] == "ok"
    assert result.verdict == "pass"
    assert calls == ["conv_add"]


# ---------------------------------------------------------------- one registry of placement rules


def three_ways() -> onnx.ModelProto:
    """x [2, 4] → Relu (relu0: not in the profile) → Add (add0: its fp16 constraint fails)
    → Mul by a [1, 1, 4] constant (mul0: a rank-3 output, above the profile's max_rank 2); and
    x → Q → DQ → Abs (abs0: runs in float, not in its QDQ unit's uint8) → Q → DQ; and the same Q
    → DQ → Gemm whose bias DQ is uint8 (onnxruntime forms no unit), so its per-channel weight DQ
    (dqw) is a node of its own, which the profile's standalone_qdq entry puts on CPU."""
    c = numpy_helper.from_array(np.ones((1, 1, 4), np.float32), "c")
    scale = numpy_helper.from_array(np.array(0.1, np.float32), "s")
    zero = numpy_helper.from_array(np.array(0, np.uint8), "z")
    gemm = [numpy_helper.from_array(np.ones((4, 4), np.int8), "wq"),
            numpy_helper.from_array(np.full(4, 0.1, np.float32), "ws"),
            numpy_helper.from_array(np.zeros(4, np.int8), "wz"),
            numpy_helper.from_array(np.zeros(4, np.uint8), "gbq")]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
             helper.make_node("Add", ["r", "r"], ["a"], name="add0"),
             helper.make_node("Mul", ["a", "c"], ["m"], name="mul0"),
             helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
             helper.make_node("Abs", ["xd"], ["b"], name="abs0"),
             helper.make_node("QuantizeLinear", ["b", "s", "z"], ["bq"], name="q1"),
             helper.make_node("DequantizeLinear", ["bq", "s", "z"], ["bd"], name="dq1"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd2"], name="dq2"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="dqw", axis=1),
             helper.make_node("DequantizeLinear", ["gbq", "s", "z"], ["gb"], name="dqb"),
             helper.make_node("Gemm", ["xd2", "w", "gb"], ["g"], name="gemm0")]
    graph = helper.make_graph(nodes, "three_ways", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 2, 4]),
                               helper.make_tensor_value_info("bd", TensorProto.FLOAT, [2, 4]),
                               helper.make_tensor_value_info("g", TensorProto.FLOAT, [2, 4])],
                              initializer=[c, scale, zero, *gemm])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture
def analysis(tmp_path: Path) -> tuple[analyse_stage.Analysis, GateResult]:
    profile = {**HEAD, "name": "three-ways", "limits": {"max_rank": 2},
               "ops": {"Add": {"constraints": [{"id": "add-fp16", "input": 0, "dtype": ["float16"]}]},
                       "Mul": {"constraints": []},
                       "Abs": {"constraints": [{"id": "abs-float", "input": 0, "dtype": ["float32"]}]},
                       "Gemm": {"constraints": []},
                       "QuantizeLinear": {"constraints": []}, "DequantizeLinear": {"constraints": []}},
               "standalone_qdq": [{"id": "alone-per-channel", "weight": True, "per_channel": True, "device": "cpu",
                                   "message": "no standalone per-channel DQ", "evidence": "illustrative"}]}
    (tmp_path / "p.json").write_text(json.dumps(profile), encoding="utf-8")
    settings = Settings(profile=load_profile(str(tmp_path / "p.json")))
    result = new_result("three_ways", settings.profile, {"source": "onnx"})
    return analyse_stage.analyse(three_ways(), settings, result), result


def test_the_cpu_fallback_findings_are_the_placement_rules(analysis: tuple[analyse_stage.Analysis, GateResult]) -> None:
    analysed, result = analysis
    assert {n.name: n.placement for n in result.nodes} == {
        "relu0": CPU, "add0": CPU, "mul0": CPU, "q0": CPU, "dq0": CPU, "abs0": CPU, "q1": CPU, "dq1": CPU,
        "dq2": NPU, "dqw": CPU, "dqb": FOLDED, "gemm0": NPU}
    # Q/DQ go with abs0; the Gemm's are nodes of their own (dqw on CPU, dqb folds: no entry says otherwise)
    assert result.summary["cpu_nodes"] == 5 and result.summary["qdq_nodes"] == 4
    findings = analyse_stage.findings(analysed)
    on_cpu = {(f.rule, f.node) for f in findings
              if f.node in {"relu0", "add0", "mul0", "abs0", "q0", "dq1", "dqw", "dq2", "dqb", "gemm0"}}
    assert on_cpu == {("unsupported-op", "relu0"), ("op-constraint", "add0"), ("profile-limit", "mul0"),
                      ("quantized-op-unsupported", "abs0"), ("standalone-qdq", "dqw")}
    assert {rule for rule, _ in on_cpu} == PLACEMENT_RULES
    assert {r.id for r in RULES.values() if r.placement} == PLACEMENT_RULES


def test_a_measurement_downgrades_every_placement_rule(analysis: tuple[analyse_stage.Analysis, GateResult]) -> None:
    """What bug 1 broke: measured on the NPU, each of the registry's rules becomes info."""
    analysed, _ = analysis
    nodes = {name: ProbeNode(name, op, CPU, NPU, runs_on=NPU)
             for name, op in (("relu0", "Relu"), ("add0", "Add"), ("mul0", "Mul"), ("abs0", "Abs"),
                              ("dqw", "DequantizeLinear"))}
    findings = analyse_stage.findings(analysed, analyse_stage.CompilerPlacement(nodes, EVIDENCE))
    placed = [f for f in findings if f.rule in PLACEMENT_RULES]
    assert {f.rule for f in placed} == PLACEMENT_RULES
    assert all(f.severity == INFO and f.message.endswith(f"(measured on the NPU: {EVIDENCE})") for f in placed)
    assert not [f for f in findings if f.severity != INFO]


def test_minimal_models_and_the_review_read_the_registry(analysis: tuple[analyse_stage.Analysis, GateResult]) -> None:
    """The evidence bundle's minimal models blame a node for each placement rule's finding; the
    rewrite review's CPU rows read the same registry."""
    from npu_gate.evidence.minimal import distinct_failures
    from npu_gate.stages import rewrites

    analysed, _ = analysis
    failures = distinct_failures(analyse_stage.findings(analysed), analysed.facts, three_ways())
    assert {(f.rule, f.node_name) for f in failures} == {
        ("unsupported-op", "relu0"), ("op-constraint", "add0"), ("profile-limit", "mul0"),
        ("quantized-op-unsupported", "abs0"), ("standalone-qdq", "dqw")}
    assert vars(rewrites)["PLACEMENT_RULES"] is PLACEMENT_RULES  # not re-exported: mypy sees no attribute
