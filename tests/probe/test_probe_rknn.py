"""The real RKNN-Toolkit2 in the loop. Run with `pytest -m rknn` (.ci/run does, after setup).

Needs the toolkit's venv: `npu-gate probe setup rknn .venv-rknn` (or NPU_GATE_RKNN_VENV).
Without it every test here SKIPS with the reason; none passes without the compiler.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import probe_models
from tests.helpers.common import REPO, RunCli, SaveModel, WriteContract, probe_venv

pytestmark = pytest.mark.rknn

# absolute: a contract resolves a relative venv from its own folder
VENV = Path(os.environ.get("NPU_GATE_RKNN_VENV", REPO / ".venv-rknn")).absolute()


@pytest.fixture(scope="module")
def venv() -> Path:
    return probe_venv(VENV, "rknn", "RKNN-Toolkit2")


def _probe(run_cli: RunCli, save_model: SaveModel, tmp_path: Path, venv: Path, name: str) -> tuple[int, dict[str, Any]]:
    model = save_model(probe_models.MODELS[name](), f"{name}.onnx")
    out = tmp_path / f"{name}.json"
    run = run_cli("probe", model, "--compiler", "rknn", "--target", "rk3588", "--venv", venv,
                  "--json", out, "--keep-work", tmp_path / "work")
    assert run.code in (0, 1), run.err
    return run.code, json.loads(out.read_text(encoding="utf-8"))


def test_lesson_net_builds_as_one_npu_op_with_the_clip_fused_away(run_cli: RunCli, save_model: SaveModel,
                                                                  tmp_path: Path, venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "seed_hardswish")
    assert code == 0 and doc["status"] == "ok"
    assert doc["compiler"] == {"name": "rknn-toolkit2", "version": "2.5.0", "target": "rk3588", "plugin": "rknn"}
    assert [(s["device"], s["ops"]) for s in doc["segments"]] == [("npu", ["ConvHardSwish"])]
    clip = next(n for n in doc["nodes"] if n["op_type"] == "Clip")
    assert (clip["predicted"], clip["actual"], clip["became"], clip["runs_on"]) == ("cpu", "fused", "ConvHardSwish",
                                                                                     "npu")
    # the toolkit's graph dumps stayed in the probe's own work folder
    assert sorted(p.name for p in (tmp_path / "work" / "attempt-1").glob("check*.onnx"))
    # its memory totals, measured: 25.5KB internal, 2.625KB weights (the plan's [Start End) ends at 0x6600)
    assert doc["memory"]["compiler"] == {"internal_bytes": 26112, "weight_bytes": 2688,
                                         "evidence": "measured: rknn-toolkit2 2.5.0 rk3588"}


def test_cpu_only_op_between_npu_ops_gives_two_npu_segments(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                            venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "erf_between")
    assert code == 0
    assert [(s["device"], s["nodes"]) for s in doc["segments"]] == [
        ("npu", ["conv1"]), ("cpu", ["erf"]), ("npu", ["conv2"])]
    assert doc["summary"]["npu_segments"] == 2


def test_toolkit_crash_is_a_compiler_failed_verdict(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                    venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "resize_cubic")
    assert code == 1
    assert doc["status"] == "crashed"
    assert doc["error"] == "the compiler process was killed by SIGSEGV (stage: build)"
    assert [f["rule"] for f in doc["findings"]] == ["compiler-failed"]


def test_resize_behind_a_conv_the_compiler_inserts(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                   venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "resize_odd_dims")
    assert code == 0 and doc["status"] == "ok"
    resize = doc["nodes"][0]
    assert (resize["actual"], resize["runs_on"], resize["rows"]) == ("npu", "npu", [2])
    assert [(r["op_type"], r["target"], r["full_name"], r["sources"]) for r in doc["ops"] if not r["io"]] == [
        ("Conv", "npu", "", []), ("Resize", "npu", "resize", ["resize"])]
    assert doc["summary"]["compiler_added_ops"] == 1


def test_unnamed_nodes_are_mapped_by_their_output_names(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                        venv: Path) -> None:
    code, doc = _probe(run_cli, save_model, tmp_path, venv, "unnamed_nodes")
    assert code == 0 and doc["status"] == "ok"
    assert [(n["name"], n["actual"], n["became"]) for n in doc["nodes"]] == [
        ("Conv#0", "npu", "ConvRelu"), ("Relu#1", "fused", "ConvRelu"), ("conv_b", "npu", None)]
    assert doc["summary"]["compiler_added_ops"] == 0


def test_contract_decides_on_the_measured_placement(run_cli: RunCli, save_model: SaveModel,
                                                    write_contract: WriteContract, tmp_path: Path, venv: Path) -> None:
    save_model(probe_models.seed_hardswish())
    doc = {"model": {"onnx": "model.onnx"},
           "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}],
           "target": {"profile": "demo", "probe": {"compiler": "rknn", "target": "rk3588", "venv": str(venv.resolve()),
                                                   "decide": "measured"}},
           "gates": {"max_cpu_nodes": 0, "max_npu_partitions": 1}}
    run = run_cli("check", write_contract(doc), "--json", tmp_path / "result.json")
    assert run.code == 0, run.out + run.err
    result = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    assert result["summary"]["evidence"] == "measured: rknn-toolkit2 2.5.0 rk3588"
    assert result["summary"]["measured"] == {"cpu_nodes": 0, "npu_partitions": 1, "cpu_partitions": 0}
    clip = next(f for f in result["findings"] if f["rule"] == "unsupported-op")
    assert clip["severity"] == "info"
    assert clip["message"].endswith("(measured on the NPU as ConvHardSwish: measured: rknn-toolkit2 2.5.0 rk3588)")


# --- the compiler's clean-up and its refusals (profile eliminates / lowers / refuses), re-measured ---

# case -> (nodes, the nodes that disagree). cast2: the Cast back to float runs on the NPU; flat_gemm: the Gemm
# splits into an NPU Conv and a CPU Reshape; shuffle: the compiler merged the Transpose into the Conv too.
# Issue 20's folds (paddle_affine, reshape_transpose): the Reshape to [1,288] is merged with its Transpose and
# moved past the Relu: a CPU Reshape at the output (predicted on CPU, but before the Relu), the Transpose folded
CLEANUP_BUILDS = {"elim1": (8, []), "elim2": (10, []), "cast2": (4, ["c_f"]), "drop9": (3, []),
                  "flat_gemm": (4, ["fc"]), "shuffle": (5, ["swap"]), "dense": (11, []), "mulconv": (6, []),
                  "half": (5, []), "paddle_affine": (14, []), "reshape_transpose": (7, ["row_resh", "row_swap"])}


@pytest.mark.parametrize("name", sorted(CLEANUP_BUILDS))
def test_cleanup_cases_build_and_the_partition_counts_agree(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                            venv: Path, name: str) -> None:
    from tests.helpers.cleanup_models import MODELS

    model = save_model(MODELS[name](), f"{name}.onnx")
    out = tmp_path / f"{name}.json"
    run = run_cli("probe", model, "--compiler", "rknn", "--target", "rk3588", "--venv", venv,
                  "--profile", "rknn-rk3588", "--json", out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert (run.code, doc["status"], doc["summary"]["partitions_agree"]) == (0, "ok", True)
    assert (doc["summary"]["nodes"], [d["node"] for d in doc["summary"]["disagreements"]]) == CLEANUP_BUILDS[name]


REFUSED = {
    "drop9m": "Not support 'Dropout' of opset-9!",
    "dql": "The DynamicQuantizeLinear('dq') will cause the graph to be a dynamic graph!",
    "opset21": "Unsupport onnx opset 21, need <= 19!",
    "if_runtime": "The If('if') will cause the graph to be a dynamic graph!",
    "cubic": "SIGSEGV",
    "attn_qdq": "SIGSEGV",  # after fuse_matmul_softmax_matmul_to_sdpa
    "attn_qdq_i8": "SIGSEGV",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_cases_fail_with_the_wording_the_profile_quotes(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                                venv: Path, name: str) -> None:
    from tests.helpers.cleanup_models import MODELS

    model = save_model(MODELS[name](), f"{name}.onnx")
    out = tmp_path / f"{name}.json"
    run = run_cli("probe", model, "--compiler", "rknn", "--target", "rk3588", "--venv", venv,
                  "--profile", "rknn-rk3588", "--json", out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert run.code == 1 and doc["status"] in ("failed", "crashed")
    assert REFUSED[name] in doc["error"]
    assert doc["summary"]["partitions_agree"] is None


TORCH_VENV = Path(os.environ.get("NPU_GATE_RKNN_TORCH_VENV", REPO / ".venv-rknn-torch")).absolute()


@pytest.fixture(scope="module")
def torch_venv() -> Path:
    """A toolkit venv with real torch (`npu-gate probe setup rknn VENV --torch`): the rules that call
    torch run there as they do for users; with npu_gate's stub they raise and are disabled."""
    venv = probe_venv(TORCH_VENV, "rknn", "RKNN-Toolkit2 (with torch)")
    torch = json.loads((venv / "npu-gate-probe.json").read_text(encoding="utf-8")).get("torch")
    if torch != "real":
        pytest.skip(f"{venv} has torch {torch!r}, not real torch: create it with "
                    f"`npu-gate probe setup rknn {venv} --torch`")
    return venv


