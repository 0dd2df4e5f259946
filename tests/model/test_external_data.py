"""Models with weights in model.onnx.data: loaded without reading weights, kept in their folder."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
from onnx import TensorProto

from npu_gate.graph.model_file import load_onnx
from tests.helpers import model_zoo
from tests.helpers.common import RunCli, WriteContract, validate_result


def test_weights_stay_on_disk_unless_asked(tmp_path: Path) -> None:
    path = model_zoo.external_data(tmp_path)
    lazy, sha = load_onnx(path, weights=False)
    [w] = lazy.graph.initializer
    assert (w.data_location, w.raw_data, list(w.dims)) == (TensorProto.EXTERNAL, b"", [64, 64])
    full, sha_full = load_onnx(path)
    assert len(full.graph.initializer[0].raw_data) == 64 * 64 * 4
    assert sha == sha_full


def test_inspect_external_data_in_folder(run_cli: RunCli, tmp_path: Path) -> None:
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
    run_cli: RunCli, write_contract: WriteContract, tmp_path: Path
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


def test_external_data_outside_folder_is_refused(run_cli: RunCli, write_contract: WriteContract,
                                                 tmp_path: Path) -> None:
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


def test_missing_external_file_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    path = model_zoo.external_data(tmp_path)
    (tmp_path / "model.onnx.data").unlink()
    run = run_cli("inspect", path)
    assert run.code == 2
    assert run.err == (
        f"npu-gate: error: {path}: tensor 'w': external data file 'model.onnx.data' not found\n"
    )


def test_value_tests_read_small_external_tensors_only(run_cli: RunCli, tmp_path: Path) -> None:
    """A value test on an external constant: read when small (like shape inputs), not read when
    large (weights stay on disk), so the test fails with "value not known" although the zeros
    on disk would pass it."""
    import numpy as np
    from onnx import helper, numpy_helper

    def model(n: int) -> onnx.ModelProto:
        graph = helper.make_graph(
            [helper.make_node("Add", ["x", "b"], ["y"], name="add0")], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
            initializer=[numpy_helper.from_array(np.zeros(n, np.float32), "b")])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m

    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"name": "p", "description": "d", "source": "s", "evidence": "illustrative",
                                   "ops": {"Add": {"constraints": [
                                       {"id": "add-b-zero", "input": 1, "value": {"each": True, "max": 0}}]}}}))
    placed = {}
    for n in (64, 65):
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        onnx.save_model(model(n), str(folder / "model.onnx"), save_as_external_data=True,
                        location="model.onnx.data", size_threshold=0)
        out = folder / "r.json"
        run_cli("inspect", folder / "model.onnx", "--profile", profile, "--json", out, "-q")
        doc = json.loads(out.read_text())
        placed[n] = (doc["nodes"][0]["placement"], doc["model"].get("external_weights_unread", 0),
                     [(f["constraint"], f["actual"], f["message"]) for f in doc["findings"] if f.get("constraint")])
    assert placed == {
        64: ("npu", 0, []),
        65: ("cpu", 1, [("add-b-zero", "value not known",
                         "add-b-zero: input 1 value not known (only scalars and 1-D constants of up to 64 "
                         "elements are read)")]),
    }


def test_bundle_minimal_model_carries_its_external_weights(run_cli: RunCli, tmp_path: Path) -> None:
    # The failing MatMul reads a weight left in model.onnx.data: its minimal model, one folder
    # down in the bundle, holds the weight itself (it once pointed at a data file beside it: exit 2).
    path = model_zoo.external_data(tmp_path / "m")
    bundle = tmp_path / "bundle"
    run = run_cli("inspect", path, "--out", bundle, "-q")
    assert (run.code, run.err) == (1, "")
    doc = json.loads((bundle / "result.json").read_text())
    [entry] = doc["minimal"]["models"]
    assert (entry["path"], entry["verified"]) == ("minimal/01-unsupported-op-MatMul.onnx", True)
    minimal = onnx.load_model(str(bundle / entry["path"]), load_external_data=False)
    [w] = minimal.graph.initializer
    assert (w.name, w.data_location, len(w.raw_data)) == ("w", TensorProto.DEFAULT, 64 * 64 * 4)
    assert sorted(p.name for p in (bundle / "minimal").iterdir()) == ["01-unsupported-op-MatMul.onnx"]
