"""The quantization stage: onnxruntime's static quantization of the checked graph, float vs
quantized on hold-out samples, the quantization gates and findings (docs/quantization.md)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npu_gate.contract.spec import Quantization, load_contract
from npu_gate.errors import ContractError
from npu_gate.model.samples import make_samples
from npu_gate.pipeline import check_contract
from npu_gate.quantize import run as quant
from npu_gate.quantize.samples import sample_sets
from npu_gate.render import markdown, text
from npu_gate.result.types import GateResult
from tests.helpers.common import REPO, RunCli, WriteContract, validate_result

EXAMPLE = REPO / "examples" / "quantize-mobilenet"


def _summary(result: GateResult) -> list[tuple[str, str | None, str | None]]:
    return [(f.rule, f.node, f.subject) for f in result.findings]


def test_mobilenet_example_quantizes_and_passes(run_cli: RunCli) -> None:
    result = check_contract(load_contract(EXAMPLE / "npu-gate.json"))
    assert result.verdict == "pass"
    assert result.quantization is not None and result.quantization["graph"] == "the checked graph (no node folds)"
    assert result.stages["quantization"] == {"status": "ok", "samples": 8}
    q = result.quantization
    assert q is not None
    assert (q["mode"], q["format"], q["activations"], q["weights"], q["per_channel"], q["method"]) == (
        "int8", "QDQ", "int8", "int8", True, "minmax")
    assert q["calibration"] == {"samples": 32, "synthetic": True}
    assert q["holdout"] == {"samples": 8, "synthetic": True}
    [out] = q["outputs"]
    assert out["output"] == "logits"
    assert out["sqnr_db"] == pytest.approx(36.12, abs=0.05)  # seeded weights and samples
    assert out["cosine"] == pytest.approx(0.99996, abs=1e-5)
    assert [(w["node"], w["op_type"]) for w in q["worst_layers"][:2]] == [
        ("block3.expand_act", "HardSwish"), ("block3.expand", "Conv")]
    assert [(g.name, g.limit, g.passed) for g in result.gates[-2:]] == [
        ("min_output_sqnr_db", 25, True), ("min_output_cosine", 0.99, True)]
    validate_result(json.loads(json.dumps(result.to_dict())))
    run = run_cli("check", EXAMPLE)
    assert run.code == 0
    assert ("  quantization int8 (QDQ, onnxruntime; calibration 32 synthetic samples, hold-out 8); "
            "quantized graph 29 npu, 0 cpu, 60 Q/DQ with their ops: output logits SQNR 36.1 dB, cosine 1.0000"
            ) in run.out.splitlines()


def test_outlier_branch_fails_sqnr_and_names_the_layer(run_cli: RunCli) -> None:
    contract = load_contract(EXAMPLE / "outlier" / "npu-gate.json")
    result = check_contract(contract)
    assert result.verdict == "fail"
    assert _summary(result) == [("quantization-error", "head", "output head")]
    [finding] = result.findings
    assert finding.message == ("output head: SQNR 0 dB is below min_output_sqnr_db 20 dB (hold-out samples); "
                               "worst layer: node head (Conv), SQNR 0 dB")
    assert (finding.constraint, finding.actual, finding.allowed) == ("min_output_sqnr_db", 0.0, 20)
    assert [(g.name, g.limit, g.actual, g.passed) for g in result.gates[-1:]] == [
        ("min_output_sqnr_db", 20, 0.0, False)]
    q = result.quantization
    assert q is not None and q["per_channel"] is False
    # the Concat sharing one scale between [0, 1e4] and [0, 1] keeps its own SQNR (the 1e4 branch
    # dominates it); the layer reading the small channels through it loses them all
    layers = {w["node"]: w["sqnr_db"] for w in q["worst_layers"]}
    assert layers["head"] == 0.0 and layers["mix"] > 50
    report = markdown.render(result)
    assert "| <code>head</code>  | Conv    | <code>head</code>  | 0.00      | 0.00          |          |" in report
    assert run_cli("check", EXAMPLE / "outlier").code == 1


def test_models_are_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_models", EXAMPLE / "make_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.mobilenet().SerializeToString() == (EXAMPLE / "mobilenet.onnx").read_bytes()
    assert module.outlier().SerializeToString() == (EXAMPLE / "outlier" / "outlier.onnx").read_bytes()
    assert (EXAMPLE / "mobilenet.onnx").stat().st_size < 200_000


class MobilenetContract(Protocol):
    """The ``mobilenet_contract`` fixture: a contract on the example's mobilenet, with these keys."""

    def __call__(self, quantization: dict[str, Any] | None = None, gates: dict[str, Any] | None = None,
                 model: str = ...) -> Path: ...


