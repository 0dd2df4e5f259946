"""probe --quantize: the request's samples, RKNN's int8 options, its accuracy_analysis table parsed
and mapped back to ONNX nodes (replayed from a build captured with rknn-toolkit2 2.5.0:
tests/fixtures/rknn/seed_hardswish_int8, by tests/helpers/capture_rknn_fixtures.py), the report,
and the command's bad input. The real toolkit runs in test_probe_rknn.py (marker rknn)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_gate.cli import QUANT_MODES as CLI_QUANT_MODES
from npu_gate.errors import GateError
from npu_gate.pipeline import replay_model as replay
from npu_gate.probe.base import QUANT_MODES, QuantRequest
from npu_gate.probe.fake import FakeCompiler
from npu_gate.probe.rknn import RknnCompiler, accuracy, parse_accuracy
from npu_gate.profile.spec import load_profile
from npu_gate.render.probe import layer_rows, markdown, quantization_text, text
from npu_gate.resources import load_schema
from tests.helpers import probe_models
from tests.helpers.common import REPO, RunCli, SaveModel

FIXTURE = REPO / "tests" / "fixtures" / "rknn" / "seed_hardswish_int8"
ATTEMPT = FIXTURE / "work" / "attempt-1"
HARDSWISH = ["/Add", "/Clip", "/Mul", "/Div"]


def _table(k: int = 0) -> list[str]:
    return (ATTEMPT / f"accuracy-{k}" / "error_analysis.txt").read_text(encoding="utf-8").splitlines()


def _validate(doc: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator(load_schema("probe")).iter_errors(doc))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_cli_modes_are_the_probe_modes() -> None:
    assert CLI_QUANT_MODES == QUANT_MODES == ("int8", "int16", "fp16", "none")


# --- the accuracy table of accuracy_analysis, as rknn-toolkit2 2.5.0 wrote it ---

def test_parse_accuracy_reads_entire_and_single_figures_per_layer() -> None:
    rows = parse_accuracy(_table(0))
    assert [(r["op_type"], r["tensor"], r["entire"], r["single"]) for r in rows] == [
        ("Input", "images", {"cos": 1.0, "euc": 0.0}, {"cos": 1.0, "euc": 0.0}),
        ("exDataConvert", "images_int8", {"cos": 1.0, "euc": 0.03093}, {"cos": 1.0, "euc": 0.03093}),
        # the Conv fused into the HardSwish after it: a row without figures
        ("Conv", "/conv/Conv_output_0", {"cos": None, "euc": None}, {"cos": None, "euc": None}),
        ("HardSwish", "out_int8", {"cos": 0.99999, "euc": 0.55673}, {"cos": 0.99999, "euc": 0.55673}),
        ("exDataConvert", "out", {"cos": 0.99999, "euc": 0.55673}, {"cos": 0.99999, "euc": 0.35119}),
    ]


def test_parse_accuracy_skips_the_header_and_takes_nan_as_no_figure() -> None:
    assert parse_accuracy(["layer_name   simulator_error", "----", "# entire: ..."]) == []
    assert parse_accuracy(["[Relu] a b_out      nan | 0.5   0.9 | 0.1"]) == [
        {"op_type": "Relu", "tensor": "a b_out", "entire": {"cos": None, "euc": 0.5},
         "single": {"cos": 0.9, "euc": 0.1}}]


def test_accuracy_is_the_worst_over_the_holdout_samples() -> None:
    merged = accuracy(ATTEMPT, "2.5.0")
    assert merged is not None
    assert merged["evidence"] == ("measured by rknn-toolkit2 2.5.0 simulator (accuracy_analysis, float vs int8, "
                                  "worst of 8 hold-out samples)")
    assert merged["samples"] == 8 and merged["error"] is None
    hardswish = merged["layers"][3]
    # euclidean distances 0.53554 .. 0.57497 over the 8 samples (accuracy-1 has the largest)
    assert (hardswish["tensor"], hardswish["entire"], hardswish["single"]) == (
        "out_int8", {"cos": 0.99999, "euc": 0.57497}, {"cos": 0.99999, "euc": 0.57497})


def test_accuracy_of_a_float_build_is_none_and_a_failed_analysis_says_why(tmp_path: Path) -> None:
    assert accuracy(tmp_path, "2.5.0") is None
    failed = accuracy(tmp_path, "2.5.0", "accuracy_analysis returned -1")
    assert failed is not None and (failed["samples"], failed["layers"], failed["error"]) == (
        0, [], "accuracy_analysis returned -1")


# --- the replayed int8 build: placement, accuracy mapped to ONNX nodes, report ---

def _replayed() -> dict[str, Any]:
    result = replay(FIXTURE / "model.onnx", RknnCompiler(), "rk3588", FIXTURE / "work", load_profile("rknn-rk3588"))
    return result.to_dict()


def test_int8_build_is_one_npu_convhardswish_and_its_layers_map_to_onnx_nodes() -> None:
    doc = _replayed()
    _validate(doc)
    assert doc["schema_version"] == "probe-1.6" and doc["status"] == "ok"
    assert [(s["device"], s["ops"]) for s in doc["segments"]] == [("npu", ["ConvHardSwish"])]
    assert {r["data_type"] for r in doc["ops"]} == {"INT8"}
    assert doc["memory"]["compiler"]["internal_bytes"] == 8960  # 8.75KB; the float16 build needs 25.5KB
    q = doc["quantization"]
    assert (q["mode"], q["calibration"], q["holdout"]) == (
        "int8", {"samples": 32, "synthetic": True}, {"samples": 8, "synthetic": True})
    assert [(r["op_type"], r["nodes"], r["adapter"]) for r in q["accuracy"]["layers"]] == [
        ("Input", [], True), ("exDataConvert", [], True), ("Conv", ["/conv/Conv"], False),
        # out_int8 is the integer copy of `out`, written in the last graph by /Add_2hs, which
        # replace_torch_hardswish2 made of these four nodes
        ("HardSwish", HARDSWISH, False), ("exDataConvert", [], True)]
    recorded = json.loads((FIXTURE / "probe.json").read_text(encoding="utf-8"))
    assert recorded["quantization"]["accuracy"] == q["accuracy"]


def test_side_by_side_rows_take_onnxruntimes_sqnr_of_the_layers_last_matched_node() -> None:
    q = {"mode": "int8", "accuracy": {"evidence": "measured by X", "layers": [
        {"op_type": "HardSwish", "tensor": "t", "entire": {"cos": 0.9, "euc": 1.0}, "single": {"cos": 0.95, "euc": 0.5},
         "nodes": HARDSWISH, "adapter": False},
        {"op_type": "Input", "tensor": "images", "entire": {"cos": 1.0, "euc": 0.0},
         "single": {"cos": 1.0, "euc": 0.0}, "nodes": [], "adapter": True}]},
         "onnxruntime": {"evidence": "measured by onnxruntime", "layers": [
             {"node": "/Clip", "sqnr_db": 47.0}, {"node": "/Mul", "sqnr_db": 42.9}, {"node": None, "sqnr_db": 54.0}]}}
    assert [(r["ort_node"], r["ort_sqnr_db"], r["ort_matched"]) for r in layer_rows(q)] == [
        ("/Mul", 42.9, True), (None, None, False)]


def test_report_puts_both_evidences_side_by_side() -> None:
    recorded = json.loads((FIXTURE / "probe.json").read_text(encoding="utf-8"))
    q = recorded["quantization"]
    assert quantization_text(q, str) == [
        "quantized int8: 32 synthetic calibration samples (drawn from the input ranges), 8 synthetic hold-out "
        "samples (drawn from the input ranges)",
        "measured by rknn-toolkit2 2.5.0 simulator (accuracy_analysis, float vs int8, worst of 8 hold-out samples): "
        "output out cosine 0.99999; lowest single-layer cosine 0.99999 at HardSwish out_int8 (/Add, /Clip, /Mul, /Div)",
        f"{q['onnxruntime']['evidence']}: output out SQNR 42.9 dB, cosine 0.99998",
    ]
    result = replay(FIXTURE / "model.onnx", RknnCompiler(), "rk3588", FIXTURE / "work", load_profile("rknn-rk3588"))
    result.quantization = q  # with onnxruntime's figures, as `probe --quantize` adds them
    report = markdown(result)
    assert "### Quantized build (int8)" in report
    assert ("| HardSwish     | <code>out&#95;int8</code>                | /Add, /Clip, /Mul, /Div | 0.99999        | "
            "0.57497        | 0.99999        | 0.57497        | 42.9 dB (<code>/Mul</code>) |") in report
    assert "**A** measured by rknn-toolkit2 2.5.0 simulator" in report
    assert "**B** measured by onnxruntime" in report
    assert "  quantized int8: 32 synthetic calibration samples" in text(result)


# --- the command's input ---

def test_samples_for_a_float_build_are_refused(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    model = save_model(probe_models.MODELS["seed_hardswish"](), "m.onnx")
    run = run_cli("probe", model, "--compiler", "rknn", "--venv", tmp_path / "none", "--calibration", "c.npz")
    assert run.code == 2
    assert run.err.strip().splitlines() == [
        "npu-gate: error: --calibration c.npz: samples are for --quantize int8 or int16 (given: no --quantize)"]


def test_a_mode_the_plugin_does_not_build_is_refused(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    model = save_model(probe_models.MODELS["seed_hardswish"](), "m.onnx")
    run = run_cli("probe", model, "--compiler", "rknn", "--venv", tmp_path / "none", "--quantize", "int16")
    assert run.code == 2
    assert run.err.strip().splitlines() == [
        "npu-gate: error: --quantize int16: the rknn plug-in builds int8 or fp16 or none only"]
    with pytest.raises(GateError, match="the fake plug-in builds none only"):
        FakeCompiler().check_quant_mode("int8")


def test_a_missing_samples_file_is_one_line(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    model = save_model(probe_models.MODELS["seed_hardswish"](), "m.onnx")
    missing = tmp_path / "missing.npz"
    run = run_cli("probe", model, "--compiler", "rknn", "--venv", tmp_path / "none", "--quantize", "int8",
                  "--calibration", missing)
    assert run.code == 2
    assert run.err.strip().splitlines() == [
        f"npu-gate: error: {missing}: --calibration: cannot read: No such file or directory"]


def test_an_ill_shaped_samples_file_is_one_line(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    model = save_model(probe_models.MODELS["seed_hardswish"](), "m.onnx")
    bad = tmp_path / "bad.npz"
    np.savez(bad, images=np.zeros((4, 3, 8, 8), dtype=np.float32))
    run = run_cli("probe", model, "--compiler", "rknn", "--venv", tmp_path / "none", "--quantize", "int8",
                  "--holdout", bad)
    assert run.code == 2
    assert run.err.strip().splitlines() == [
        f"npu-gate: error: {bad}: --holdout: array images: shape [4, 3, 8, 8], expected [N, 1, 3, 16, 16] "
        "(model input images shape [1, 3, 16, 16], sample k in row k)"]


def test_one_file_gives_calibration_rows_then_holdout_rows(tmp_path: Path) -> None:
    from npu_gate.quantize.samples import model_input_specs, request_sets

    model = tmp_path / "m.onnx"
    model.write_bytes(probe_models.MODELS["seed_hardswish"]().SerializeToString())
    specs = model_input_specs(model, {})
    assert [(s.name, s.shape, s.dtype, s.range) for s in specs] == [("images", [1, 3, 16, 16], "float32", (0.0, 1.0))]
    rows = np.arange(10, dtype=np.float32)[:, None, None, None, None] * np.ones((10, 1, 3, 16, 16), np.float32)
    np.savez(tmp_path / "s.npz", images=rows)
    sets = request_sets(specs, tmp_path / "s.npz", None)
    assert [float(r["images"].flat[0]) for r in sets.calibration] == [0.0, 1.0]
    assert [float(r["images"].flat[0]) for r in sets.holdout] == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert (sets.calibration_synthetic, sets.holdout_synthetic) == (False, False)
    np.savez(tmp_path / "few.npz", images=rows[:8])
    with pytest.raises(GateError, match=r"--calibration: 8 rows, too few for calibration and 8 hold-out rows"):
        request_sets(specs, tmp_path / "few.npz", None)
    drawn = request_sets(specs, None, None)
    assert (len(drawn.calibration), len(drawn.holdout), drawn.calibration_synthetic) == (32, 8, True)


def test_rknn_int8_options_list_one_sample_per_line(tmp_path: Path) -> None:
    rows = [{"a": np.zeros((1, 2), np.float32), "b": np.ones((1, 3), np.float32)} for _ in range(3)]
    options = RknnCompiler().quantization_options(QuantRequest("int8", rows, rows[:1]), tmp_path)
    dataset = Path(options["quantization"]["dataset"]).read_text(encoding="utf-8").splitlines()
    assert [[Path(p).name for p in line.split(" ")] for line in dataset] == [
        ["calibration-0-0.npy", "calibration-0-1.npy"], ["calibration-1-0.npy", "calibration-1-1.npy"],
        ["calibration-2-0.npy", "calibration-2-1.npy"]]
    assert [[Path(p).name for p in row] for row in options["quantization"]["holdout"]] == [
        ["holdout-0-0.npy", "holdout-0-1.npy"]]
    assert np.load(tmp_path / "calibration-1-1.npy").tolist() == [[1.0, 1.0, 1.0]]
    assert RknnCompiler().quantization_options(QuantRequest("fp16"), tmp_path) == {}
