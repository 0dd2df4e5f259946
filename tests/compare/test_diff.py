"""`npu-gate diff A B` on models, contracts and result JSONs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
from onnx import helper

from npu_gate.render import diff_md
from tests.helpers import model_zoo
from tests.helpers.common import RunCli, WriteContract, validate_diff


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def test_identical_models(run_cli: RunCli, tmp_path: Path) -> None:
    a = _save(model_zoo.conv_relu(), tmp_path / "a.onnx")
    b = _save(model_zoo.conv_relu(), tmp_path / "b.onnx")
    out = tmp_path / "d.json"
    run = run_cli("diff", a, b, "--json", out)
    assert run.code == 0
    assert run.out == f"npu-gate diff: {a} -> {b}: no differences\n"
    doc = json.loads(out.read_text())
    validate_diff(doc)
    assert doc["identical"] is True
    assert (doc["ops"], doc["nodes_added"], doc["nodes_changed"]) == ({}, [], [])


def test_attribute_and_shape_change(run_cli: RunCli, tmp_path: Path) -> None:
    a = _save(model_zoo.conv_relu(), tmp_path / "a.onnx")
    model = model_zoo.conv_relu()
    conv = model.graph.node[0]
    del conv.attribute[:]
    conv.attribute.extend(
        [helper.make_attribute("kernel_shape", [3, 3]), helper.make_attribute("pads", [0, 0, 0, 0])]
    )
    model.graph.output[0].type.tensor_type.shape.dim[2].dim_value = 6
    model.graph.output[0].type.tensor_type.shape.dim[3].dim_value = 6
    b = _save(model, tmp_path / "b.onnx")
    out = tmp_path / "d.json"
    assert run_cli("diff", a, b, "--json", out, "-q").code == 1
    doc = json.loads(out.read_text())
    validate_diff(doc)
    [conv_change, relu_change] = doc["nodes_changed"]
    assert conv_change["name"] == "conv0"
    assert conv_change["attributes"] == {"pads": {"a": [1, 1, 1, 1], "b": [0, 0, 0, 0]}}
    assert conv_change["tensors"] == [
        {
            "io": "output",
            "index": 0,
            "a": {"name": "conv_out", "shape": [1, 4, 8, 8], "dtype": "float32"},
            "b": {"name": "conv_out", "shape": [1, 4, 6, 6], "dtype": "float32"},
        }
    ]
    assert relu_change["name"] == "relu0"
    assert [t["io"] for t in relu_change["tensors"]] == ["input", "output"]
    assert doc["ops"] == {}
    bytes_metric = next(m for m in doc["metrics"] if m["metric"] == "boundary_bytes")
    assert bytes_metric == {"metric": "boundary_bytes", "a": 1024, "b": 576, "delta": -448}
    markdown = diff_md.render(doc)
    assert "| boundary_bytes        | 1,024 (1 KiB)   | 576             | -448    |" in markdown
    # the static memory estimate follows the smaller conv output
    assert "| peak_activation_bytes | 1,792 (1.8 KiB) | 1,344 (1.3 KiB) | -448    |" in markdown
    assert "  boundary_bytes: 1,024 (1 KiB) -> 576\n" in diff_md.render_text(doc)


def test_sides_show_the_profile_evidence(run_cli: RunCli, tmp_path: Path) -> None:
    """Placements are predictions resting on the profile's evidence: the diff shows it, as every
    report that uses a profile does (JSON `a.evidence`, Markdown `demo (illustrative)`)."""
    a = _save(model_zoo.conv_relu(), tmp_path / "a.onnx")
    b = _save(model_zoo.conv_relu(), tmp_path / "b.onnx")
    out, md_out = tmp_path / "d.json", tmp_path / "d.md"
    assert run_cli("diff", a, b, "--profile", "ort-nnapi", "--json", out, "-q").code == 0
    doc = json.loads(out.read_text())
    validate_diff(doc)
    assert (doc["a"]["profile"], doc["a"]["evidence"]) == ("ort-nnapi", "vendor-documentation")
    result = tmp_path / "b.json"  # B: a result JSON under ort-nnapi, A: the model under demo
    run_cli("inspect", b, "--profile", "ort-nnapi", "--json", result, "-q")
    assert run_cli("diff", a, result, "--markdown", md_out, "-q").code == 1
    assert "| profile | demo (illustrative) | ort-nnapi (vendor-documentation) |" in md_out.read_text()


def test_model_against_contract_shows_folding(run_cli: RunCli, write_contract: WriteContract, tmp_path: Path) -> None:
    model = _save(model_zoo.dynamic_reshape_chain(), tmp_path / "model.onnx")
    contract = write_contract(
        {
            "model": {"onnx": "model.onnx"},
            "inputs": [{"name": "x", "shape": [2, 4, 2, 2], "dtype": "float32"}],
            "target": {"profile": "demo"},
        }
    )
    result = tmp_path / "inspect.json"
    assert run_cli("inspect", model, "--json", result, "-q").code == 1
    out = tmp_path / "d.json"
    md = tmp_path / "d.md"
    assert run_cli("diff", result, contract, "--json", out, "--markdown", md, "-q").code == 1
    doc = json.loads(out.read_text())
    validate_diff(doc)
    assert (doc["ops"], doc["nodes_added"], doc["nodes_removed"]) == ({}, [], [])
    assert [(p["name"], p["a"], p["b"]) for p in doc["placement_changes"]] == [
        ("shape0", "cpu", "folded"),
        ("gather0", "cpu", "folded"),
        ("unsqueeze0", "cpu", "folded"),
        ("concat0", "cpu", "folded"),
    ]
    assert doc["shape_chains"]["changed"] == [
        {
            "key": "reshape0",
            "a": "stays",
            "b": "folds",
            "nodes_a": ["shape0", "const_idx", "gather0", "unsqueeze0", "concat0"],
            "nodes_b": ["shape0", "const_idx", "gather0", "unsqueeze0", "concat0"],
        }
    ]
    [reshape] = [c for c in doc["nodes_changed"] if c["name"] == "reshape0"]
    assert reshape["tensors"][-1]["a"]["shape"] == ["N", 16]
    assert reshape["tensors"][-1]["b"]["shape"] == [2, 16]
    after = next(m for m in doc["metrics"] if m["metric"] == "nodes_after_folding")
    assert (after["a"], after["b"], after["delta"]) == (5, 1, -4)
    text = md.read_text()
    assert "| <code>shape0</code> | Shape | cpu | folded |" in " ".join(text.split()).replace(
        "| ", "| "
    )


def test_unusable_side_exits_2(run_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    a = _save(model_zoo.conv_relu(), tmp_path / "a.onnx")
    run = run_cli("diff", a, bad)
    assert run.code == 2
    assert run.err == (
        f"npu-gate: error: {bad}: expected an .onnx model, a contract (file or "
        "folder) or a result .json\n"
    )
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert "neither a result JSON" in run_cli("diff", a, other).err


def test_compare_exporters_contract_key(run_cli: RunCli, write_contract: WriteContract, tmp_path: Path) -> None:
    from npu_gate.contract.spec import load_contract

    doc: dict[str, Any] = {
        "model": {"torch": {"factory": "net:build", "compare_exporters": True}},
        "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
        "target": {"profile": "demo"},
    }
    (tmp_path / "net.py").write_text("def build():\n    raise AssertionError('never built here')\n")
    contract = load_contract(write_contract(doc))
    assert contract.torch is not None
    assert (contract.torch.exporter, contract.torch.compare_exporters) == ("dynamo", True)
    doc["model"]["torch"]["compare_exporters"] = "yes"
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert "model.torch.compare_exporters" in run.err