def test_basic_pitchs_refusal_depends_on_the_order_of_the_nodes(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                                torch_venv: Path) -> None:
    """basic-pitch's refusal (docs/records/rknn.md): the same 23-node graph fails the default build inside the
    toolkit's remove_concat_slice with the nodes in tf2onnx's order and builds with each stack right after
    its own paths (tests/placement/test_cleanup.py: `remove-concat-slice-node-order` predicts the first)."""
    from tests.helpers.cleanup_models import MODELS

    docs = {}
    for name in ("octaves_export", "octaves_interleaved"):
        model = save_model(MODELS[name](), f"{name}.onnx")
        out = tmp_path / f"{name}.json"
        run_cli("probe", model, "--compiler", "rknn", "--target", "rk3588", "--venv", torch_venv,
                "--profile", "rknn-rk3588", "--json", out)
        docs[name] = json.loads(out.read_text(encoding="utf-8"))
    export, interleaved = docs["octaves_export"], docs["octaves_interleaved"]
    assert export["attempts"][0]["status"] != "ok"
    assert "remove_concat_slice" in json.dumps(export["log"])
    assert [a["status"] for a in interleaved["attempts"]] == ["ok"]


ATTENTION_BUILDS = ["attn_float", "attn_pre", "attn_post", "attn_noin", "attn_noout", "qdq_conv"]


