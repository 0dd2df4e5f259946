"""Tiny ONNX contracts for action, baseline and merge tests (demo profile, no torch), and the
lesson's net built by hand (``seed_onnx``) for the analysis, gate, report and probe tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_only() -> onnx.ModelProto:
    """Passes the demo profile: one Conv."""
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv0", kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "conv_only",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                              initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def add_contract(root: Path, name: str, model: onnx.ModelProto, shape: list[int]) -> Path:
    folder = root / "models" / name
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    doc = {"name": name, "model": {"onnx": "model.onnx"},
           "inputs": [{"name": "x", "shape": shape, "dtype": "float32"}],
           "target": {"profile": "demo"}}
    path = folder / "npu-gate.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def seed_onnx() -> onnx.ModelProto:
    """The lesson's net by hand: Conv → Add 3 → Clip 0..6 → Mul by conv → Div 6."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "b")

    def const(name: str, value: float) -> onnx.NodeProto:
        return helper.make_node("Constant", [], [name], name=f"{name}_node",
                                value=numpy_helper.from_array(np.array(value, np.float32)))

    nodes = [
        helper.make_node("Conv", ["images", "w", "b"], ["conv"], name="/conv/Conv", pads=[1, 1, 1, 1]),
        const("three", 3.0), helper.make_node("Add", ["conv", "three"], ["add"], name="/Add"),
        const("zero", 0.0), const("six", 6.0),
        helper.make_node("Clip", ["add", "zero", "six"], ["clip"], name="/Clip"),
        helper.make_node("Mul", ["conv", "clip"], ["mul"], name="/Mul"),
        const("six_b", 6.0), helper.make_node("Div", ["mul", "six_b"], ["out"], name="/Div"),
    ]
    graph = helper.make_graph(
        nodes, "seed",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 16, 16])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
