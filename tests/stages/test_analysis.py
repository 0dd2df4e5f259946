"""Graph facts, placement, folding, partitions and boundary bytes on models built in code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_gate.contract.spec import load_contract
from npu_gate.pipeline import check_contract, inspect_model
from npu_gate.profile.spec import load_profile
from npu_gate.result.types import GateResult
from tests.helpers import model_zoo
from tests.helpers.common import RunCli, SaveModel, WriteContract, validate_result
from tests.helpers.gate_models import seed_onnx


def write_profile(tmp_path: Path, ops: dict[str, dict[str, Any]], name: str = "test-npu") -> Path:
    doc = {"name": name, "description": "test profile", "source": "tests", "evidence": "illustrative",
           "ops": ops}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def inspect(tmp_path: Path, model: onnx.ModelProto, ops: dict[str, dict[str, Any]] | None = None,
            profile: str = "demo") -> GateResult:
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    ref = str(write_profile(tmp_path, ops)) if ops is not None else profile
    result = inspect_model(path, load_profile(ref))
    validate_result(result.to_dict())
    return result


def placements(result: GateResult) -> dict[str, str]:
    return {n.name: n.placement for n in result.nodes}


def partitions(result: GateResult) -> list[tuple[str, list[str]]]:
    return [(p.device, p.nodes) for p in result.partitions]


def rules(result: GateResult, waived: bool | None = None) -> list[tuple[str, str | None]]:
    return [(f.rule, f.node) for f in result.findings if waived is None or f.waived == waived]


def test_seed_net_under_demo(tmp_path: Path) -> None:
    result = inspect(tmp_path, seed_onnx())
    assert placements(result) == {
        "/conv/Conv": "npu", "three_node": "folded", "/Add": "npu", "zero_node": "folded",
        "six_node": "folded", "/Clip": "cpu", "/Mul": "npu", "six_b_node": "folded", "/Div": "npu"}
    assert partitions(result) == [("npu", ["/conv/Conv", "/Add"]), ("cpu", ["/Clip"]),
                                  ("npu", ["/Mul", "/Div"])]
    assert [(b.tensor, b.bytes, b.source, b.target) for b in result.boundaries] == [
        ("add", 4096, 0, 1), ("conv", 4096, 0, 2), ("clip", 4096, 1, 2)]
    s = result.summary
    assert (s["npu_nodes"], s["cpu_nodes"], s["folded_nodes"]) == (4, 1, 4)
    assert (s["npu_partitions"], s["cpu_partitions"], s["boundary_bytes"]) == (2, 1, 12288)
    assert rules(result) == [("unsupported-op", "/Clip")]
    assert result.findings[0].message == "op Clip not in profile demo"
    assert result.ops == {"Add": 1, "Clip": 1, "Constant": 4, "Conv": 1, "Div": 1, "Mul": 1}
    assert result.verdict == "fail"


def test_partitions_are_convex_on_a_diamond(tmp_path: Path) -> None:
    # A→B→D and A→C→D with B on CPU: A, C, D cannot be one NPU partition.
    result = inspect(tmp_path, model_zoo.diamond(), {"Relu": {}, "Sigmoid": {}, "Add": {}, "Constant": {}})
    assert partitions(result) == [("npu", ["A", "C"]), ("cpu", ["B"]), ("npu", ["D"])]
    assert [(b.tensor, b.source, b.target) for b in result.boundaries] == [
        ("a", 0, 1), ("c", 0, 2), ("b", 1, 2)]
    assert result.summary["boundary_bytes"] == 3 * 4 * 4 * 8 * 8
    assert {n.name: n.partition for n in result.nodes} == {
        "A": 0, "B_min": None, "B_max": None, "B": 1, "C": 0, "D": 2}


def test_same_device_branches_join_and_disconnected_ones_do_not(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("s", "t")]
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="A"),
        helper.make_node("Relu", ["y"], ["b"], name="B"),
        helper.make_node("Add", ["a", "b"], ["s"], name="S"),   # joins A and B
        helper.make_node("Relu", ["y"], ["c"], name="C"),
        helper.make_node("Relu", ["c"], ["t"], name="T"),       # never meets the others
    ]
    model = helper.make_model(helper.make_graph(nodes, "g", [x, y], outs),
                              opset_imports=[helper.make_opsetid("", 17)])
    result = inspect(tmp_path, model, {"Relu": {}, "Add": {}})
    assert partitions(result) == [("npu", ["A", "B", "S"]), ("npu", ["C", "T"])]
    assert result.boundaries == []
    assert result.summary["boundary_bytes"] == 0


def test_outer_scope_reads_of_subgraphs_count_as_edges(tmp_path: Path) -> None:
    result = inspect(tmp_path, model_zoo.if_outer_scope(), {"Relu": {}})
    assert placements(result) == {
        "relu0": "npu", "if0": "cpu",
        "if0/then_branch/then_const": "folded", "if0/then_branch/then_add": "cpu",
        "if0/else_branch/else_const": "folded", "if0/else_branch/else_sub": "cpu"}
    assert [(b.tensor, b.bytes, b.source, b.target) for b in result.boundaries] == [
        ("outer_t", 16, 0, 1)]


def test_weights_in_constant_nodes_fold(tmp_path: Path) -> None:
    result = inspect(tmp_path, model_zoo.weights_in_constant_nodes(),
                     {"Conv": {}, "Add": {}})
    assert placements(result) == {"const_w": "folded", "const_b": "folded", "conv0": "npu",
                                  "const_shape": "folded", "const_of_shape0": "folded", "add0": "npu"}
    assert partitions(result) == [("npu", ["conv0", "add0"])]
    assert result.verdict == "pass"


def test_generator_ops_are_not_folded(tmp_path: Path) -> None:
    result = inspect(tmp_path, model_zoo.random_generator(), {"Add": {}})
    assert placements(result) == {"random_normal0": "cpu", "add0": "npu"}
    assert rules(result) == [("unsupported-op", "random_normal0")]


def test_initializer_listed_as_input_is_a_weight(tmp_path: Path) -> None:
    result = inspect(tmp_path, model_zoo.ir3_initializer_as_input(), {"MatMul": {}})
    assert [i["name"] for i in result.inputs] == ["x"]
    assert result.verdict == "pass"


def test_initializer_declared_in_contract_is_an_input(tmp_path: Path, save_model: SaveModel,
                                                      write_contract: WriteContract) -> None:
    save_model(model_zoo.ir3_initializer_as_input())
    profile = write_profile(tmp_path, {"MatMul": {}})
    x, w = model_zoo.ir3_initializer_as_input().graph.input

    def dims(v: onnx.ValueInfoProto) -> list[int]:
        return [d.dim_value for d in v.type.tensor_type.shape.dim]

    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": profile.name},
           "inputs": [{"name": "x", "shape": dims(x), "dtype": "float32"},
                      {"name": "w", "shape": dims(w), "dtype": "float32"}]}
    result = check_contract(load_contract(write_contract(doc)))
    assert [i["name"] for i in result.inputs] == ["x", "w"]
    assert result.verdict == "pass"


def test_resize_gets_its_default_coordinate_transformation_mode(tmp_path: Path) -> None:
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="nearest")]
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["h", "w", "c", "d"])], [scales])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    result = inspect(tmp_path, model, {"Resize": {}})
    node = result.nodes[0]
    assert node.attributes["coordinate_transformation_mode"] == "half_pixel"
    assert node.attributes["mode"] == "nearest"
    assert "coordinate_transformation_mode" in node.defaulted_attributes
    assert "mode" not in node.defaulted_attributes
    # The empty optional roi input is absent, not dynamic; the output shape is inferred.
    assert node.outputs[0]["shape"] == [1, 2, 8, 8]
    assert result.findings == []


def test_conv_spatial_defaults_are_filled(tmp_path: Path) -> None:
    result = inspect(tmp_path, model_zoo.conv_relu(), {"Conv": {}, "Relu": {}})
    conv = result.nodes[0]
    assert conv.attributes["kernel_shape"] == [3, 3]
    assert conv.attributes["strides"] == [1, 1]
    assert conv.attributes["dilations"] == [1, 1]
    assert conv.attributes["group"] == 1
    assert conv.defaulted_attributes == ["auto_pad", "dilations", "group", "strides"]
    # Without kernel_shape, the kernel comes from the weight's spatial dims.
    model = model_zoo.conv_relu()
    del model.graph.node[0].attribute[0]
    conv = inspect(tmp_path, model, {"Conv": {}, "Relu": {}}).nodes[0]
    assert conv.attributes["kernel_shape"] == [3, 3]
    assert "kernel_shape" in conv.defaulted_attributes


def test_deform_conv_spatial_defaults_are_filled(tmp_path: Path) -> None:
    """DeformConv (opset 19) states Conv's defaults in prose too: kernel from the weight, strides
    and dilations 1, pads 0. A constraint on them used to fail: `is absent and has no default`."""
    weight = numpy_helper.from_array(np.ones([8, 4, 3, 3], np.float32), "w")
    offset = helper.make_tensor_value_info("offset", TensorProto.FLOAT, [1, 18, 6, 6])
    node = helper.make_node("DeformConv", ["x", "w", "offset"], ["y"], name="dconv0")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8]), offset],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    ops = {"DeformConv": {"constraints": [
        {"id": "k", "attribute": "kernel_shape", "each": True, "max": 3},
        {"id": "s", "attribute": "strides", "each": True, "in": [1]},
        {"id": "d", "attribute": "dilations", "each": True, "in": [1]},
        {"id": "p", "attribute": "pads", "each": True, "max": {"ref": {"attribute": "kernel_shape"}, "add": -1}},
    ]}}
    dconv = inspect(tmp_path, model, ops).nodes[0]
    assert (dconv.placement, dconv.reasons) == ("npu", [])
    assert {k: dconv.attributes[k] for k in ("kernel_shape", "strides", "dilations", "pads")} == {
        "kernel_shape": [3, 3], "strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0]}
    assert dconv.defaulted_attributes == ["dilations", "group", "kernel_shape", "offset_group", "pads", "strides"]


def test_every_failed_constraint_is_reported_with_its_value(tmp_path: Path) -> None:
    ops = {"Conv": {"constraints": [
        {"id": "conv-kernel", "attribute": "kernel_shape", "each": True, "max": 1},
        {"id": "conv-stride", "attribute": "strides", "each": True, "in": [2]},
        {"id": "conv-group", "attribute": "group", "in": [1]},
        {"id": "conv-x-dtype", "input": 0, "dtype": ["float16"]},
        {"id": "conv-channels", "input": 1, "dim": {"axis": 0, "multiple_of": 16}},
        {"id": "conv-weights", "input": 1, "constant": True},
    ]}, "Relu": {}}
    result = inspect(tmp_path, model_zoo.conv_relu(), ops)
    found = [(f.rule, f.node, f.constraint, f.actual, f.allowed, f.message) for f in result.findings]
    assert found == [
        ("op-constraint", "conv0", "conv-kernel", [3, 3], {"max": 1},
         "conv-kernel: attribute kernel_shape [3, 3] is above the maximum 1"),
        ("op-constraint", "conv0", "conv-stride", [1, 1], [2], "conv-stride: attribute strides [1, 1] not in {2}"),
        ("op-constraint", "conv0", "conv-x-dtype", "float32", ["float16"],
         "conv-x-dtype: input 0 dtype float32 not in [float16]"),
        ("op-constraint", "conv0", "conv-channels", 4, {"multiple_of": 16},
         "conv-channels: input 1 dim 0 = 4 is not a multiple of 16"),
    ]
    assert placements(result) == {"conv0": "cpu", "relu0": "npu"}
    # the node's reasons say what failed; its findings name the constraint first
    assert [f"{f[2]}: {r}" for f, r in zip(found, result.nodes[0].reasons, strict=True)] == [f[5] for f in found]


def test_constraint_message_template(tmp_path: Path) -> None:
    ops = {"Conv": {"constraints": [{"id": "conv-stride", "attribute": "strides", "each": True,
                                     "in": [2], "message": "stride {actual} not in {allowed}"}]},
           "Relu": {}}
    result = inspect(tmp_path, model_zoo.conv_relu(), ops)
    assert result.findings[0].message == "conv-stride: stride [1, 1] not in [2]"


def test_a_message_without_placeholders_explains_the_failure_it_follows(tmp_path: Path) -> None:
    """A calibrated profile's evidence used to replace what failed: every Resize constraint read the same."""
    ops = {"Conv": {"constraints": [{"id": "conv-stride", "attribute": "strides", "each": True, "in": [2],
                                     "message": "measured on CPU at stride 1"}]}, "Relu": {}}
    result = inspect(tmp_path, model_zoo.conv_relu(), ops)
    assert result.findings[0].message == "conv-stride: attribute strides [1, 1] not in {2}; measured on CPU at stride 1"


