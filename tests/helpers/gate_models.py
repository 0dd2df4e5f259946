"""Tiny ONNX contracts for action, baseline and merge tests (demo profile, no torch)."""

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
