"""Tiny ONNX models and contracts for the cache and pre-commit hook tests.

Under the built-in ``demo`` profile (Conv, Add, Mul, Constant, Div) ``tiny_model()``
places every node on the NPU; ``tiny_model(cpu_op="Relu")`` adds a node that falls back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tiny_model(cpu_op: str | None = None, scale: float = 2.0) -> onnx.ModelProto:
    """x -> Mul(scale) -> Add(x) [-> cpu_op] -> y, all [1, 4]."""
    nodes = [
        helper.make_node("Mul", ["x", "s"], ["m"], name="mul0"),
        helper.make_node("Add", ["m", "x"], ["a" if cpu_op else "y"], name="add0"),
    ]
    if cpu_op:
        nodes.append(helper.make_node(cpu_op, ["a"], ["y"], name="cpu0"))
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        initializer=[numpy_helper.from_array(np.array(scale, dtype=np.float32), name="s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def contract_doc(onnx_ref: str = "model.onnx", profile: str = "demo",
                 **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "model": {"onnx": onnx_ref},
        "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
        "target": {"profile": profile},
        "gates": {"max_cpu_nodes": 0},
    }
    doc.update(extra)
    return doc


def write_onnx_contract(folder: Path, model: onnx.ModelProto | None = None,
                        name: str = "npu-gate.json", **extra: Any) -> Path:
    """``folder/model.onnx`` plus a contract naming it; returns the contract path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes((model or tiny_model()).SerializeToString())
    path = folder / name
    path.write_text(json.dumps(contract_doc(**extra), indent=2), encoding="utf-8")
    return path