def test_dynamic_input_is_reported_even_when_the_contract_fixes_it(tmp_path: Path, save_model: SaveModel,
                                                                   write_contract: WriteContract) -> None:
    save_model(model_zoo.symbolic_dims())
    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "x", "shape": [2, 3, 4, 5], "dtype": "float32"}]}
    result = check_contract(load_contract(write_contract(doc)))
    dynamic = [f for f in result.findings if f.rule == "dynamic-input"]
    assert [(f.severity, f.message) for f in dynamic] == [
        ("error", "input x has dynamic shape [batch, 3, 2*floor(h/2), ?] in the model; "
                  "the contract fixes [2, 3, 4, 5]: export with static shapes or fix the dim in the "
                  "model (x[0] = 2, x[2] = 4, x[3] = 5)")]
    # The contract's shapes were applied: everything downstream is static.
    assert not [f for f in result.findings if f.rule == "dynamic-shape"]
    assert result.nodes[1].outputs[0]["shape"] == [2, 60]
    assert result.inputs[0]["shape"] == [2, 3, 4, 5]
    assert result.inputs[0]["model_shape"] == ["batch", 3, "2*floor(h/2)", None]
    assert result.summary["dynamic_inputs"] == ["x"]


def test_an_input_without_a_shape_is_dynamic_of_unknown_rank(tmp_path: Path, save_model: SaveModel,
                                                             write_contract: WriteContract) -> None:
    """No shape at all is not "[?]" (which reads as rank 1), and there is no dim to name as the fix."""
    model = model_zoo.conv_relu()
    model.graph.input[0].type.tensor_type.ClearField("shape")
    assert [f.message for f in inspect(tmp_path, model).findings if f.rule == "dynamic-input"] == [
        "input x has no shape (not even a rank) in the model"]
    save_model(model)
    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}]}
    result = check_contract(load_contract(write_contract(doc)))
    assert [f.message for f in result.findings if f.rule == "dynamic-input"] == [
        "input x has no shape (not even a rank) in the model; the contract fixes [1, 3, 8, 8]: export with "
        "static shapes or declare the input's shape in the model"]
    assert result.summary["dynamic_inputs"] == ["x"]


