"""npu-gate reduce: bisection and chunk removal driven by an external failing command."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto

from npu_gate.evidence.bundle import write_npz
from npu_gate.evidence.reduce import Reducer
from tests.helpers import model_zoo

# Fails (exit 1) when every op type named on the command line is in the model. It reads
# the protobuf bytes (NodeProto.op_type is field 4: tag 0x22, length, name) so that each
# step costs a bare Python start, not an `import onnx`.
HAS_OPS = """
import sys
data = open(sys.argv[1], "rb").read()
ops = [o.encode() for o in sys.argv[2:] if not o.endswith(".npz")]
sys.exit(1 if all(b"\\x22" + bytes([len(o)]) + o in data for o in ops) else 0)
"""


def _check(tmp_path: Path, *ops: str, extra: str = "") -> str:
    script = tmp_path / "has_ops.py"
    script.write_text(HAS_OPS, encoding="utf-8")
    return shlex.join([sys.executable, str(script), "{model}", *ops]) + extra


def _save(tmp_path: Path, model: onnx.ModelProto, name: str = "model.onnx") -> Path:
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return path


def test_reduce_to_the_one_clip(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    model = _save(tmp_path, model_zoo.many_nodes(60))
    out = tmp_path / "reduced.onnx"
    run = run_cli("reduce", model, "--check", _check(tmp_path, "Clip"), "--out", out)
    assert run.code == 0
    assert f"60 -> 1 nodes in 9 steps: {out}" in run.out
    reduced = onnx.load(str(out))
    assert [(n.name, n.op_type) for n in reduced.graph.node] == [("clip_9", "Clip")]
    # its producer cut into a graph input with the inferred shape; its constants kept
    (x,) = reduced.graph.input
    assert (x.name, x.type.tensor_type.elem_type) == ("t8", TensorProto.FLOAT)
    assert [d.dim_value for d in x.type.tensor_type.shape.dim] == [1, 8, 16, 16]
    assert sorted(t.name for t in reduced.graph.initializer) == ["clip_max", "clip_min"]
    onnx.checker.check_model(reduced, full_check=True)

    log = json.loads((tmp_path / "reduced.onnx.json").read_text(encoding="utf-8"))
    assert log["kept"] == ["clip_9"]
    assert (log["original_nodes"], log["reduced_nodes"]) == (60, 1)
    steps = [(s["phase"], s["nodes"], s["exit_code"], s["failing"]) for s in log["steps"]]
    assert steps == [
        ("original", 60, 1, True),
        ("bisect", 30, 1, True),  # nodes 0-29
        ("bisect", 15, 1, True),  # 0-14
        ("bisect", 7, 0, False),  # 0-6: no Clip
        ("bisect", 8, 1, True),  # 7-14
        ("bisect", 4, 1, True),  # 7-10
        ("bisect", 2, 0, False),  # 7-8
        ("bisect", 2, 1, True),  # 9-10
        ("bisect", 1, 1, True),  # clip_9
    ]


def test_reduce_keeps_two_distant_nodes(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    """Fails only with a Mul and a Clip: bisection stops, chunk removal finds the pair."""
    model = _save(tmp_path, model_zoo.many_nodes(60))
    out = tmp_path / "pair.onnx"
    run = run_cli("reduce", model, "--check", _check(tmp_path, "Clip", "Mul"), "--out", out, "-q")
    assert run.code == 0
    assert [n.name for n in onnx.load(str(out)).graph.node] == ["mul_5", "clip_9"]
    log = json.loads((tmp_path / "pair.onnx.json").read_text(encoding="utf-8"))
    assert {s["phase"] for s in log["steps"]} == {"original", "bisect", "remove"}
    # 1-minimal: the last two steps tried each single node alone and both passed
    assert [(s["nodes"], s["failing"]) for s in log["steps"][-2:]] == [(1, False), (1, False)]


def test_reduce_maps_samples_by_name(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    """With --inputs, a cut tensor holds what the original computes for the same sample."""
    original = model_zoo.many_nodes(20)
    model = _save(tmp_path, original)
    x = np.random.default_rng(3).standard_normal((3, 1, 8, 16, 16)).astype(np.float32)
    write_npz(tmp_path / "inputs.npz", {"x": x})
    out = tmp_path / "r.onnx"
    check = _check(tmp_path, "Clip", extra=" {inputs}")
    run = run_cli(
        "reduce", model, "--check", check, "--inputs", tmp_path / "inputs.npz", "--out", out, "-q"
    )
    assert run.code == 0
    with np.load(tmp_path / "r.npz") as npz:
        assert list(npz) == ["t8"]
        t8 = npz["t8"]
    assert t8.shape == (3, 1, 8, 16, 16)
    # the reduced Clip on sample k equals the original's clip_9 output on sample k
    inferred = onnx.shape_inference.infer_shapes(original)
    prefix = onnx.utils.Extractor(inferred).extract_model(["x"], ["t9"])
    full = ort.InferenceSession(prefix.SerializeToString(), providers=["CPUExecutionProvider"])
    small = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for k in range(3):
        want = full.run(None, {"x": x[k]})[0]
        got = small.run(None, {"t8": t8[k]})[0]
        np.testing.assert_array_equal(got, want)
    log = json.loads((tmp_path / "r.onnx.json").read_text(encoding="utf-8"))
    assert log["samples"] == "inputs.npz; cut tensors computed with onnxruntime"


def clip_with_constant_bounds() -> onnx.ModelProto:
    """Relu → Clip(min: Constant, max: Constant + initializer, folded) → Sigmoid → Mul(Constant)."""
    f32 = TensorProto.FLOAT
    scalar = onnx.helper.make_tensor
    nodes = [
        onnx.helper.make_node("Relu", ["x"], ["r"], name="relu0"),
        onnx.helper.make_node("Constant", [], ["lo"], name="const_lo", value=scalar("v", f32, [], [0.5])),
        onnx.helper.make_node("Constant", [], ["five"], name="const_five", value=scalar("v", f32, [], [5.0])),
        onnx.helper.make_node("Add", ["five", "one"], ["hi"], name="add_hi"),  # folds to 6
        onnx.helper.make_node("Clip", ["r", "lo", "hi"], ["c"], name="clip0"),
        onnx.helper.make_node("Sigmoid", ["c"], ["s"], name="sigmoid0"),
        onnx.helper.make_node("Constant", [], ["two"], name="const_two", value=scalar("v", f32, [], [2.0])),
        onnx.helper.make_node("Mul", ["s", "two"], ["y"], name="mul0"),
    ]
    graph = onnx.helper.make_graph(
        nodes, "clip_bounds", [onnx.helper.make_tensor_value_info("x", f32, [1, 4, 8, 8])],
        [onnx.helper.make_tensor_value_info("y", f32, [1, 4, 8, 8])],
        initializer=[onnx.numpy_helper.from_array(np.array(1.0, np.float32), "one")])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_reduce_keeps_constants_with_their_reader(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    """Clip's bounds stay constants: dropping their Constant nodes would make them graph inputs
    filled with random values, a Clip with runtime bounds."""
    model = _save(tmp_path, clip_with_constant_bounds())
    out = tmp_path / "r.onnx"
    run = run_cli("reduce", model, "--check", _check(tmp_path, "Clip", extra=" {inputs}"), "--out", out, "-q")
    assert run.code == 0
    reduced = onnx.load(str(out))
    assert [n.name for n in reduced.graph.node] == ["const_lo", "const_five", "add_hi", "clip0"]
    assert [v.name for v in reduced.graph.input] == ["r"]
    assert [t.name for t in reduced.graph.initializer] == ["one"]
    onnx.checker.check_model(reduced, full_check=True)
    with np.load(tmp_path / "r.npz") as npz:
        assert list(npz) == ["r"]
    x = np.linspace(-1.0, 8.0, 256, dtype=np.float32).reshape(1, 4, 8, 8)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"r": x})[0], np.clip(x, 0.5, 6.0))
    log = json.loads((tmp_path / "r.onnx.json").read_text(encoding="utf-8"))
    assert log["kept"] == ["const_lo", "const_five", "add_hi", "clip0"]
    # units: relu0 | clip0 with its 3 constants | sigmoid0 | mul0 with const_two
    assert [(s["phase"], s["nodes"], s["failing"]) for s in log["steps"]] == [
        ("original", 8, True),
        ("bisect", 5, True),  # relu0, clip0's unit
        ("bisect", 1, False),  # relu0
        ("bisect", 4, True),  # clip0's unit
    ]


def test_constant_without_a_computing_reader_is_a_unit_of_its_own(tmp_path: Path) -> None:
    model = clip_with_constant_bounds()
    nodes = model.graph.node
    nodes.append(onnx.helper.make_node("Constant", [], ["k"], name="const_k", value_float=1.0))
    nodes.append(onnx.helper.make_node("Neg", ["k"], ["k2"], name="neg_k"))  # folds
    model.graph.output.append(onnx.helper.make_tensor_value_info("k2", TensorProto.FLOAT, []))
    reducer = Reducer(_save(tmp_path, model), _check(tmp_path, "Clip"))
    names = [n.name for n in nodes]
    assert [[names[i] for i in unit] for unit in reducer.units] == [
        ["relu0"], ["const_lo", "const_five", "add_hi", "clip0"], ["sigmoid0"], ["const_two", "mul0"],
        ["const_k", "neg_k"],
    ]


def test_generated_samples_are_stable_per_tensor(tmp_path: Path) -> None:
    model = _save(tmp_path, model_zoo.many_nodes(12))
    reducer = Reducer(model, _check(tmp_path, "Clip", extra=" {inputs}"), samples=2)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    reducer.write_inputs(reducer.candidate((3, 4)), a)  # relu_3 reads t2, add_4 also x
    reducer.write_inputs(reducer.candidate((3,)), b)  # reads t2
    with np.load(a) as first, np.load(b) as second:
        assert sorted(first) == ["t2", "x"]
        assert list(second) == ["t2"]
        assert first["t2"].shape == (2, 1, 8, 16, 16)
        np.testing.assert_array_equal(first["t2"], second["t2"])
        assert not np.array_equal(first["t2"][0], first["t2"][1])  # samples differ


def test_reduce_writes_into_the_current_folder_by_default(
    tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: Any
) -> None:
    evidence, cwd = tmp_path / "evidence", tmp_path / "cwd"
    evidence.mkdir()
    cwd.mkdir()
    model = _save(evidence, model_zoo.diamond())
    monkeypatch.chdir(cwd)
    run = run_cli("reduce", model, "--check", _check(tmp_path, "Clip", extra=" {inputs}"), "-q")
    assert run.code == 0
    assert sorted(p.name for p in cwd.iterdir()) == ["model-reduced.npz", "model-reduced.onnx",
                                                     "model-reduced.onnx.json"]
    assert sorted(p.name for p in evidence.iterdir()) == ["model.onnx"]


def test_reduce_refuses_a_passing_original(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    model = _save(tmp_path, model_zoo.conv_relu())
    run = run_cli("reduce", model, "--check", _check(tmp_path, "Clip"), "-q")
    assert run.code == 2
    assert run.err == (
        "npu-gate: error: --check does not fail on the original model (exited 0); "
        "nothing to reduce\n"
    )


def test_reduce_timeout_counts_as_not_failing(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    model = _save(tmp_path, model_zoo.conv_relu())
    check = shlex.join([sys.executable, "-c", "import time; time.sleep(5)", "{model}"])
    run = run_cli("reduce", model, "--check", check, "--timeout", "0.3", "-q")
    assert run.code == 2
    assert "(timed out)" in run.err


def test_reduce_needs_model_placeholder(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    model = _save(tmp_path, model_zoo.conv_relu())
    run = run_cli("reduce", model, "--check", "false", "-q")
    assert run.code == 2
    assert run.err == "npu-gate: error: --check: the command must contain {model}\n"


def test_reduce_inputs_must_cover_the_model(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    model = _save(tmp_path, model_zoo.conv_relu())
    write_npz(tmp_path / "in.npz", {"other": np.zeros((1, 2), dtype=np.float32)})
    check = _check(tmp_path, "Relu", extra=" {inputs}")
    run = run_cli("reduce", model, "--check", check, "--inputs", tmp_path / "in.npz", "-q")
    assert run.code == 2
    assert run.err == f"npu-gate: error: {tmp_path / 'in.npz'}: no samples for model input(s) x\n"


CRASH_ON_CLIP = """
import os, signal, sys
if b"\\x22\\x04Clip" in open(sys.argv[1], "rb").read():
    print("Check failed: Clip", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_reduce_crash_counts_and_match_filters(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    model = _save(tmp_path, model_zoo.diamond())
    script = tmp_path / "crash.py"
    script.write_text(CRASH_ON_CLIP, encoding="utf-8")
    check = shlex.join([sys.executable, str(script), "{model}"])
    out = tmp_path / "r.onnx"
    run = run_cli("reduce", model, "--check", check, "--match", "Check failed", "--out", out, "-q")
    assert run.code == 0
    assert [n.name for n in onnx.load(str(out)).graph.node] == ["B_min", "B_max", "B"]  # Clip and its bounds
    log = json.loads((tmp_path / "r.onnx.json").read_text(encoding="utf-8"))
    assert log["steps"][0]["exit_code"] == -9  # killed by a signal: a crash is a failure
    run = run_cli("reduce", model, "--check", check, "--match", "other text", "-q")
    assert run.code == 2
    assert "(exited -9 without printing the --match text)" in run.err
