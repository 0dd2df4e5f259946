"""Nodes inside If/Loop bodies are placed and reported by path; the control-flow node
itself gets a placement, and the top-level partitioning treats it as one node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx

from npu_gate.pipeline import inspect_model
from npu_gate.profile.spec import load_profile
from tests.helpers import model_zoo
from tests.helpers.common import validate_result


def _run(tmp_path: Path, model: onnx.ModelProto, ops: list[str]) -> dict[str, Any]:
    profile = {
        "name": "sub",
        "description": "test",
        "source": "tests",
        "evidence": "illustrative",
        "ops": {op: {"constraints": []} for op in ops},
    }
    (tmp_path / "p.json").write_text(json.dumps(profile), encoding="utf-8")
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    result = inspect_model(tmp_path / "m.onnx", load_profile(str(tmp_path / "p.json")))
    doc = result.to_dict()
    validate_result(doc)
    return doc


def test_if_branch_node_on_cpu_moves_the_if_to_cpu(tmp_path: Path) -> None:
    doc = _run(tmp_path, model_zoo.if_outer_scope(), ["If", "Relu", "Add"])
    placed = {n["name"]: (n["placement"], n.get("scope"), n["partition"]) for n in doc["nodes"]}
    assert placed == {
        "relu0": ("npu", None, 0),
        "if0": ("cpu", None, 1),
        "if0/else_branch/else_const": ("folded", "if0/else_branch", None),
        "if0/else_branch/else_sub": ("cpu", "if0/else_branch", None),
        "if0/then_branch/then_const": ("folded", "if0/then_branch", None),
        "if0/then_branch/then_add": ("npu", "if0/then_branch", None),
    }
    if0 = next(n for n in doc["nodes"] if n["name"] == "if0")
    assert if0["reasons"] == ["1 node(s) in its subgraphs run on CPU: if0/else_branch/else_sub"]
    errors = [(f["rule"], f.get("node")) for f in doc["findings"] if f["severity"] == "error"]
    assert errors == [("unsupported-op", "if0/else_branch/else_sub")]
    assert doc["summary"]["subgraph_nodes"] == 4
    assert doc["summary"]["subgraph_cpu_nodes"] == 1
    assert [p["nodes"] for p in doc["partitions"]] == [["relu0"], ["if0"]]


def test_if_with_every_body_op_supported_stays_on_npu(tmp_path: Path) -> None:
    doc = _run(tmp_path, model_zoo.if_outer_scope(), ["If", "Relu", "Add", "Sub"])
    placed = {n["name"]: n["placement"] for n in doc["nodes"]}
    assert placed["if0"] == "npu"
    assert placed["if0/else_branch/else_sub"] == "npu"
    assert doc["summary"]["npu_partitions"] == 1


def test_control_flow_op_missing_from_the_profile(tmp_path: Path) -> None:
    doc = _run(tmp_path, model_zoo.loop_outer_scope(), ["Identity"])
    placed = {n["name"]: n["placement"] for n in doc["nodes"]}
    assert placed["loop0"] == "cpu"
    assert placed["loop0/body/body_cond"] == "npu"
    assert placed["loop0/body/body_add"] == "cpu"
    unsupported = [f["node"] for f in doc["findings"] if f["rule"] == "unsupported-op"]
    assert unsupported == ["loop0", "loop0/body/body_add"]


def test_body_constraints_see_the_body_tensors(tmp_path: Path) -> None:
    profile = {
        "name": "sub",
        "description": "test",
        "source": "tests",
        "evidence": "illustrative",
        "ops": {
            "Identity": {"constraints": []},
            "Loop": {"constraints": []},
            "Add": {"constraints": [{"id": "add-rank", "input": 0, "rank": {"max": 1}}]},
        },
    }
    (tmp_path / "p.json").write_text(json.dumps(profile), encoding="utf-8")
    (tmp_path / "m.onnx").write_bytes(model_zoo.loop_outer_scope().SerializeToString())
    doc = inspect_model(tmp_path / "m.onnx", load_profile(str(tmp_path / "p.json"))).to_dict()
    found = [
        (f["node"], f["constraint"], f["actual"], f["allowed"])
        for f in doc["findings"]
        if f["rule"] == "op-constraint"
    ]
    assert found == [("loop0/body/body_add", "add-rank", 2, {"max": 1})]


def test_nested_subgraphs_are_named_by_their_full_path(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    def branch(name: str, op: str) -> onnx.GraphProto:
        node = helper.make_node(op, ["v_in", "v_in"], [f"{name}_out"], name=f"{name}_op")
        out = helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1, 4])
        return helper.make_graph([node], name, [], [out])

    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
            helper.make_node(
                "If",
                ["cond_in"],
                ["v_out"],
                name="inner_if",
                then_branch=branch("then", "Add"),
                else_branch=branch("else", "Mul"),
            ),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1, 4]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1, 4]),
        ],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "c", "x"], ["y"], name="loop0", body=body)],
        "nested",
        [
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    doc = _run(tmp_path, model, ["Loop", "If", "Identity", "Add"])
    placed = {n["name"]: n["placement"] for n in doc["nodes"]}
    assert placed == {
        "loop0": "cpu",
        "loop0/body/keep": "npu",
        "loop0/body/inner_if": "cpu",
        "loop0/body/inner_if/else_branch/else_op": "cpu",
        "loop0/body/inner_if/then_branch/then_op": "npu",
    }
    unsupported = [f["node"] for f in doc["findings"] if f["rule"] == "unsupported-op"]
    assert unsupported == ["loop0/body/inner_if/else_branch/else_op"]