@pytest.mark.parametrize(("elem_type", "dtype", "nbytes"), [
    (TensorProto.FLOAT8E4M3FN, "float8e4m3fn", 5),  # one byte each
    (TensorProto.INT4, "int4", 3),  # packed: ceil(5 * 4 / 8)
])
def test_boundary_bytes_of_float8_and_packed_types_are_known(tmp_path: Path, elem_type: int, dtype: str,
                                                              nbytes: int) -> None:
    """A static tensor of a later element type has a byte size: boundary_bytes is not null for it
    (a max_boundary_bytes gate read such a model as "unknown (shapes not static)")."""
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["a"], to=elem_type, name="to"),
         helper.make_node("Identity", ["a"], ["b"], name="cpu"),
         helper.make_node("Cast", ["b"], ["y"], to=TensorProto.FLOAT, name="back")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])])
    result = inspect(tmp_path, model_zoo._model(graph, opset=21, ir_version=10), {"Cast": {}})
    assert result.nodes[1].outputs[0]["dtype"] == dtype
    assert [(b["tensor"], b["bytes"]) for b in result.to_dict()["boundaries"]] == [("a", nbytes), ("b", nbytes)]
    assert result.summary["boundary_bytes"] == 2 * nbytes


def test_dynamic_shapes_in_inspect_and_unknown_boundary_bytes(tmp_path: Path) -> None:
    result = inspect(tmp_path, model_zoo.symbolic_dims(), {"Relu": {}})
    assert [(f.rule, f.node, f.severity) for f in result.findings] == [
        ("dynamic-input", None, "error"),
        ("unsupported-op", "flatten0", "error"),
        ("dynamic-shape", "relu0", "error"),
        ("dynamic-shape", "flatten0", "error"),
    ]
    assert result.summary["boundary_bytes"] is None
    assert result.boundaries[0].bytes is None


