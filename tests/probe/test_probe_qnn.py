"""The real onnxruntime-qnn HTP EP in the loop. Run with `pytest -m qnn` (.ci/run does, after setup).

Needs the compiler's venv: `npu-gate probe setup qnn .venv-qnn` (or NPU_GATE_QNN_VENV). The QNN
libraries are Qualcomm's (AI Stack License): the user installs them from PyPI; nothing here ships
them. Without the venv every test here SKIPS with the reason; none passes without the EP.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import qnn_models
from tests.helpers.common import REPO, RunCli, SaveModel, WriteContract, probe_venv

pytestmark = pytest.mark.qnn

# absolute: a contract resolves a relative venv from its own folder
VENV = Path(os.environ.get("NPU_GATE_QNN_VENV", REPO / ".venv-qnn")).absolute()
EVIDENCE = "measured: onnxruntime-qnn 2.7.0 (QNN 2.51) htp"


@pytest.fixture(scope="module")
def venv() -> Path:
    return probe_venv(VENV, "qnn", "onnxruntime-qnn")


def _probe(run_cli: RunCli, save_model: SaveModel, tmp_path: Path, venv: Path, name: str,
           *extra: str) -> tuple[int, dict[str, Any]]:
    model = save_model(qnn_models.MODELS[name](), f"{name}.onnx")
    out = tmp_path / f"{name}.json"
    run = run_cli("probe", model, "--compiler", "qnn", "--target", "htp", "--venv", venv, "--json", out,
                  "--keep-work", tmp_path / "work", *extra)
    assert run.code in (0, 1), run.err
    return run.code, json.loads(out.read_text(encoding="utf-8"))


def test_erf_between_two_htp_segments(run_cli: RunCli, save_model: SaveModel, tmp_path: Path, venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "erf_between")
    assert code == 0 and doc["status"] == "ok" and doc["evidence"] == EVIDENCE
    assert [(s["device"], s["nodes"]) for s in doc["segments"]] == [
        ("npu", ["conv1"]), ("cpu", ["erf"]), ("npu", ["conv2"])]
    erf = next(n for n in doc["nodes"] if n["name"] == "erf")
    assert erf["reason"] == "Operators of type `Erf` are not supported by QNN EP."
    # the HTP prepare ran in fp16 for the float model, for the default SoC
    response = json.loads((tmp_path / "work" / "attempt-1" / "response.json").read_text(encoding="utf-8"))
    assert (response["precision"], response["soc_model"]) == ("fp16", 57)


def test_einsum_equation_the_htp_refuses(run_cli: RunCli, save_model: SaveModel, tmp_path: Path, venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "einsum_unsupported", "--soc-model", "69")
    assert code == 0
    einsum = next(n for n in doc["nodes"] if n["name"] == "einsum")
    assert (einsum["actual"], einsum["reason"]) == ("cpu", "Einsum unsupported equation: bchw,bcHw->bhH")
    response = json.loads((tmp_path / "work" / "attempt-1" / "response.json").read_text(encoding="utf-8"))
    assert response["soc_model"] == 69


def test_qdq_model_is_used_as_is_with_its_input_quantize_an_io_adapter(run_cli: RunCli, save_model: SaveModel,
                                                                       tmp_path: Path, venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "qdq_erf_between")
    assert code == 0
    q = next(n for n in doc["nodes"] if n["name"] == "x_QuantizeLinear")
    assert (q["actual"], q["adapter"], q["agrees"]) == ("cpu", True, None)
    # the graph-output DQ the layout pass re-creates after its Transpose stays on CPU: the output's adapter
    assert [a["tensor"] for a in doc["summary"]["adapters"]["actual"]] == ["x", "y"]
    assert doc["preparation"]["method"] == "as-is"
    response = json.loads((tmp_path / "work" / "attempt-1" / "response.json").read_text(encoding="utf-8"))
    assert response["precision"] == "qdq"


def test_unknown_target_is_a_configuration_error(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                 venv: Path) -> None:
    model = save_model(qnn_models.det(), "det.onnx")
    run = run_cli("probe", model, "--compiler", "qnn", "--target", "gpu", "--venv", venv)
    assert run.code == 2
    assert run.err == ("npu-gate: error: --target gpu: onnxruntime-qnn refused the configuration: config: unknown "
                       "target 'gpu' (onnxruntime-qnn offline: htp)\n")


def test_contract_decides_on_the_measured_placement(run_cli: RunCli, save_model: SaveModel,
                                                    write_contract: WriteContract, tmp_path: Path, venv: Path) -> None:
    """demo sends the Clip of the lesson's HardSwish to CPU; the HTP takes it: measured, it passes."""
    save_model(qnn_models.MODELS["seed_hardswish"]())
    doc = {"model": {"onnx": "model.onnx"},
           "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}],
           "target": {"profile": "demo", "probe": {"compiler": "qnn", "target": "htp", "venv": str(venv.resolve()),
                                                   "decide": "measured", "soc_model": 57}},
           "gates": {"max_cpu_nodes": 0, "max_npu_partitions": 1}}
    run = run_cli("check", write_contract(doc), "--json", tmp_path / "result.json")
    assert run.code == 0, run.out + run.err
    result = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    assert result["summary"]["evidence"] == EVIDENCE
    assert result["summary"]["measured"] == {"cpu_nodes": 0, "npu_partitions": 1, "cpu_partitions": 0}
    assert result["stages"]["probe"]["compiler"]["plugin"] == "qnn"
    clip = next(f for f in result["findings"] if f["rule"] == "unsupported-op")
    assert clip["severity"] == "info"
    assert clip["message"].endswith(f"(measured on the NPU: {EVIDENCE})"), clip["message"]


