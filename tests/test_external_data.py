"""Models with weights in model.onnx.data: loaded without reading weights, kept in their folder."""

from __future__ import annotations

import json
from pathlib import Path

import model_zoo
import onnx
from conftest import validate_result
from onnx import TensorProto

from npu_gate.model_file import load_onnx


def test_weights_stay_on_disk_unless_asked(tmp_path: Path) -> None:
    path = model_zoo.external_data(tmp_path)
    lazy, sha = load_onnx(path, weights=False)
    [w] = lazy.graph.initializer
    assert (w.data_location, w.raw_data, list(w.dims)) == (TensorProto.EXTERNAL, b"", [64, 64])
    full, sha_full = load_onnx(path)
    assert len(full.graph.initializer[0].raw_data) == 64 * 64 * 4
    assert sha == sha_full


def test_inspect_external_data_in_folder(run_cli, tmp_path: Path) -> None:
    path = model_zoo.external_data(tmp_path / "m")
    out = tmp_path / "r.json"
    run = run_cli("inspect", path, "--json", out, "-q")
    assert (run.code, run.err) == (1, "")  # MatMul is not in the demo profile
    doc = json.loads(out.read_text())
    validate_result(doc)
    assert doc["model"]["external_weights_unread"] == 1
    assert [(f["rule"], f.get("node")) for f in doc["findings"]] == [("unsupported-op", "matmul0")]
    assert doc["nodes"][0]["inputs"][1] == {"name": "w", "shape": [64, 64], "dtype": "float32"}


def test_small_external_tensors_are_read_for_shape_inference(
    run_cli, write_contract, tmp_path
) -> None:
    # Every initializer external, including Reshape's shape inputs (size_threshold=0).
    onnx.save_model(
        model_zoo.dynamic_reshape_chain(),
        str(tmp_path / "model.onnx"),
        save_as_external_data=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    contract = write_contract(
        {
            "model": {"onnx": "model.onnx"},
            "inputs": [{"name": "x", "shape": [2, 4, 2, 2], "dtype": "float32"}],
            "target": {"profile": "demo"},
        }
    )
    out = tmp_path / "r.json"
    assert run_cli("check", contract, "--json", out, "-q").code == 1
    doc = json.loads(out.read_text())
    assert "external_weights_unread" not in doc["model"]  # both tensors are small: read
    reshape = next(n for n in doc["nodes"] if n["name"] == "reshape0")
    assert reshape["outputs"][0]["shape"] == [2, 16]
    assert doc["shape_chains"][0]["status"] == "folds"


def test_external_data_outside_folder_is_refused(run_cli, write_contract, tmp_path) -> None:
    path = model_zoo.external_data_outside(tmp_path)
    run = run_cli("inspect", path)
    assert run.code == 2
    assert run.err == (
        f"npu-gate: error: {path}: tensor 'w': external data location "
        "'../secret.bin' is outside the model's folder\n"
    )
    contract = write_contract(
        {
            "model": {"onnx": "model/model.onnx"},
            "inputs": [{"name": "x", "shape": [1, 64], "dtype": "float32"}],
            "target": {"profile": "demo"},
        }
    )
    run = run_cli("check", contract)
    assert run.code == 2
    assert "external data location '../secret.bin' is outside the model's folder" in run.err
    assert run.out == ""


def test_missing_external_file_is_refused(run_cli, tmp_path) -> None:
    path = model_zoo.external_data(tmp_path)
    (tmp_path / "model.onnx.data").unlink()
    run = run_cli("inspect", path)
    assert run.code == 2
    assert run.err == (
        f"npu-gate: error: {path}: tensor 'w': external data file 'model.onnx.data' not found\n"
    )