def test_allow_dynamic_shapes_makes_them_warnings(tmp_path: Path, save_model: SaveModel,
                                                  write_contract: WriteContract) -> None:
    save_model(model_zoo.symbolic_dims())
    profile = write_profile(tmp_path, {"Relu": {}, "Flatten": {}})
    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": profile.name},
           "inputs": [{"name": "x", "shape": [2, 3, 4, 5], "dtype": "float32"}],
           "gates": {"allow_dynamic_shapes": True}}
    result = check_contract(load_contract(write_contract(doc)))
    assert [(f.rule, f.severity) for f in result.findings] == [("dynamic-input", "warning")]
    assert result.verdict == "pass"


def test_input_mismatches_that_are_findings(tmp_path: Path, save_model: SaveModel,
                                            write_contract: WriteContract) -> None:
    """A dtype the model does not have and a model input the contract leaves out stay
    input-mismatch findings; a wrong name or shape is a contract error (tests/contract)."""
    model = model_zoo.conv_relu()
    model.graph.input.append(helper.make_tensor_value_info("extra", TensorProto.INT64, [1]))
    save_model(model)
    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float16"}]}
    result = check_contract(load_contract(write_contract(doc)))
    messages = [f.message for f in result.findings if f.rule == "input-mismatch"]
    assert messages == [
        "input x: contract dtype float16, model dtype float32",
        "model input extra is not declared in the contract",
    ]