QDQ_ERF = [  # erf_between quantized for the HTP: every node as the EP placed it
    ("conv1.b_DequantizeLinear", "folded"), ("conv1.w_DequantizeLinear", "folded"),
    ("conv2.b_DequantizeLinear", "folded"), ("conv2.w_DequantizeLinear", "folded"),
    ("x_QuantizeLinear", "cpu"), ("x_DequantizeLinear", "npu"), ("conv1", "npu"), ("c1_QuantizeLinear", "npu"),
    ("c1_DequantizeLinear", "cpu"), ("erf", "cpu"), ("e_QuantizeLinear", "cpu"), ("e_DequantizeLinear", "npu"),
    ("conv2", "npu"), ("y_QuantizeLinear", "npu"), ("y_DequantizeLinear", "npu"),
]


def test_quantize_int8_prepares_a_qdq_model_and_maps_every_node(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                                venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "erf_between", "--quantize", "int8", "--profile", "qnn-htp")
    assert code == 0
    assert [(n["name"], n["actual"]) for n in doc["nodes"]] == QDQ_ERF
    assert (doc["summary"]["agree"], doc["summary"]["compared"]) == (14, 14)
    assert (doc["preparation"]["method"], doc["preparation"]["activations"]) == ("qnn-qdq", "uint8")
    assert (tmp_path / "work" / "qnn-qdq.onnx").is_file()
    response = json.loads((tmp_path / "work" / "attempt-1" / "response.json").read_text(encoding="utf-8"))
    assert response["precision"] == "qdq"


