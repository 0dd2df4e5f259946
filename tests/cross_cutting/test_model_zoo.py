"""Sanity tests for the in-code ONNX model zoo used by robustness tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.helpers import model_zoo

# Models that onnx.checker is not expected to accept (unknown domains / broken).
NOT_CHECKER_VALID = {"com_microsoft_op", "custom_domain_op", "shape_mismatch_broken"}
BROKEN = {"shape_mismatch_broken"}


@pytest.mark.parametrize("name", sorted(model_zoo.ALL_SIMPLE))
def test_serializes_and_reparses(name: str) -> None:
    model = model_zoo.ALL_SIMPLE[name]()
    assert isinstance(model, onnx.ModelProto)
    data = model.SerializeToString()
    again = onnx.ModelProto()
    again.ParseFromString(data)
    assert again == model
    assert onnx.load_model_from_string(data).graph.name == model.graph.name


@pytest.mark.parametrize("name", sorted(model_zoo.ALL_SIMPLE))
def test_checker(name: str) -> None:
    model = model_zoo.ALL_SIMPLE[name]()
    assert len(model.graph.node) >= 1
    if name in NOT_CHECKER_VALID:
        pytest.skip("checker not expected to accept this model")
    onnx.checker.check_model(model)


@pytest.mark.parametrize("name", sorted(model_zoo.ALL_SIMPLE))
def test_nonstrict_shape_inference(name: str) -> None:
    if name in BROKEN:
        pytest.skip("intentionally broken model")
    onnx.shape_inference.infer_shapes(model_zoo.ALL_SIMPLE[name]())


def test_shape_mismatch_strict_inference_raises() -> None:
    model = model_zoo.shape_mismatch_broken()
    with pytest.raises(onnx.shape_inference.InferenceError):
        onnx.shape_inference.infer_shapes(model, strict_mode=True)


def _all_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    out: list[onnx.NodeProto] = []
    for node in graph.node:
        out.append(node)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                out.extend(_all_nodes(attr.g))
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    out.extend(_all_nodes(sub))
    return out


@pytest.mark.parametrize("name", sorted(model_zoo.ALL_SIMPLE))
def test_node_names_unique_and_set(name: str) -> None:
    nodes = _all_nodes(model_zoo.ALL_SIMPLE[name]().graph)
    names = [n.name for n in nodes]
    assert all(names)
    assert len(names) == len(set(names))
    # 2-10 nodes, except the single-MatMul ir3 / shape-mismatch models.
    assert 1 <= len(model_zoo.ALL_SIMPLE[name]().graph.node) <= 10


def test_symbolic_dims_shape() -> None:
    dims = model_zoo.symbolic_dims().graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch"
    assert dims[1].dim_value == 3
    assert dims[2].dim_param == "2*floor(h/2)"
    assert not dims[3].HasField("dim_value")
    assert not dims[3].HasField("dim_param")


def test_ir3_initializer_also_input() -> None:
    model = model_zoo.ir3_initializer_as_input()
    assert model.ir_version == 3
    assert model.opset_import[0].version == 8
    assert "w" in {i.name for i in model.graph.input}
    assert "w" in {i.name for i in model.graph.initializer}


def test_external_data(tmp_path: Path) -> None:
    path = model_zoo.external_data(tmp_path)
    assert path == tmp_path / "model.onnx"
    assert (tmp_path / "model.onnx.data").is_file()
    model = onnx.load(str(path))
    w = onnx.numpy_helper.to_array(model.graph.initializer[0])
    assert w.shape == (64, 64)
    onnx.checker.check_model(str(path))


def test_external_data_outside(tmp_path: Path) -> None:
    path = model_zoo.external_data_outside(tmp_path)
    assert path.parent == tmp_path / "model"
    assert (tmp_path / "secret.bin").is_file()
    model = onnx.load(str(path), load_external_data=False)
    tensor = model.graph.initializer[0]
    assert tensor.data_location == onnx.TensorProto.EXTERNAL
    entries = {e.key: e.value for e in tensor.external_data}
    assert entries["location"] == "../secret.bin"


def test_many_nodes() -> None:
    model = model_zoo.many_nodes(1000)
    assert 900 <= len(model.graph.node) <= 1100
    onnx.checker.check_model(model)
    ops = {n.op_type for n in model.graph.node}
    assert {"Conv", "Relu", "Add", "Clip", "Mul"} <= ops
    assert model_zoo.many_nodes(1000) == model  # deterministic


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_ort_conv_relu() -> None:
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (y,) = _session(model_zoo.conv_relu()).run(None, {"x": x})
    assert y.shape == (1, 4, 8, 8)
    assert (y >= 0).all()


def test_ort_diamond() -> None:
    x = np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32)
    (y,) = _session(model_zoo.diamond()).run(None, {"x": x})
    a = np.maximum(x, 0)
    np.testing.assert_allclose(y, np.clip(a, 0, 6) + 1 / (1 + np.exp(-a)), rtol=1e-5)


def test_ort_if_outer_scope() -> None:
    sess = _session(model_zoo.if_outer_scope())
    x = np.array([[-1.0, 0.0, 1.0, 2.0]], dtype=np.float32)
    (y_then,) = sess.run(None, {"x": x, "cond": np.array(True)})
    (y_else,) = sess.run(None, {"x": x, "cond": np.array(False)})
    np.testing.assert_allclose(y_then, np.maximum(x, 0) + 1)
    np.testing.assert_allclose(y_else, np.maximum(x, 0) - 1)


def test_ort_loop_outer_scope() -> None:
    x = np.zeros((1, 4), dtype=np.float32)
    (y,) = _session(model_zoo.loop_outer_scope()).run(None, {"x": x})
    np.testing.assert_allclose(y, np.full((1, 4), 0.75, dtype=np.float32))


def test_ort_int_inputs() -> None:
    ids = np.array([[0, 1, 2, 3, 4, 5, 6, 9]], dtype=np.int64)
    mask = np.array([[1, 1, 1, 1, 0, 0, 1, 0]], dtype=np.int32)
    (y,) = _session(model_zoo.int_inputs()).run(None, {"ids": ids, "mask": mask})
    assert y.shape == (1, 8, 4)
    assert y.dtype == np.float32
    assert np.all(y[0, 4] == 0)
    assert np.any(y[0, 0] != 0)