def test_checker_full_check_failure_names_the_node(tmp_path: Path) -> None:
    result = inspect(tmp_path, model_zoo.shape_mismatch_broken(), {"MatMul": {}})
    checker = [f for f in result.findings if f.rule == "onnx-checker"]
    assert len(checker) == 1
    assert checker[0].node == "matmul0"
    assert "Incompatible dimensions for matrix multiplication" in checker[0].message
    assert result.verdict == "fail"


def _clear(value: onnx.ValueInfoProto, path: str) -> None:
    """Remove one field of a value info: "type", "type.tensor_type.shape"..."""
    *parents, name = path.split(".")
    for part in parents:
        value = getattr(value, part)
    value.ClearField(name)


@pytest.mark.parametrize(("side", "path", "message"), [
    ("output", "type.tensor_type.shape", "graph output 'y': Field 'shape' of 'type' is required but missing."),
    ("input", "type.tensor_type.shape", "graph input 'x': Field 'shape' of 'type' is required but missing."),
    ("output", "type.tensor_type.elem_type",
     "graph output 'y': Field 'elem_type' of 'type' is required but missing."),
    ("output", "type", "graph output 'y': Field 'type' of 'value_info' is required but missing."),
    ("input", "name", "graph input 0 (no name): Field 'name' of 'value_info' is required to be non-empty."),
])
def test_checker_findings_about_graph_inputs_and_outputs_name_the_tensor(tmp_path: Path, side: str, path: str,
                                                                         message: str) -> None:
    """onnx.checker's text names no tensor; the finding names the graph input or output it is about."""
    model = model_zoo.conv_relu()
    _clear(getattr(model.graph, side)[0], path)
    result = inspect(tmp_path, model)
    messages = [f.message for f in result.findings if f.rule == "onnx-checker"]
    assert messages[0] == message  # (the nameless input also fails the full check: a second finding)
    assert len(messages) == (2 if path == "name" else 1)


def test_checker_findings_name_the_first_graph_value_that_fails(tmp_path: Path) -> None:
    """The checker stops at the first input, then output, that fails: that one is named."""
    from npu_gate.graph.facts import run_checker

    model = model_zoo.conv_relu()
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))  # no shape
    model.graph.output[0].type.tensor_type.ClearField("elem_type")
    assert run_checker(model) == ["graph output 'y': Field 'elem_type' of 'type' is required but missing."]
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    assert run_checker(model) == ["graph output 'z': Field 'shape' of 'type' is required but missing."]
    # a check that comes first fails (the model's IR version): its message is left as the checker wrote it
    model.ClearField("ir_version")
    assert run_checker(model) == [_checker_text(model)]
    assert "graph" not in _checker_text(model) and "Field 'shape'" not in _checker_text(model)