def test_contract_quantization_int16_probes_the_qnn_qdq_model(run_cli: RunCli, save_model: SaveModel,
                                                              write_contract: WriteContract, tmp_path: Path,
                                                              venv: Path) -> None:
    save_model(qnn_models.MODELS["erf_between"]())
    doc = {"model": {"onnx": "model.onnx"},
           "inputs": [{"name": "x", "shape": [1, 8, 16, 16], "dtype": "float32", "range": [-1, 1]}],
           "quantization": {"mode": "int16", "calibration": {"count": 4}, "holdout": {"count": 2}},
           "target": {"profile": "qnn-htp", "probe": {"compiler": "qnn", "target": "htp",
                                                      "venv": str(venv.resolve())}}}
    run = run_cli("check", write_contract(doc), "--json", tmp_path / "result.json", "--out", tmp_path / "bundle")
    assert run.code in (0, 1), run.out + run.err
    probe = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))["stages"]["probe"]
    assert probe["status"] == "ok"
    prep = probe["preparation"]
    assert (prep["method"], prep["mode"], prep["activations"], prep["weights"]) == (
        "qnn-qdq", "int16", "uint16", "int16")
    assert prep["calibration"] == {"samples": 4, "synthetic": True}
    assert [(n["name"], n["actual"]) for n in probe["nodes"]] == QDQ_ERF
    assert (tmp_path / "bundle" / "qnn-qdq.onnx").is_file()


SHARED_BIAS = [  # qdq_shared_bias (onnxruntime's QNN quantizer alone): conv1 and conv2 form no QDQ unit
    ("conv1.w_DequantizeLinear", "cpu"), ("conv2.w_DequantizeLinear", "cpu"), ("conv3.b_DequantizeLinear", "folded"),
    ("conv3.w_DequantizeLinear", "folded"), ("shared.b_DequantizeLinear", "npu"), ("x_QuantizeLinear", "cpu"),
    ("bias_identity", "folded"), ("x_DequantizeLinear", None), ("conv2.b_QuantizeLinear", "folded"),
    ("conv1", "npu"), ("conv2.b_DequantizeLinear", "npu"), ("r_QuantizeLinear", "npu"),
    ("r_DequantizeLinear", None), ("conv2", "npu"), ("c_QuantizeLinear", "npu"), ("c_DequantizeLinear", "npu"),
    ("conv3", "npu"), ("y_QuantizeLinear", "npu"), ("y_DequantizeLinear", "npu"),
]
STANDALONE = "QNN EP does not support a standalone DQ op with per-channel quantization"


def test_standalone_per_channel_dqs_on_cpu_as_predicted(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                        venv: Path) -> None:
    """A Conv whose bias DQ is uint8 forms no QDQ unit: the EP refuses its per-channel weight DQ alone,
    and qnn-htp-qdq's standalone_qdq entries predict it (the DQs the layout pass re-creates for the
    unit-less Convs are unmapped, never guessed)."""
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "qdq_shared_bias", "--profile", "qnn-htp-qdq")
    assert code == 0
    assert [(n["name"], n["actual"]) for n in doc["nodes"]] == SHARED_BIAS
    assert {n["name"]: n["reason"] for n in doc["nodes"] if n["actual"] == "cpu" and not n["adapter"]} == {
        "conv1.w_DequantizeLinear": STANDALONE, "conv2.w_DequantizeLinear": STANDALONE}
    assert [n["name"] for n in doc["nodes"] if n["unmapped"]] == ["x_DequantizeLinear", "r_DequantizeLinear"]
    assert (doc["summary"]["agree"], doc["summary"]["compared"]) == (16, 16)
    assert doc["preparation"]["method"] == "as-is"


def test_quantize_int8_folds_the_identity_so_every_conv_has_its_unit(run_cli: RunCli, save_model: SaveModel,
                                                                     tmp_path: Path, venv: Path) -> None:
    """The same float model through npu-gate's --quantize int8: the Identity of the shared bias is
    folded before quantizing, every Conv gets an int32 bias, nothing but the input adapter on CPU."""
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "shared_bias", "--quantize", "int8",
                       "--profile", "qnn-htp-qdq")
    assert code == 0
    assert [n["name"] for n in doc["nodes"] if n["actual"] == "cpu"] == ["x_QuantizeLinear"]
    assert not [n["name"] for n in doc["nodes"] if n["unmapped"]]
    assert (doc["summary"]["agree"], doc["summary"]["compared"]) == (16, 16)
    assert doc["preparation"]["reason"].startswith("npu-gate replaced 1 Identity node(s) of an initializer")