@pytest.fixture
def mobilenet_contract(tmp_path: Path, write_contract: WriteContract) -> MobilenetContract:
    shutil.copyfile(EXAMPLE / "mobilenet.onnx", tmp_path / "model.onnx")

    def make(quantization: dict[str, Any] | None = None, gates: dict[str, Any] | None = None,
             model: str = "model.onnx") -> Path:
        doc: dict[str, Any] = {"model": {"onnx": model}, "target": {"profile": "rknn-rk3588"},
               "inputs": [{"name": "images", "shape": [1, 3, 32, 32], "dtype": "float32", "range": [0, 1]}]}
        if quantization is not None:
            doc["quantization"] = quantization
        if gates is not None:
            doc["gates"] = gates
        return write_contract(doc)

    return make


def test_gate_without_quantization_is_a_contract_error(mobilenet_contract: MobilenetContract) -> None:
    path = mobilenet_contract(gates={"min_output_sqnr_db": 30})
    with pytest.raises(ContractError) as err:
        load_contract(path)
    assert err.value.problems == [f"{path}: gates.min_output_sqnr_db: needs a quantization with mode int8 or int16 "
                                  "(the figure is measured on the quantized model)"]


def test_samples_file_split_so_holdout_is_never_calibration(tmp_path: Path, mobilenet_contract: MobilenetContract,
                                                            run_cli: RunCli) -> None:
    rows = np.random.default_rng(3).uniform(0, 1, (12, 1, 3, 32, 32)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", images=rows)
    contract = load_contract(mobilenet_contract({"calibration": {"samples_file": "calib.npz", "count": 9},
                                                 "holdout": {"count": 3}}))
    sets = sample_sets(contract)
    assert [len(sets.calibration), len(sets.holdout)] == [9, 3]
    assert (sets.calibration_synthetic, sets.holdout_synthetic) == (False, False)
    np.testing.assert_array_equal(np.stack([r["images"] for r in sets.calibration]), rows[:9])
    np.testing.assert_array_equal(np.stack([r["images"] for r in sets.holdout]), rows[9:])
    # default hold-out count 8: the file's other 4 rows calibrate
    defaults = sample_sets(load_contract(mobilenet_contract({"calibration": {"samples_file": "calib.npz"}})))
    assert [len(defaults.calibration), len(defaults.holdout)] == [4, 8]
    path = mobilenet_contract({"calibration": {"samples_file": "calib.npz", "count": 10}})
    with pytest.raises(ContractError) as err:
        load_contract(path)
    assert err.value.problems == [
        f"{path}: quantization: calib.npz has 12 rows, fewer than 10 calibration + 8 hold-out samples (hold-out "
        "samples are never calibration samples: give more rows, smaller counts or a holdout.samples_file)"]
    run = run_cli("check", path)
    assert run.code == 2 and "calib.npz has 12 rows" in run.err


def test_synthetic_holdout_rows_follow_the_calibration_rows(mobilenet_contract: MobilenetContract) -> None:
    contract = load_contract(mobilenet_contract({"calibration": {"count": 5}, "holdout": {"count": 2}}))
    sets = sample_sets(contract)
    drawn = make_samples(contract.inputs, 7, 0)
    assert [r["images"].tobytes() for r in sets.calibration] == [r["images"].tobytes() for r in drawn[:5]]
    assert [r["images"].tobytes() for r in sets.holdout] == [r["images"].tobytes() for r in drawn[5:]]


def test_already_quantized_model_is_analysed_as_it_is(tmp_path: Path, mobilenet_contract: MobilenetContract) -> None:
    rows = make_samples(load_contract(mobilenet_contract()).inputs, 4, 0)
    quant.quantize(tmp_path / "model.onnx", tmp_path / "int8.onnx", rows, Quantization())
    result = check_contract(load_contract(mobilenet_contract({}, {"min_output_cosine": 0.9}, model="int8.onnx")))
    assert result.stages["quantization"] == {
        "status": "skipped", "reason": "the model is quantized already (DequantizeLinear, QuantizeLinear): "
        "analysed as it is, no float model to compare"}
    assert result.quantization is None
    assert ("gate-exceeded", None, "min_output_cosine") in _summary(result)
    assert [(g.name, g.actual, g.passed) for g in result.gates[-1:]] == [("min_output_cosine", None, False)]
    assert result.verdict == "fail"  # a gate never fails open


def test_mode_none_skips(mobilenet_contract: MobilenetContract) -> None:
    result = check_contract(load_contract(mobilenet_contract({"mode": "none"})))
    assert result.stages["quantization"] == {"status": "skipped", "reason": "quantization.mode is none"}
    assert result.verdict == "pass"
    assert "### Quantization\n\nNot run: quantization.mode is none." in markdown.render(result)


def test_quantizer_error_is_one_line_finding(tmp_path: Path, write_contract: WriteContract) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Mystery", ["r"], ["y"], name="odd", domain="acme")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("acme", 1)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "model.onnx")
    path = write_contract({"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
                           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
                           "quantization": {}, "gates": {"min_output_sqnr_db": 10}})
    result = check_contract(load_contract(path))
    failed = [f for f in result.findings if f.rule == "quantization-failed"]
    assert len(failed) == 1 and "\n" not in failed[0].message
    assert failed[0].message.startswith("onnxruntime quantize_static: ")
    assert "Mystery" in failed[0].message
    assert result.stages["quantization"]["status"] == "failed"
    assert ("gate-exceeded", None, "min_output_sqnr_db") in _summary(result)
    assert text.render(result).count("quantization int8") == 1


def test_bundle_keeps_the_quantized_model(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "bundle"
    assert run_cli("check", EXAMPLE, "--out", out).code == 0
    model = onnx.load(str(out / "quantized.onnx"))
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op_type for n in model.graph.node}
    assert "quantized.onnx" in json.loads((out / "versions.json").read_text())["bundle"]["files"]


def test_cosine_and_sqnr_edge_cases() -> None:
    zero = np.zeros(3)
    assert quant.cosine(zero, zero) == 1.0
    assert quant.cosine(zero, np.ones(3)) == 0.0
    assert quant.sqnr_db(np.ones(3), np.ones(3)) > 300  # onnxruntime adds an epsilon to the noise
    assert quant.sqnr_db(np.array([3.0, 4.0]), np.array([3.0, 3.0])) == pytest.approx(10 * np.log10(25 / 1))


def test_quantized_graph_placed_by_units_on_rknn(mobilenet_contract: MobilenetContract) -> None:
    """int8 activations (RKNN's asymmetric int8): every unit on the NPU, Q/DQ not counted."""
    result = check_contract(load_contract(mobilenet_contract({"activations": "int8"})))
    assert result.quantization is not None
    assert result.quantization["placement"] == {
        "npu_nodes": 29, "cpu_nodes": 0, "qdq_nodes": 60, "npu_partitions": 1,
        "evidence": "predicted by profile rknn-rk3588 (measured)"}
    assert _summary(result) == []


def test_uint8_add_units_run_on_rknn_as_its_int8_build_measured(mobilenet_contract: MobilenetContract) -> None:
    """onnxruntime's default QDQ activations are uint8: rknn-rk3588 claims uint8 Add units from the
    calibration's quantized Add points (RKNN-Toolkit2's int8 build of a float Add ran on the NPU)."""
    result = check_contract(load_contract(mobilenet_contract({"activations": "uint8"})))
    assert _summary(result) == []
    assert result.quantization is not None
    placement = result.quantization["placement"]
    assert placement is not None and placement["cpu_nodes"] == 0
    from npu_gate.profile.spec import load_profile

    [constraint] = load_profile("rknn-rk3588").ops["Add"]["constraints"]
    assert constraint["dtype"] == ["float32", "float16", "int8", "int32", "uint8"]
    assert constraint["message"].endswith("uint8 was measured only as a quantized (QDQ) Add, in the compiler's "
                                          "int8 build")


def test_rknn_rk3588_predicts_the_lesson_net_in_int8_on_the_npu(tmp_path: Path, write_contract: WriteContract) -> None:
    """#21: RKNN-Toolkit2 2.5.0 builds the lesson's net in int8 as one NPU ConvHardSwish
    (tests/fixtures/rknn/seed_hardswish_int8); the calibrated profile predicts its QDQ form with
    no CPU node and one NPU partition."""
    from tests.helpers import probe_models

    (tmp_path / "model.onnx").write_bytes(probe_models.MODELS["seed_hardswish"]().SerializeToString())
    path = write_contract({"name": "seed-int8", "model": {"onnx": "model.onnx"},
                           "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32",
                                       "range": [0, 1]}],
                           "target": {"profile": "rknn-rk3588"}, "quantization": {"mode": "int8"}})
    result = check_contract(load_contract(path))
    assert result.quantization is not None
    assert result.quantization["placement"] == {
        "npu_nodes": 4, "cpu_nodes": 0, "qdq_nodes": 8, "npu_partitions": 1,
        "evidence": "predicted by profile rknn-rk3588 (measured)"}
    assert _summary(result) == []
    # the folded float graph is quantized (its four Constants as initializers), as the compiler sees it
    assert result.quantization["graph"] == "the folded graph: 4 folded nodes replaced by 4 initializers"
    [output] = result.quantization["outputs"]
    assert (output["output"], round(output["sqnr_db"], 2)) == ("out", 42.94)
    validate_result(result.to_dict())