def _checker_text(model: onnx.ModelProto) -> str:
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        return str(exc).strip()
    raise AssertionError("the model passes the checker")


@pytest.mark.parametrize("name", sorted(model_zoo.ALL_SIMPLE))
def test_messy_models_never_crash(tmp_path: Path, name: str) -> None:
    result = inspect(tmp_path, model_zoo.ALL_SIMPLE[name]())
    assert result.verdict in ("pass", "fail")
    assert result.summary["node_count"] == len(model_zoo.ALL_SIMPLE[name]().graph.node)


def test_custom_domain_ops_use_qualified_keys(tmp_path: Path) -> None:
    result = inspect(tmp_path, model_zoo.custom_domain_op(), {"Relu": {}, "com.vendor::MyNpuOp": {}})
    assert placements(result) == {"relu0": "npu", "my_npu_op0": "npu", "relu1": "npu"}
    assert result.ops["com.vendor::MyNpuOp"] == 1
    # ONNX cannot infer a vendor op's output: that shape stays unknown, and says so.
    assert [(f.rule, f.node, f.message) for f in result.findings] == [
        ("dynamic-shape", "my_npu_op0", "output shape not static: custom_out unknown")]


def test_external_data_loads_and_outside_location_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    inside = model_zoo.external_data(tmp_path / "in")
    run = run_cli("inspect", inside, "-q")
    assert run.code == 1 and run.err == ""
    outside = model_zoo.external_data_outside(tmp_path / "out")
    run = run_cli("inspect", outside)
    assert run.code == 2
    assert "external data location '../secret.bin' is outside the model's folder" in run.err


def test_dims_declared_as_minus_one_are_dynamic_not_sizes(tmp_path: Path) -> None:
    # Some exporters write dim_value -1 for "unknown"; it must never count as a size.
    model = model_zoo.conv_relu()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_value = -1
    result = inspect(tmp_path, model, {"Conv": {}})
    assert result.inputs[0]["shape"] == [-1, 3, 8, 8]
    assert result.inputs[0]["static"] is False
    assert [(f.rule, f.node, f.message) for f in result.findings if f.rule.startswith("dynamic")] == [
        ("dynamic-input", None, "input x has dynamic shape [-1, 3, 8, 8] in the model"),
        ("dynamic-shape", "conv0", "output shape not static: conv_out [-1, 4, 8, 8]"),
        ("dynamic-shape", "relu0", "output shape not static: y [-1, 4, 8, 8]"),
    ]
    assert result.summary["boundary_bytes"] is None  # conv_out crosses to the CPU Relu, size unknown