@pytest.mark.parametrize("name", ATTENTION_BUILDS)
def test_an_attention_with_a_qdq_group_left_out_builds(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                       venv: Path, name: str) -> None:
    """quantized-attention-crash's other side: without the QDQ pairs before or after the Softmax, on the
    MatMul inputs or on the output, the toolkit does not fuse the chain into its attention op and builds it;
    a QDQ Conv (no attention) builds too: a QDQ model as such is not refused."""
    from tests.helpers.cleanup_models import MODELS

    model = save_model(MODELS[name](), f"{name}.onnx")
    out = tmp_path / f"{name}.json"
    run = run_cli("probe", model, "--compiler", "rknn", "--target", "rk3588", "--venv", venv,
                  "--profile", "rknn-rk3588", "--json", out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert (run.code, doc["status"], doc["error"]) == (0, "ok", None)
    assert "fuse_matmul_softmax_matmul_to_sdpa" not in json.dumps(doc["log"])


def test_an_identity_batchnorm_of_epsilon_0_1_is_removed_and_changes_the_output(run_cli: RunCli, save_model: SaveModel,
                                                                                tmp_path: Path,
                                                                                venv: Path) -> None:
    """bn_eps: the identity BatchNormalization of epsilon 0.1 after a Relu is removed (the gate predicts it
    and warns eliminated-changes-numerics), the one after a Conv folded into it; the toolkit's simulator
    gives onnxruntime's output times sqrt(1.1) (the removed one's 1/sqrt(1.1) is gone; the folded one is
    exact); with epsilon 1e-5 the same model matches onnxruntime."""
    import subprocess

    from tests.helpers.cleanup_models import bn_eps

    model = save_model(bn_eps(), "bn_eps.onnx")
    out = tmp_path / "bn_eps.json"
    run = run_cli("probe", model, "--compiler", "rknn", "--target", "rk3588", "--venv", venv,
                  "--profile", "rknn-rk3588", "--json", out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert (run.code, doc["status"], doc["summary"]["partitions_agree"]) == (0, "ok", True)
    assert {n["name"]: (n["predicted"], n["actual"]) for n in doc["nodes"] if n["op_type"] == "BatchNormalization"} \
        == {"bn1": ("eliminated", "folded"), "bn2": ("eliminated", "fused"), "bn3": ("eliminated", "folded")}
    ratios = {}
    for epsilon in (0.1, 1e-5):
        path = save_model(bn_eps(epsilon), f"bn_eps_{epsilon:g}.onnx")
        done = subprocess.run([str(venv / "bin" / "python"), str(REPO / "tests" / "helpers" / "rknn_simulate.py"),
                               str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")})
        assert done.returncode == 0, done.stderr[-2000:]
        ratios[epsilon] = json.loads(done.stdout.strip().splitlines()[-1])["ratio"]
    assert ratios[0.1] == pytest.approx(1.1 ** 0.5, rel=1e-3)
    assert ratios[1e-5] == pytest.approx(1.0, abs=1e-3)


# --- int8 (#21): probe --quantize int8 and a contract's quantization through target.probe ---

HARDSWISH = ["/Add", "/Clip", "/Mul", "/Div"]


def _int8_layers(q: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(r["op_type"], r["tensor"], r["entire"], r["single"], r["nodes"]) for r in q["accuracy"]["layers"]]


LESSON_INT8_LAYERS = [  # 32 calibration + 8 hold-out samples drawn with seed 0 from [0, 1]
    ("Input", "images", {"cos": 1.0, "euc": 0.0}, {"cos": 1.0, "euc": 0.0}, []),
    ("exDataConvert", "images_int8", {"cos": 1.0, "euc": 0.03244}, {"cos": 1.0, "euc": 0.03244}, []),
    ("Conv", "/conv/Conv_output_0", {"cos": None, "euc": None}, {"cos": None, "euc": None}, ["/conv/Conv"]),
    ("HardSwish", "out_int8", {"cos": 0.99999, "euc": 0.57497}, {"cos": 0.99999, "euc": 0.57497}, HARDSWISH),
    ("exDataConvert", "out", {"cos": 0.99999, "euc": 0.57497}, {"cos": 0.99999, "euc": 0.35573}, []),
]


def test_lesson_net_in_int8_is_one_npu_convhardswish_with_the_simulators_accuracy(
        run_cli: RunCli, save_model: SaveModel, tmp_path: Path, venv: Path) -> None:
    model = save_model(probe_models.MODELS["seed_hardswish"](), "seed_hardswish.onnx")
    out = tmp_path / "int8.json"
    run = run_cli("probe", model, "--compiler", "rknn", "--venv", venv, "--quantize", "int8",
                  "--profile", "rknn-rk3588", "--json", out)
    assert run.code == 0, run.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [(s["device"], s["ops"]) for s in doc["segments"]] == [("npu", ["ConvHardSwish"])]
    assert {r["data_type"] for r in doc["ops"]} == {"INT8"}
    # int8 halves the float16 build's 25.5KB plan: 8.75KB internal, 2.8125KB weights (int32 bias)
    assert doc["memory"]["compiler"] == {"internal_bytes": 8960, "weight_bytes": 2880,
                                         "evidence": "measured: rknn-toolkit2 2.5.0 rk3588"}
    q = doc["quantization"]
    assert (q["mode"], q["calibration"], q["holdout"]) == (
        "int8", {"samples": 32, "synthetic": True}, {"samples": 8, "synthetic": True})
    assert _int8_layers(q) == LESSON_INT8_LAYERS
    [output] = q["onnxruntime"]["outputs"]
    assert (output["output"], round(output["sqnr_db"], 2), round(output["cosine"], 5)) == ("out", 42.94, 0.99998)
    assert "quantized int8: 32 synthetic calibration samples" in run.out


def test_contract_quantization_builds_int8_with_the_stages_samples(write_contract: WriteContract, tmp_path: Path,
                                                                   venv: Path) -> None:
    from npu_gate.contract.spec import load_contract
    from npu_gate.pipeline import check_contract

    model = tmp_path / "model.onnx"
    model.write_bytes(probe_models.MODELS["seed_hardswish"]().SerializeToString())
    path = write_contract({
        "name": "seed-int8", "model": {"onnx": "model.onnx"},
        "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32", "range": [0, 1]}],
        "target": {"profile": "rknn-rk3588", "probe": {"compiler": "rknn", "target": "rk3588", "venv": str(venv)}},
        "quantization": {"mode": "int8"}})
    result = check_contract(load_contract(path))
    probe = result.stages["probe"]
    assert probe["status"] == "ok"
    assert [(s["device"], s["ops"]) for s in probe["segments"]] == [("npu", ["ConvHardSwish"])]
    # the same seeded rows as the command's: the same figures
    assert _int8_layers(probe["quantization"]) == LESSON_INT8_LAYERS
    assert result.quantization is not None and result.quantization["calibration"] == {"samples": 32,
                                                                                      "synthetic": True}
    from npu_gate.render import markdown, text

    report = markdown.render(result)  # the compiler's layers beside the quantization stage's worst ones
    assert "#### Quantized build (int8)" in report
    assert "| HardSwish     | <code>out&#95;int8</code>                | /Add, /Clip, /Mul, /Div | 0.99999 " in report
    # 4 worst layers: the stage quantizes the folded graph, whose Constants are no layers
    assert "42.9 dB (<code>/Mul</code>) |" in report and "the stage's 4 worst layers" in report
    assert "    quantized int8: 32 synthetic calibration samples" in text.render(result)


def test_int8_from_a_samples_file_says_it_is_not_synthetic(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                           venv: Path) -> None:
    import numpy as np

    model = save_model(probe_models.MODELS["seed_hardswish"](), "seed_hardswish.onnx")
    rows = np.random.default_rng(1).uniform(0, 1, (20, 1, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "samples.npz", images=rows)
    out = tmp_path / "int8.json"
    run = run_cli("probe", model, "--compiler", "rknn", "--venv", venv, "--quantize", "int8",
                  "--calibration", tmp_path / "samples.npz", "--json", out)
    assert run.code == 0, run.err
    q = json.loads(out.read_text(encoding="utf-8"))["quantization"]
    # one file: its first 12 rows calibrate, its last 8 are the hold-out samples
    assert (q["calibration"], q["holdout"], q["accuracy"]["samples"]) == (
        {"samples": 12, "synthetic": False}, {"samples": 8, "synthetic": False}, 8)
    assert [r["op_type"] for r in q["accuracy"]["layers"]] == [
        "Input", "exDataConvert", "Conv", "HardSwish", "exDataConvert"]


def test_a_matmul_head_above_8192_outputs_is_split_as_predicted(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                                venv: Path) -> None:
    """The `splits` entry of rknn-rk3588 (issue 20): an NPU Conv, its Transpose back on the CPU, an NPU
    Reshape; the predicted split agrees with the compiler's and the partition counts with its segments."""
    from npu_gate.calibrate.sweeps import f32, model, node

    head = model([node("Relu", ["x"], ["a"], name="before"), node("MatMul", ["a", "w"], ["t"], name="fc"),
                  node("Relu", ["t"], ["y"], name="after")], {"x": ("float32", [1, 2, 8])}, {"w": f32(8, 8193)})
    out = tmp_path / "head.json"
    run = run_cli("probe", save_model(head, "head.onnx"), "--compiler", "rknn", "--target", "rk3588", "--venv", venv,
                  "--profile", "rknn-rk3588", "--json", out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert (run.code, doc["status"]) == (0, "ok")
    fc = next(n for n in doc["nodes"] if n["name"] == "fc")
    assert (fc["predicted"], fc["actual"], fc["agrees"]) == ("split", "split", True)
    s = doc["summary"]
    assert (s["predicted_npu_partitions"], s["predicted_cpu_partitions"], s["npu_segments"], s["cpu_segments"]) \
        == (2, 1, 2, 1)
    assert s["partitions_agree"] is True


HEADS = {  # case -> (NPU segments, the Reshape the toolkit adds right after the Concat: its device or None)
    "head_split_2100": (3, "cpu"), "head_split_3549": (3, "cpu"), "head_transpose_2100": (3, "cpu"),
    "head_split_336": (1, "npu"), "head_transpose_336": (1, "npu"), "head_sigmoid_2100": (2, None)}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_a_concat_of_flattened_levels_gets_a_reshape_after_it(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                              torch_venv: Path,
                                                              name: str) -> None:
    """The evidence of rknn-toolkit2-v2.1's `concat-of-flattened-levels-reshape-after` split (nudenet's
    YOLOv8 head, docs/rknn.md): with real torch the toolkit moves the flattening Reshapes past the Concat
    and adds one Reshape after it, on the CPU unless the total is a multiple of 8; with a Sigmoid reader it
    goes to the output's adapter. The prediction's NPU partitions equal the compiler's NPU segments."""
    from tests.helpers.cleanup_models import MODELS

    model = save_model(MODELS[name](), f"{name}.onnx")
    out = tmp_path / f"{name}.json"
    run = run_cli("probe", model, "--compiler", "rknn", "--target", "rk3588", "--venv", torch_venv,
                  "--profile", "rknn-rk3588", "--json", out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert (run.code, doc["status"]) == (0, "ok"), run.err
    segments, added = HEADS[name]
    after = [r["target"] for r in doc["ops"] if r["full_name"] == "cat_rs"]
    assert (doc["summary"]["npu_segments"], after[0] if after else None) == (segments, added)
    assert doc["summary"]["partitions_agree"] is True


# A sample of the 162 node-order cases (tests/placement/test_cleanup.py OCTAVES_REFUSED has all 18 refused):
# per order a refused and a built one, and Relu-ended twins of refused ones.
OCTAVE_SAMPLE = ["export_transpose_120", "export_transpose_112", "oldest_transpose_012", "oldest_transpose_210",
                 "interleaved_transpose_222", "export_relu_222", "oldest_relu_222"]


@pytest.mark.parametrize("name", OCTAVE_SAMPLE)
def test_the_node_order_refusal_matches_the_toolkit(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                    torch_venv: Path, name: str) -> None:
    """The default build fails in remove_concat_slice exactly where the profile predicts
    remove-concat-slice-node-order; the probe's retry with that rule disabled builds."""
    from tests.helpers.cleanup_models import octave_cases, stacked_octaves
    from tests.placement.test_cleanup import OCTAVES_REFUSED

    order, through, tail = octave_cases()[name]
    model = save_model(stacked_octaves(order, through, tail), f"{name}.onnx")
    out = tmp_path / f"{name}.json"
    run_cli("probe", model, "--compiler", "rknn", "--target", "rk3588", "--venv", torch_venv,
            "--profile", "rknn-rk3588", "--json", out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    refused = doc["attempts"][0]["status"] != "ok"
    assert refused == (name in OCTAVES_REFUSED)
    if refused:
        assert "IndexError: list index out of range" in str(doc["attempts"][0]["error"])
        assert "remove_concat_slice" in json.dumps(doc["log"])
        assert doc["attempts"][-1]["status"] == "ok"
