"""A QNN probe whose QDQ preparation fails on the user's model: a ``quantization-failed`` result
(status failed, exit 1, in a contract an error finding that fails the gate), never exit 2.

The compiler never runs on this path, so no onnxruntime-qnn is needed: a stand-in venv (a Python
and the package's dist-info folder, which is all the probe reads before the compiler would run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_gate.resources import load_schema
from tests.helpers.common import RunCli, SaveModel, WriteContract, schema_errors
from tests.helpers.probe_venvs import setup_like_venv

ERROR = "QNN QDQ preparation (int8) failed: AssertionError: scale issue"
MESSAGE = (f"sqrt_negative.onnx: {ERROR}; the onnxruntime-qnn build was not run, so the int8 model's placement "
           "is not checked")


def sqrt_negative() -> onnx.ModelProto:
    """y = sqrt(x - 2): NaN for every input in [0, 1], so onnxruntime's calibrator finds no range
    and its quantizer asserts ("scale issue")."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    graph = helper.make_graph(
        [helper.make_node("Sub", ["x", "two"], ["d"], name="sub"), helper.make_node("Sqrt", ["d"], ["y"], name="sqrt")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [two])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """What the probe reads of a QNN venv before it runs the compiler: its Python and the version."""
    return setup_like_venv(tmp_path / "venv-qnn", "qnn", "2.7.0")


def _validate(doc: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator(load_schema("probe")).iter_errors(doc))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_probe_quantize_int8_that_the_quantizer_refuses_is_a_failed_probe(run_cli: RunCli, save_model: SaveModel,
                                                                          tmp_path: Path,
                                                                          venv: Path) -> None:
    model = save_model(sqrt_negative(), "sqrt_negative.onnx")
    out, page = tmp_path / "probe.json", tmp_path / "probe.md"
    run = run_cli("probe", model, "--compiler", "qnn", "--target", "htp", "--venv", venv, "--quantize", "int8",
                  "--json", out, "--markdown", page)
    assert run.code == 1, run.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    _validate(doc)
    assert (doc["schema_version"], doc["status"], doc["verdict"], doc["error"]) == ("probe-1.6", "failed", "fail",
                                                                                    ERROR)
    assert doc["findings"] == [{"rule": "quantization-failed", "severity": "error", "message": MESSAGE}]
    assert doc["compiler"] == {"name": "onnxruntime-qnn", "version": "2.7.0", "target": "htp", "plugin": "qnn"}
    assert doc["preparation"] == {"method": "qnn-qdq", "mode": "int8", "activations": "uint8", "weights": "int8",
                                  "per_channel": True, "calibration_method": "minmax",
                                  "error": "AssertionError: scale issue",
                                  "calibration": {"samples": 32, "synthetic": True}}
    assert (doc["attempts"], doc["summary"], doc["segments"]) == ([], {}, [])  # the compiler never ran
    assert [(n["name"], n["predicted"], n["actual"]) for n in doc["nodes"]] == [("sub", "cpu", None),
                                                                              ("sqrt", "cpu", None)]
    assert doc["quantization"] == {"mode": "int8", "calibration": {"samples": 32, "synthetic": True},
                                   "holdout": {"samples": 8, "synthetic": True}, "accuracy": None}
    assert run.out.splitlines()[:3] == [
        "npu-gate probe: sqrt_negative.onnx: onnxruntime-qnn 2.7.0 htp: FAILED",
        f"  error quantization-failed: {ERROR}",
        "  prepared: qnn-qdq int8: failed: AssertionError: scale issue"]
    assert "**error `quantization-failed`**: sqrt&#95;negative.onnx: QNN QDQ preparation &#40;int8&#41; failed: " \
           "AssertionError: scale issue" in page.read_text(encoding="utf-8")


def test_the_quantizers_error_is_escaped_in_the_reports(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                        venv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The error line is the quantizer's text (untrusted): escaped in the Markdown and the terminal."""
    from npu_gate.quantize import qnn
    from npu_gate.quantize.run import QuantizationFailed

    def refuse(*args: object, **kwargs: object) -> None:
        raise QuantizationFailed("ValueError: <img src=x> | \x1b[31mred")

    monkeypatch.setattr(qnn, "prepare", refuse)
    model = save_model(sqrt_negative(), "sqrt_negative.onnx")
    page = tmp_path / "probe.md"
    run = run_cli("probe", model, "--compiler", "qnn", "--target", "htp", "--venv", venv, "--quantize", "int8",
                  "--markdown", page)
    assert run.code == 1
    text = page.read_text(encoding="utf-8")
    assert "<img" not in text and "&#60;img src=x&#62; &#124;" in text
    assert "\x1b" not in run.out and "\x1b" not in text


def test_a_missing_venv_is_still_exit_2(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    model = save_model(sqrt_negative(), "sqrt_negative.onnx")
    run = run_cli("probe", model, "--compiler", "qnn", "--target", "htp", "--venv", tmp_path / "none",
                  "--quantize", "int8")
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {tmp_path / 'none' / 'bin' / 'python'}: no onnxruntime-qnn environment "
                       "there; create one with `npu-gate probe setup qnn VENV` and pass --venv VENV\n")


def test_a_contracts_probe_reports_the_failed_quantization_and_the_gate_fails(run_cli: RunCli, save_model: SaveModel,
                                                                              write_contract: WriteContract,
                                                                               tmp_path: Path, venv: Path) -> None:
    save_model(sqrt_negative())
    doc = {"model": {"onnx": "model.onnx"},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32", "range": [0, 1]}],
           "quantization": {"mode": "int8", "calibration": {"count": 4}, "holdout": {"count": 2}},
           "target": {"profile": "qnn-htp", "probe": {"compiler": "qnn", "target": "htp",
                                                      "venv": str(venv.resolve())}}}
    run = run_cli("check", write_contract(doc), "--json", tmp_path / "result.json")
    assert run.code == 1, run.out + run.err
    result = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    assert schema_errors(result, "result") == []  # the quantization stage's NaN outputs too (1.10: "nan")
    assert result["verdict"] == "fail"
    probe = result["stages"]["probe"]
    assert (probe["status"], probe["probe_status"], probe["reason"]) == (
        "failed", "failed", ERROR)
    assert probe["preparation"]["error"] == "AssertionError: scale issue"
    assert probe["preparation"]["calibration"] == {"samples": 4, "synthetic": True}
    found = [(f["rule"], f["severity"], f["message"]) for f in result["findings"] if f["rule"] == "quantization-failed"]
    # the probe's: the contract's own quantization stage (onnxruntime's quantize_static, not QNN's config) runs
    assert found == [("quantization-failed", "error", MESSAGE.replace("sqrt_negative.onnx", "model.onnx"))]
