"""QDQ node units: each op with its DequantizeLinear inputs and QuantizeLinear outputs."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from npu_gate.graph import facts as graphlib
from npu_gate.placement.qdq import node_units


def _facts(nodes, outputs):
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z"),
             numpy_helper.from_array(np.ones((4, 4), np.int8), "wq")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 4]) for o in outputs],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    inferred, _, error = graphlib.infer_shapes(model)
    assert error is None
    return graphlib.collect(inferred, [], None, frozenset())


def test_units_adapters_and_a_shared_dq():
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


def test_a_float_graph_has_no_units():
    facts = _facts([helper.make_node("Relu", ["x"], ["y"], name="relu")], ["y"])
    assert node_units(facts) is None


def test_onnxruntimes_contrib_domain_16_bit_qdq_units_read_the_zero_points_dtype():
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
    inferred, _, _ = graphlib.infer_shapes(model)
    facts = graphlib.collect(inferred, [], None, frozenset())
    units = node_units(facts)
    assert units is not None
    names = [n.name for n in facts.nodes]
    assert {names[k]: names[v] for k, v in units.member_of.items()} == {"dq_x": "sig", "q_y": "sig"}
    assert {names[k]: v for k, v in units.adapters.items()} == {"q_in": "input", "dq_out": "output"}
    assert {names[k]: v for k, v in units.dtypes.items()} == {"sig": {"xd": "uint16", "y": "uint16"}}