def _overridable_initializer(ir_version: int) -> onnx.ModelProto:
    """Graph input x that is also an initializer (zeros), Sin -> Erf."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph(
        [helper.make_node("Sin", ["x"], ["s"], name="sin"), helper.make_node("Erf", ["s"], ["y"], name="erf")],
        "g", [x], [y], initializer=[numpy_helper.from_array(np.zeros((1, 4), np.float32), "x")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ir_version
    return model


def test_an_overridable_initializer_is_an_input_not_a_constant(tmp_path: Path, save_model: SaveModel,
                                                               write_contract: WriteContract, run_cli: RunCli) -> None:
    # IR >= 4: an initializer also listed in graph.input is a default the caller may override
    # (onnxruntime computes with the fed x), so nothing it feeds is folded.
    path = save_model(_overridable_initializer(8))
    run = run_cli("inspect", path, "--profile", "demo")
    assert run.code == 1, run.out
    assert "2 nodes: 0 npu, 2 cpu, 0 folded" in run.out
    assert "unsupported-op [sin]" in run.out and "unsupported-op [erf]" in run.out
    result = inspect(tmp_path, _overridable_initializer(8))
    assert [(i["name"], i["shape"]) for i in result.inputs] == [("x", [1, 4])]
    assert placements(result) == {"sin": "cpu", "erf": "cpu"}
    doc = {"model": {"onnx": path.name}, "target": {"profile": "demo"},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}]}
    write_contract(doc)
    run = run_cli("check-onnx", path)  # the contract beside it names it
    assert run.code == 1 and "0 folded" in run.out, run.out
    run = run_cli("check-onnx", path, "--profile", "demo")
    assert run.code == 1 and "0 folded" in run.out, run.out


def test_before_ir_4_an_initializer_listed_as_input_stays_a_weight(tmp_path: Path) -> None:
    result = inspect(tmp_path, _overridable_initializer(3))
    assert result.inputs == []
    assert placements(result) == {"sin": "folded", "erf": "folded"}
    assert result.verdict == "pass"


def _with_bytes(model: onnx.ModelProto, placeholder: bytes, raw: bytes) -> bytes:
    """The serialised model with a same-length placeholder replaced by raw (invalid UTF-8) bytes."""
    data: bytes = model.SerializeToString()
    assert len(placeholder) == len(raw) and placeholder in data
    return data.replace(placeholder, raw)


def _add_model(name: str = "ZZQ", **attrs: Any) -> onnx.ModelProto:
    x = helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    node = helper.make_node("Add", [name, name], ["y"], name="add", **attrs)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_names_that_are_not_utf8_are_escaped_not_a_crash(tmp_path: Path, run_cli: RunCli) -> None:
    # protobuf hands an invalid UTF-8 string over as bytes: JSON, sorting and reports choked on it
    path = tmp_path / "m.onnx"
    path.write_bytes(_with_bytes(_add_model(), b"ZZQ", b"\xff\xfeQ"))
    out = tmp_path / "r.json"
    run = run_cli("inspect", path, "--json", out)
    assert (run.code, run.err) == (0, ""), run.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    validate_result(doc)
    assert [i["name"] for i in doc["inputs"]] == ["\\xff\\xfeQ"]
    contract = {"model": {"onnx": "m.onnx"}, "target": {"profile": "demo"},
                "inputs": [{"name": "\\xff\\xfeQ", "shape": [1, 4], "dtype": "float32"}]}
    (tmp_path / "npu-gate.json").write_text(json.dumps(contract), encoding="utf-8")
    run = run_cli("check", tmp_path / "npu-gate.json", "--json", out)
    assert (run.code, run.err) == (0, ""), run.err + run.out


def test_an_attribute_name_that_is_not_utf8_is_a_checker_finding(tmp_path: Path, run_cli: RunCli) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(_with_bytes(_add_model(alpha=0.5), b"alpha", b"alph\xff"))
    out = tmp_path / "r.json"
    run = run_cli("inspect", path, "--profile", "demo", "--json", out)
    assert run.code == 1 and "internal error" not in run.err, run.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["nodes"][0]["attributes"] == {"alph\\xff": 0.5}
    assert "Unrecognized attribute: alph\\xff" in run.out


def test_a_nul_in_an_external_data_location_is_a_one_line_error(tmp_path: Path, run_cli: RunCli) -> None:
    from onnx.external_data_helper import set_external_data

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    weight = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g", [x], [y],
                              initializer=[weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    set_external_data(model.graph.initializer[0], "wXX.bin")
    model.graph.initializer[0].ClearField("raw_data")
    (tmp_path / "wXX.bin").write_bytes(np.ones((1, 4), np.float32).tobytes())
    path = tmp_path / "m.onnx"
    path.write_bytes(_with_bytes(model, b"wXX.bin", b"w\0X.bin"))
    run = run_cli("inspect", path)
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {path}: tensor 'w': external data location 'w\\x00X.bin' "
                       "holds a NUL character\n")


def _relu_chain(n: int) -> onnx.ModelProto:
    """x [batch, 4] through n Relus: every node's output has the dynamic batch dim."""
    nodes = [helper.make_node("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}" if i + 1 < n else "y"], name=f"r{i}")
             for i in range(n)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    return model_zoo._model(graph)


