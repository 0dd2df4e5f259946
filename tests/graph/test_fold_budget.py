"""Folding computes values within a budget (issue 17): a Loop of 2**62 iterations and a
ConstantOfShape of 2**27 elements feeding Pad's pads are refused before they run, with a
fold-budget finding, and a Loop within budget still folds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto as T
from onnx import helper as h

from npu_gate.graph.edit import folded_model
from npu_gate.graph.fold_budget import FoldBudget
from npu_gate.pipeline import inspect_model
from npu_gate.profile.spec import load_profile

ROOT = Path(__file__).resolve().parents[2]


def _pad_graph(nodes: list[onnx.NodeProto]) -> onnx.ModelProto:
    nodes = [*nodes, h.make_node("Pad", ["x", "pads"], ["y"], name="pad")]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 4])],
                         [h.make_tensor_value_info("y", T.FLOAT, ["a", "b", "c", "d"])])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def loop_model(trips: int) -> onnx.ModelProto:
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
         h.make_node("Identity", ["v_in"], ["v_out"], name="body_v")],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("v_in", T.INT64, [8])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("v_out", T.INT64, [8])])
    return _pad_graph([
        h.make_node("Constant", [], ["M"], name="trip", value=h.make_tensor("m", T.INT64, [], [trips])),
        h.make_node("Constant", [], ["cond"], name="cond", value=h.make_tensor("c", T.BOOL, [], [True])),
        h.make_node("Constant", [], ["init"], name="init", value=h.make_tensor("p", T.INT64, [8], [0, 0, 1, 1] * 2)),
        h.make_node("Loop", ["M", "cond", "init"], ["pads"], name="loop", body=body),
    ])


def bomb_model(n: int = 2**24) -> onnx.ModelProto:
    return _pad_graph([
        h.make_node("Constant", [], ["shape"], name="shape", value=h.make_tensor("s", T.INT64, [2], [8, n])),
        h.make_node("ConstantOfShape", ["shape"], ["big"], name="big", value=h.make_tensor("v", T.INT64, [1], [1])),
        h.make_node("ReduceMax", ["big"], ["pads"], name="reduce", axes=[1], keepdims=0),
    ])


def _budget_findings(result_findings: list[Any]) -> list[Any]:
    return [f for f in result_findings if f.rule == "fold-budget"]


def test_loop_of_2_62_iterations_returns_with_a_finding(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    onnx.save(loop_model(2**62), model)
    out = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "npu_gate", "inspect", str(model), "--json", str(out)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    findings = [f for f in json.loads(out.read_text())["findings"] if f["rule"] == "fold-budget"]
    assert len(findings) == 1
    assert findings[0]["node"] == "loop" and findings[0]["op_type"] == "Loop"
    assert "value of pads not computed" in findings[0]["message"]
    assert findings[0]["constraint"] == "iterations"
    assert findings[0]["actual"] == 2**62 and findings[0]["allowed"] == 10_000


def test_loop_within_budget_still_folds() -> None:
    replaced, note = folded_model(loop_model(3), {0, 1, 2, 3}, FoldBudget())
    assert [n.op_type for n in replaced.graph.node] == ["Pad"], note
    budget = FoldBudget(iterations=2)
    replaced, _ = folded_model(loop_model(3), {0, 1, 2, 3}, budget)
    assert [n.op_type for n in replaced.graph.node] == ["Loop", "Pad"]
    assert [(s.index, s.limit, s.actual) for s in budget.skips] == [(3, "iterations", 3)]


def test_memory_bomb_is_refused_before_it_is_evaluated(tmp_path: Path) -> None:
    budget = FoldBudget()
    tracemalloc.start()
    try:
        replaced, note = folded_model(bomb_model(), {0, 1, 2}, budget)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000  # the 8 x 2**24 int64 tensor is 1 GiB
    assert [(s.index, s.limit, s.actual, s.dependents) for s in budget.skips] == [(1, "elements", 8 * 2**24, 1)]
    assert [n.op_type for n in replaced.graph.node] == ["ConstantOfShape", "ReduceMax", "Pad"], note


def test_memory_bomb_inspect_stays_small(tmp_path: Path) -> None:
    onnx.save(bomb_model(), tmp_path / "bomb.onnx")
    tracemalloc.start()
    try:
        result = inspect_model(tmp_path / "bomb.onnx", load_profile("demo"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200_000_000
    findings = _budget_findings(result.findings)
    assert [(f.node, f.constraint) for f in findings] == [("big", "elements")]
    assert result.stages["symbolic_shapes"]["status"] == "skipped"