def test_inspect_quantized_model_counts_units(tmp_path: Path, run_cli: RunCli) -> None:
    rows = make_samples(load_contract(EXAMPLE / "npu-gate.json").inputs, 4, 0)
    quant.quantize(EXAMPLE / "mobilenet.onnx", tmp_path / "int8.onnx", rows, Quantization(activations="int8"))
    run = run_cli("inspect", tmp_path / "int8.onnx", "--profile", "demo", "--json", tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    s = doc["summary"]
    # the weight and bias DQs of the Gemm head (fc) demo puts on CPU run there with it (not folded)
    assert (s["node_count"], s["npu_nodes"], s["cpu_nodes"], s["folded_nodes"], s["qdq_nodes"]) == (119, 18, 11, 28, 62)
    qdq = [n for n in doc["nodes"] if n["op_type"] in ("QuantizeLinear", "DequantizeLinear")]
    assert sorted(n["name"] for n in qdq if n["reasons"] and n["reasons"][0].startswith("weight quantization")) == \
        ["fc.b_DequantizeLinear", "fc.w_DequantizeLinear"]
    assert {f["rule"] for f in doc["findings"]} == {"unsupported-op"}
    assert not [f for f in doc["findings"] if f["op_type"] in ("QuantizeLinear", "DequantizeLinear")]
    first = next(n for n in qdq if n["name"] == "images_QuantizeLinear")
    assert first["reasons"] == ["I/O input adapter of stem, placed with it"]
    assert run.code == 1


def test_cache_replays_quantization_and_keys_its_samples_file(tmp_path: Path, mobilenet_contract: MobilenetContract,
                                                              run_cli: RunCli) -> None:
    rng = np.random.default_rng(5)
    np.savez(tmp_path / "calib.npz", images=rng.uniform(0, 1, (12, 1, 3, 32, 32)).astype(np.float32))
    path = mobilenet_contract({"activations": "int8", "calibration": {"samples_file": "calib.npz"}},
                              {"min_output_sqnr_db": 25})
    first, again = run_cli("check", path), run_cli("check", path)
    assert (first.code, again.code) == (0, 0)
    assert "calibration 4 samples, hold-out 8" in first.out
    assert again.out.startswith(first.out) and "result from cache" in again.out
    np.savez(tmp_path / "calib.npz", images=rng.uniform(0, 1, (12, 1, 3, 32, 32)).astype(np.float32))
    changed = run_cli("check", path)
    assert changed.code == 0 and "result from cache" not in changed.out


def test_quantization_section_escapes_model_names() -> None:
    result = check_contract(load_contract(EXAMPLE / "outlier" / "npu-gate.json"))
    assert result.quantization is not None
    result.quantization["outputs"][0]["output"] = "y|<img src=x>"
    result.quantization["worst_layers"][0]["node"] = "n<script>"
    report = markdown.render(result)
    section = report[report.index("### Quantization"):report.index("### Gates")]
    assert "<img" not in section and "<script>" not in section
    assert "<code>y&#124;&#60;img src=x&#62;</code>" in section and "<code>n&#60;script&#62;</code>" in section


@pytest.mark.torch
@pytest.mark.slow
def test_torch_contract_quantizes_its_export(tmp_path: Path) -> None:
    seed = REPO / "examples" / "seed-hardswish"
    shutil.copyfile(seed / "seed_net.py", tmp_path / "seed_net.py")
    doc = json.loads((seed / "npu-gate.json").read_text())
    doc["quantization"] = {"activations": "int8", "calibration": {"count": 8}, "holdout": {"count": 4}}
    doc["gates"] = {"min_output_cosine": 0.9}
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc))
    result = check_contract(load_contract(tmp_path / "npu-gate.json"))
    assert result.stages["quantization"] == {"status": "ok", "samples": 4}
    assert result.quantization is not None
    assert result.quantization["calibration"] == {"samples": 8, "synthetic": True}
    assert [(g.name, g.passed) for g in result.gates[-1:]] == [("min_output_cosine", True)]
    assert result.quantization["outputs"][0]["cosine"] > 0.9


