"""QDQ node units: each op with its DequantizeLinear inputs and QuantizeLinear outputs."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npu_gate.graph import facts as graph_facts
from npu_gate.graph.facts import GraphFacts
from npu_gate.placement.qdq import node_units
from npu_gate.result.types import GateResult


def _facts(nodes: list[onnx.NodeProto], outputs: list[str]) -> GraphFacts:
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z"),
             numpy_helper.from_array(np.ones((4, 4), np.int8), "wq")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 4]) for o in outputs],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    inferred, _, error = graph_facts.infer_shapes(model)
    assert error is None
    return graph_facts.collect(inferred, [], None, frozenset())


def test_units_adapters_and_a_shared_dq() -> None:
    """x → q_in (input adapter) → dq_x, read by both mm and add (in both units, placed with mm);
    weights dq_w → mm; mm → q_mm → dq_mm → add; add → q_add → dq_out (output adapter)."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_x"),
             helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"], name="dq_w"),
             helper.make_node("MatMul", ["xd", "w"], ["mm"], name="mm"),
             helper.make_node("QuantizeLinear", ["mm", "s", "z"], ["mmq"], name="q_mm"),
             helper.make_node("DequantizeLinear", ["mmq", "s", "z"], ["mmd"], name="dq_mm"),
             helper.make_node("Add", ["mmd", "xd"], ["y"], name="add"),
             helper.make_node("QuantizeLinear", ["y", "s", "z"], ["yq"], name="q_add"),
             helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["out"], name="dq_out")]
    facts = _facts(nodes, ["out"])
    units = node_units(facts)
    assert units is not None
    names = [n.name for n in facts.nodes]
    assert {names[k]: names[v] for k, v in units.member_of.items()} == {
        "dq_x": "mm", "dq_w": "mm", "q_mm": "mm", "dq_mm": "add", "q_add": "add"}
    assert {names[k]: v for k, v in units.adapters.items()} == {"q_in": "input", "dq_out": "output"}
    assert {names[k]: v for k, v in units.dtypes.items()} == {
        "mm": {"xd": "int8", "w": "int8", "mm": "int8"}, "add": {"mmd": "int8", "xd": "int8", "y": "int8"}}
    qdq = ("QuantizeLinear", "DequantizeLinear")
    assert units.absorbed() == {i for i, n in enumerate(facts.nodes) if n.op_type in qdq}


def test_a_float_graph_has_no_units() -> None:
    facts = _facts([helper.make_node("Relu", ["x"], ["y"], name="relu")], ["y"])
    assert node_units(facts) is None


def test_onnxruntimes_contrib_domain_16_bit_qdq_units_read_the_zero_points_dtype() -> None:
    """QNN's int16 config writes com.microsoft Q/DQ (uint16 before opset 21); ONNX shape inference
    does not type their outputs, so the unit's dtype is the zero point's."""
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint16), "z")]
    ms = "com.microsoft"
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in", domain=ms),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_x", domain=ms),
             helper.make_node("Sigmoid", ["xd"], ["y"], name="sig"),
             helper.make_node("QuantizeLinear", ["y", "s", "z"], ["yq"], name="q_y", domain=ms),
             helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["out"], name="dq_out", domain=ms)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 4])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)],
                              ir_version=8)
    inferred, _, _ = graph_facts.infer_shapes(model)
    facts = graph_facts.collect(inferred, [], None, frozenset())
    units = node_units(facts)
    assert units is not None
    names = [n.name for n in facts.nodes]
    assert {names[k]: names[v] for k, v in units.member_of.items()} == {"dq_x": "sig", "q_y": "sig"}
    assert {names[k]: v for k, v in units.adapters.items()} == {"q_in": "input", "dq_out": "output"}
    assert {names[k]: v for k, v in units.dtypes.items()} == {"sig": {"xd": "uint16", "y": "uint16"}}


# onnxruntime forms no unit around a Conv whose bias DQ is not int32 (qnn_models.shared_bias)

def _shared_bias_result(fixture: str, profile: str) -> GateResult:
    from npu_gate.pipeline import inspect_model
    from npu_gate.profile.spec import load_profile
    from tests.helpers.common import REPO

    folder = REPO / "tests" / "fixtures" / "qnn" / fixture
    model = folder / "work" / "qnn-qdq.onnx" if (folder / "work" / "qnn-qdq.onnx").is_file() else folder / "model.onnx"
    return inspect_model(model, load_profile(profile))


PER_CHANNEL_REASON = ("no QDQ unit: the bias of {} (Conv) is uint8, not int32: "
                      "QNN EP does not support a standalone DQ op with per-channel quantization")