def test_dynamic_shape_findings_name_their_root_cause(tmp_path: Path) -> None:
    """Each dynamic-shape finding carries the dynamic input dims it follows from (issue 19); a
    data-dependent shape is its own cause, which the nodes below it inherit."""
    result = inspect(tmp_path, model_zoo.symbolic_dims(), {"Relu": {}})
    assert [(f.node, f.cause) for f in result.findings if f.rule == "dynamic-shape"] == [
        ("relu0", ["x[0]", "x[2]", "x[3]"]), ("flatten0", ["x[0]", "x[2]", "x[3]"])]
    assert all(f.cause is None for f in result.findings if f.rule != "dynamic-shape")
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["nz"], name="nz0"),
         helper.make_node("Relu", ["nz_f"], ["y"], name="relu0"),
         helper.make_node("Cast", ["nz"], ["nz_f"], to=TensorProto.FLOAT, name="cast0")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    result = inspect(tmp_path, model_zoo._model(graph), {"NonZero": {}, "Relu": {}, "Cast": {}})
    assert [(f.node, f.cause) for f in result.findings if f.rule == "dynamic-shape"] == [
        ("nz0", ["nz"]), ("relu0", ["nz"]), ("cast0", ["nz"])]  # model order; relu0 reads cast0
    assert [f["cause"] for f in result.to_dict()["findings"] if f["rule"] == "dynamic-shape"] == [["nz"]] * 3


def test_dynamic_shape_findings_of_one_cause_are_one_row_and_json_keeps_each(tmp_path: Path, run_cli: RunCli) -> None:
    path = tmp_path / "chain.onnx"
    path.write_bytes(_relu_chain(12).SerializeToString())
    profile = write_profile(tmp_path, {"Relu": {}})
    md = tmp_path / "report.md"
    out = tmp_path / "result.json"
    run = run_cli("inspect", path, "--profile", str(profile), "--markdown", md, "--json", out)
    assert run.code == 1
    assert [line for line in run.out.splitlines() if "dynamic" in line] == [
        "  error dynamic-input: input x has dynamic shape [batch, 4] in the model",
        "  error dynamic-shape ×12 [r0, r1, r2 and 9 more]: output shapes not static at 12 nodes, "
        "all following from x[0]",
    ]
    rows = [line for line in md.read_text().splitlines() if line.startswith("| error      | `dynamic-shape`")]
    assert len(rows) == 1
    assert "12 nodes: <code>r0</code>" in rows[0]
    assert "output shapes not static at 12 nodes, all following from x&#91;0&#93;" in rows[0]
    findings = [f for f in json.loads(out.read_text())["findings"] if f["rule"] == "dynamic-shape"]
    assert [(f["node"], f["cause"]) for f in findings] == [(f"r{i}", ["x[0]"]) for i in range(12)]


def _resize_with_overridable_scales(ir_version: int) -> onnx.ModelProto:
    """Resize (linear) whose scales are an initializer [1, 1, 2, 2] also listed as a graph input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    scales = helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode="linear")], "g", [x, scales], [y],
        initializer=[numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ir_version
    return model


def _hardswish_with_overridable_three(ir_version: int) -> onnx.ModelProto:
    """The seed net with its "+ 3" an initializer that is also a graph input."""
    from tests.helpers.gate_models import seed_onnx

    model = seed_onnx()
    nodes = [n for n in model.graph.node if n.name != "three_node"]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.append(numpy_helper.from_array(np.array(3.0, np.float32), "three"))
    model.graph.input.append(helper.make_tensor_value_info("three", TensorProto.FLOAT, []))
    model.ir_version = ir_version
    return model


def test_a_fusion_pattern_does_not_match_an_overridable_initializer(tmp_path: Path) -> None:
    """IR >= 4: the initializer is only the default of an input the caller may feed (issue 17:
    the HardSwish pattern's {"const": 3} matched its default value and fused the nodes)."""
    fed = inspect(tmp_path, _hardswish_with_overridable_three(8), profile="rknn-rk3588-fused")
    assert fed.fusions == []
    weight = inspect(tmp_path, _hardswish_with_overridable_three(3), profile="rknn-rk3588-fused")
    assert weight.fusions is not None
    assert [f["pattern"] for f in weight.fusions] == ["hardswish-add-clip-mul-div"]