METRIC = '''
import numpy as np


def agreement(reference, candidate, samples):
    top = [int(np.argmax(r["logits"]) == np.argmax(c["logits"])) for r, c in zip(reference, candidate)]
    return {"top1_agreement": sum(top) / len(top), "samples": float(len(samples))}
'''


def test_metric_judges_the_quantized_model_against_the_float_one(tmp_path: Path, write_contract: WriteContract) -> None:
    """#21: the contract's metric runs on the quantized model too: float outputs as the reference,
    int8 outputs as the candidate, on the hold-out samples."""
    shutil.copyfile(EXAMPLE / "mobilenet.onnx", tmp_path / "model.onnx")
    (tmp_path / "quant_metric.py").write_text(METRIC, encoding="utf-8")
    doc: dict[str, Any] = {"model": {"onnx": "model.onnx"}, "target": {"profile": "rknn-rk3588"},
           "inputs": [{"name": "images", "shape": [1, 3, 32, 32], "dtype": "float32", "range": [0, 1]}],
           "quantization": {"mode": "int8"},
           "metric": {"callable": "quant_metric:agreement", "threshold": {"top1_agreement": {"min": 0.75}}}}
    result = check_contract(load_contract(write_contract(doc)))
    assert result.quantization is not None
    metric = result.quantization["metric"]
    assert (metric["callable"], metric["values"]["samples"], metric["passed"]) == ("quant_metric:agreement", 8.0, True)
    assert metric["values"]["top1_agreement"] >= 0.75
    assert metric["evidence"] == ("the contract's metric, float (reference) vs int8 (candidate) on 8 hold-out "
                                  "samples, onnxruntime CPU")
    assert "task-metric" not in {f.rule for f in result.findings}
    validate_result(result.to_dict())
    agreement = metric["values"]["top1_agreement"]
    assert f"; metric float vs int8: top1_agreement {agreement:.4g}, samples 8 (passed)" in text.render(result)
    assert ("Task metric <code>quant&#95;metric:agreement</code> (the contract's metric, float &#40;reference&#41; "
            "vs int8") in markdown.render(result)
    # a threshold the quantized model misses is a task-metric error, never a pass
    doc["metric"]["threshold"] = {"top1_agreement": {"min": 1.5}}
    failed = check_contract(load_contract(write_contract(doc)))
    assert failed.verdict == "fail"
    [finding] = [f for f in failed.findings if f.rule == "task-metric"]
    assert finding.message.startswith("quantized model: task metric: top1_agreement ")