def test_a_conv_with_a_uint8_bias_has_no_unit_and_its_dqs_are_nodes_of_their_own() -> None:
    """qdq_shared_bias: onnxruntime's quantizer made the shared bias uint8 (an activation's Q/DQ after
    the Identity), so conv1 and conv2 form no unit: their Q/DQ are standalone, conv3's unit is whole."""
    from tests.helpers.common import REPO

    model = onnx.load(str(REPO / "tests" / "fixtures" / "qnn" / "qdq_shared_bias" / "model.onnx"))
    inferred, _, error = graph_facts.infer_shapes(model)
    assert error is None
    facts = graph_facts.collect(inferred, [], None, frozenset())
    units = node_units(facts)
    assert units is not None
    names = [n.name for n in facts.nodes]
    alone = {names[k]: (names[v.op], v.why, v.per_channel) for k, v in units.standalone.items()}
    uint8 = "the bias of {} (Conv) is uint8, not int32"
    assert alone == {
        "conv1.w_DequantizeLinear": ("conv1", uint8.format("conv1"), True),
        "conv2.w_DequantizeLinear": ("conv2", uint8.format("conv2"), True),
        "shared.b_DequantizeLinear": ("conv1", uint8.format("conv1"), False),
        "x_DequantizeLinear": ("conv1", uint8.format("conv1"), False),
        "r_QuantizeLinear": ("conv1", uint8.format("conv1"), False),
        "r_DequantizeLinear": ("conv2", uint8.format("conv2"), False),
        "conv2.b_DequantizeLinear": ("conv2", uint8.format("conv2"), False),
        "c_QuantizeLinear": ("conv2", uint8.format("conv2"), False)}
    assert {names[k]: names[v] for k, v in units.member_of.items()} == {
        "c_DequantizeLinear": "conv3", "conv3.w_DequantizeLinear": "conv3", "conv3.b_DequantizeLinear": "conv3",
        "y_QuantizeLinear": "conv3", "conv2.b_QuantizeLinear": "bias_identity"}
    assert sorted(names[i] for i in units.dtypes) == ["bias_identity", "conv3"]  # conv1, conv2: float


def test_standalone_per_channel_dqs_go_to_cpu_where_the_profile_says_so() -> None:
    """The prediction agrees with the EP (tests/fixtures/qnn/qdq_shared_bias): the per-channel weight
    DQs of conv1 and conv2 on CPU with the EP's reason, the per-tensor bias DQs on the HTP, each a
    standalone-qdq finding for the two CPU ones only."""
    result = _shared_bias_result("qdq_shared_bias", "qnn-htp-qdq")
    placed = {n.name: n.placement for n in result.nodes}
    assert placed == {
        "conv1.w_DequantizeLinear": "cpu", "conv2.w_DequantizeLinear": "cpu",
        "conv3.b_DequantizeLinear": "folded", "conv3.w_DequantizeLinear": "folded",
        "shared.b_DequantizeLinear": "npu", "x_QuantizeLinear": "npu", "bias_identity": "folded",
        "x_DequantizeLinear": "npu", "conv2.b_QuantizeLinear": "folded", "conv1": "npu",
        "conv2.b_DequantizeLinear": "npu", "r_QuantizeLinear": "npu", "r_DequantizeLinear": "npu", "conv2": "npu",
        "c_QuantizeLinear": "npu", "c_DequantizeLinear": "npu", "conv3": "npu", "y_QuantizeLinear": "npu",
        "y_DequantizeLinear": "npu"}
    reasons = {n.name: n.reasons for n in result.nodes if n.placement == "cpu"}
    assert reasons == {f"conv{i}.w_DequantizeLinear": [PER_CHANNEL_REASON.format(f"conv{i}")] for i in (1, 2)}
    found = [(f.rule, f.severity, f.node, f.constraint) for f in result.findings if f.rule == "standalone-qdq"]
    assert found == [("standalone-qdq", "error", f"conv{i}.w_DequantizeLinear", "standalone-per-channel-dq")
                     for i in (1, 2)]
    # the CPU DQs run first, as sources: they do not cut the NPU work reading them (the EP's one subgraph)
    assert [(p["device"], p["nodes"][0]) for p in result.to_dict()["partitions"]] == [
        ("cpu", "conv1.w_DequantizeLinear"), ("cpu", "conv2.w_DequantizeLinear"), ("npu", "shared.b_DequantizeLinear")]
    evidence = {f.evidence for f in result.findings if f.rule == "standalone-qdq"}
    [text] = evidence
    assert text is not None and text.startswith("measured: onnxruntime-qnn 2.7.0 (QNN 2.51) htp")


def test_a_profile_without_standalone_qdq_folds_the_weight_dqs_as_before() -> None:
    """demo states nothing about standalone Q/DQ: the weight DQs fold, no standalone-qdq finding."""
    result = _shared_bias_result("qdq_shared_bias", "demo")
    placed = {n.name: n.placement for n in result.nodes}
    assert placed["conv1.w_DequantizeLinear"] == placed["conv2.w_DequantizeLinear"] == "folded"
    assert placed["conv2.b_DequantizeLinear"] == "folded"
    assert not [f for f in result.findings if f.rule == "standalone-qdq"]


def test_npu_gates_qnn_preparation_gives_every_conv_its_unit() -> None:
    """int8_shared_bias: the QDQ model npu-gate's --quantize int8 made (Identity folded first): every
    Conv has an int32 bias and its unit; nothing is standalone, nothing on CPU."""
    result = _shared_bias_result("int8_shared_bias", "qnn-htp-qdq")
    assert not [n.name for n in result.nodes if n.placement == "cpu"]
    assert [n.name for n in result.nodes if n.op_type == "Identity"] == []
    assert sorted(n.name for n in result.nodes if n.placement == "npu" and n.op_type == "Conv") == \
        ["conv1", "conv2", "conv3"]
    assert not [f for f in result.findings if f.rule == "standalone-qdq"]