def test_a_nan_output_fails_the_quantization_gates_and_renders(tmp_path: Path, write_contract: WriteContract) -> None:
    """sqrt(x - 2) is NaN on every hold-out row in [0, 1]: no figure is a number, so both gates fail
    with a finding each (a NaN compares false with any limit: it must not pass them), the result
    stays valid (null figures with "nan": true) and the reports say NaN, not "no noise"."""
    nodes = [helper.make_node("Sub", ["x", "two"], ["d"], name="sub"),
             helper.make_node("Sqrt", ["d"], ["y"], name="root")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "model.onnx")
    path = write_contract({"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
                           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32", "range": [0, 1]}],
                           "quantization": {"calibration": {"count": 4}, "holdout": {"count": 2}},
                           "gates": {"min_output_sqnr_db": 10, "min_output_cosine": 0.9}})
    result = check_contract(load_contract(path))
    if result.stages["quantization"]["status"] == "failed":
        pytest.skip(f"the quantizer refused the model here: {result.stages['quantization'].get('reason')}")
    assert result.quantization is not None
    assert result.quantization["outputs"] == [
        {"output": "y", "max_abs_err": None, "cosine": None, "sqnr_db": None, "nan": True}]
    assert [(g.name, g.actual, g.passed) for g in result.gates if g.name.startswith("min_output")] == [
        ("min_output_sqnr_db", None, False), ("min_output_cosine", None, False)]
    found = [(f.rule, f.message.split(";")[0]) for f in result.findings if f.rule == "quantization-error"]
    assert found == [
        ("quantization-error", "output y: SQNR is not a number: the float or the quantized output holds NaN on the "
                               "hold-out samples, below min_output_sqnr_db 10 dB"),
        ("quantization-error", "output y: cosine similarity is not a number: the float or the quantized output holds "
                               "NaN on the hold-out samples, below min_output_cosine 0.9")]
    assert result.verdict == "fail"
    validate_result(result.to_dict())
    assert "| <code>y</code> | NaN           | NaN      | NaN (the output holds NaN) |" in markdown.render(result)
    assert "output y holds NaN (no figure)" in text.render(result)
