"""Hostile or malformed ONNX input: a finding or a one-line error (exit 2), never an internal error."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.helpers import model_zoo
from tests.helpers.common import RunCli, SaveModel, WriteContract, validate_result


def _add_constant(constant: TensorProto) -> onnx.ModelProto:
    """y = x + c, ``c`` a small initializer: the kind a profile's fusion patterns read."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", constant.name], ["y"], name="add0")],
        "add_constant",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        initializer=[constant],
    )
    return model_zoo._model(graph)


def test_unreadable_small_initializer_is_a_checker_finding(run_cli: RunCli, save_model: SaveModel,
                                                           tmp_path: Path) -> None:
    """raw_data shorter than the dims need: numpy cannot read it, the pattern matcher skips it."""
    short = TensorProto(name="c", data_type=TensorProto.FLOAT, dims=[1, 4], raw_data=b"\0\0\0")
    path = save_model(_add_constant(short))
    run = run_cli("inspect", path, "--profile", "rknn-rk3588", "--json", tmp_path / "r.json", "-q")
    assert (run.code, run.err) == (1, "")
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    checker = [f["message"] for f in doc["findings"] if f["rule"] == "onnx-checker"]
    assert checker == ["TensorProto (tensor name: c) raw_data size (3 bytes) is too small for the declared "
                       "shape and type (16 bytes required)."]


def test_string_constant_that_is_not_utf8_is_skipped(run_cli: RunCli, save_model: SaveModel) -> None:
    """numpy_helper cannot decode a STRING tensor holding invalid UTF-8: the matcher skips it."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["y"], name="id0")],
        "string_constant",
        [],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
        # onnx annotates vals as numbers, bytes or an array: a STRING tensor's list of bytes is not in it
        initializer=[helper.make_tensor("s", TensorProto.STRING, [2], [b"ok", b"\xff\xfe"])],  # type: ignore[list-item]
    )
    run = run_cli("inspect", save_model(model_zoo._model(graph)), "--profile", "rknn-rk3588")
    assert (run.code, run.err) == (0, "")
    assert "1 node: 0 npu, 0 cpu, 1 folded" in run.out


def test_onnxruntime_log_never_prints_model_text(capfd: pytest.CaptureFixture[str], write_contract: WriteContract,
                                                 tmp_path: Path) -> None:
    """onnxruntime logs a failing node's name raw to stderr (the C++ side, not sys.stderr):
    a name holding terminal escape sequences would reach the user's terminal. Its log is off;
    the failure is reported by the stage that ran it."""
    from npu_gate.cli import main

    name = "tile\x1b]0;title\x07\x1b[2J"
    graph = helper.make_graph(
        [helper.make_node("Tile", ["x", "repeats"], ["y"], name=name)],
        "tile_too_big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[model_zoo._init("repeats", np.array([2**30, 2**30], np.int64))],
    )
    (tmp_path / "model.onnx").write_bytes(model_zoo._model(graph).SerializeToString())
    contract = write_contract({"model": {"onnx": "model.onnx"},
                               "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
                               "target": {"profile": "demo"}})
    code = main(["check", str(contract), "--no-cache", "--cache-dir", str(tmp_path / "cache"),
                 "--json", str(tmp_path / "r.json"), "-q"])
    assert code == 1
    assert capfd.readouterr().err == ""
    stage = json.loads((tmp_path / "r.json").read_text())["stages"]["suggestions"]
    assert stage["status"] == "failed"
    assert "while running Tile node" in stage["reason"]


def test_contract_input_too_big_to_sample_is_a_contract_error(run_cli: RunCli, save_model: SaveModel,
                                                              write_contract: WriteContract) -> None:
    """Dims near 2**62 (copied from a model's declared shapes): numpy cannot draw the samples."""
    save_model(model_zoo.conv_relu())
    doc = {"model": {"onnx": "model.onnx"},
           "inputs": [{"name": "x", "shape": [2**62, 2**62, 4], "dtype": "float32"}],
           "target": {"profile": "demo"}}
    contract = write_contract(doc)
    run = run_cli("check", contract, "--no-cache")
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: {contract}: inputs[0].shape: one sample is "
                       f"{2**128:,} bytes, more than the 2,147,483,648 npu-gate draws per input "
                       "(numerics.samples 0 draws none)\n")
    doc["numerics"] = {"samples": 0}
    run = run_cli("validate", write_contract(doc))
    assert (run.code, run.err) == (0, "")


def _external_entry(path: Path, key: str, value: str) -> None:
    model = onnx.load_model(str(path), load_external_data=False)
    tensor = model.graph.initializer[0]
    entries = {e.key: e for e in tensor.external_data}
    if key not in entries:
        entries[key] = tensor.external_data.add(key=key)
    entries[key].value = value
    path.write_bytes(model.SerializeToString())


def test_external_data_that_does_not_fit_its_file_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    """Weights are not read for analysis, so a truncated data file or a bad offset/length used to
    pass unnoticed (exit 0); they are checked against the file's size without reading it."""
    path = model_zoo.external_data(tmp_path)  # w: float32 [64, 64] = 16384 bytes
    data = tmp_path / "model.onnx.data"
    data.write_bytes(data.read_bytes()[:1000])
    run = run_cli("inspect", path, "-q")
    assert (run.code, run.err) == (2, f"npu-gate: error: {path}: tensor 'w': external data file "
                                      "'model.onnx.data' is 1000 bytes, the tensor needs bytes 0 to 16384\n")
    data.write_bytes(bytes(16384))
    for key, value, problem in (("length", "8", "length 8 bytes, but dims [64, 64] need 16384 bytes"),
                                ("length", "-1", "length -1 is negative"),
                                ("offset", "0x10", "offset '0x10' is not an integer")):
        model_zoo.external_data(tmp_path)
        _external_entry(path, key, value)
        run = run_cli("inspect", path, "-q")
        assert (run.code, run.err) == (2, f"npu-gate: error: {path}: tensor 'w': external data {problem}\n")
    model_zoo.external_data(tmp_path)
    assert run_cli("inspect", path, "-q").code == 1


def test_dims_near_2_to_the_63_print_no_warning(run_cli: RunCli, save_model: SaveModel,
                                                recwarn: pytest.WarningsRecorder) -> None:
    """A Reshape to [2**62, 2**62]: onnxruntime's symbolic inference overflows a numpy product,
    whose RuntimeWarning used to reach the terminal; the checker finding names the overflow."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape0")],
        "reshape_huge",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[model_zoo._init("shape", np.array([2**62, 2**62], np.int64))],
    )
    run = run_cli("inspect", save_model(model_zoo._model(graph)), "-q")
    assert (run.code, run.err) == (1, "")
    assert [str(w.message) for w in recwarn] == []


def test_a_loop_that_never_ends_stops_the_run_not_the_gate(run_cli: RunCli, write_contract: WriteContract,
                                                           tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Loop with trip count 2**62 and a condition that stays true: onnxruntime would run it for
    ever in the suggestions stage; the run is stopped and the stage says so."""
    from npu_gate.model import numerics

    monkeypatch.setattr(numerics, "RUN_SECONDS", 0.5)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Relu", ["v_in"], ["v_out"], name="step")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1, 4])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["y"], name="loop0", body=body)],
        "endless_loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        initializer=[model_zoo._init("trips", np.array(2**62, np.int64))],
    )
    (tmp_path / "model.onnx").write_bytes(model_zoo._model(graph).SerializeToString())
    contract = write_contract({"model": {"onnx": "model.onnx"},
                               "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
                               "target": {"profile": "demo"}})
    run = run_cli("check", contract, "--no-cache", "--cache-dir", tmp_path / "cache",
                  "--json", tmp_path / "r.json", "-q")
    assert (run.code, run.err) == (1, "")
    stages = json.loads((tmp_path / "r.json").read_text())["stages"]
    assert stages["suggestions"] == {"status": "failed", "reason": "onnxruntime: TimeoutError: run stopped after 0.5 s"}


def _identity(dtype: int, shape: list[int]) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="id0")],
        "identity",
        [helper.make_tensor_value_info("x", dtype, shape)],
        [helper.make_tensor_value_info("y", dtype, shape)],
    )
    return model_zoo._model(graph, opset=21, ir_version=10)


def test_reduce_inputs_numpy_cannot_hold(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    """{inputs} for a float8 input: float32 values, as for bfloat16; for dims near 2**62: a
    one-line error, not numpy's 'array is too big'."""
    check = shlex.join([sys.executable, "-c", "import sys; sys.exit(1)", "{model}", "{inputs}"])
    run = run_cli("reduce", save_model(_identity(TensorProto.FLOAT8E4M3FN, [1, 4])), "--check", check,
                  "--out", tmp_path / "r.onnx", "-q")
    assert (run.code, run.err) == (0, "")
    run = run_cli("reduce", save_model(_identity(TensorProto.FLOAT, [2**62, 4]), "huge.onnx"), "--check", check,
                  "--out", tmp_path / "r2.onnx", "-q")
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: --check {{inputs}}: tensor 'x': one sample of shape [{2**62}, 4] is "
                       f"{2**66:,} bytes, more than the 2,147,483,648 generated per tensor; pass --inputs\n")


def test_a_model_path_that_is_not_a_regular_file_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    """/dev/zero would be read until memory runs out, a FIFO until a writer comes."""
    import os

    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    for path in (tmp_path, fifo, Path("/dev/zero")):
        run = run_cli("inspect", path, "-q")
        assert (run.code, run.err) == (2, f"npu-gate: error: {path}: not a regular file\n")


def test_a_contract_path_that_is_not_a_regular_file_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    """`check /dev/zero` (or a FIFO named like a contract) hung reading it."""
    import os

    fifo = tmp_path / "npu-gate.json"
    os.mkfifo(fifo)
    for command in ("check", "validate"):
        for path in (fifo, Path("/dev/zero")):
            run = run_cli(command, path)
            assert (run.code, run.err) == (2, f"npu-gate: error: {path}: not a regular file\n")
    (tmp_path / "model.onnx").write_bytes(model_zoo.conv_relu().SerializeToString())
    contract = tmp_path / "c.json"
    contract.write_text(json.dumps({"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
                                    "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}]}))
    for args in (("merge", fifo), ("check", contract, "--baseline", "/dev/zero")):
        run = run_cli(*args)
        assert (run.code, run.err) == (2, f"npu-gate: error: {args[-1]}: not a regular file\n")


def test_error_lines_show_quoted_text_on_one_line(run_cli: RunCli, tmp_path: Path) -> None:
    # An error that quotes file text (here the result names of a merged document) must not
    # start a new line: on a runner, a line starting with "::" is a workflow command.
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps({"kind": "npu-gate-merged",
                                  "results": [{"name": "x\n::error::pwned\x1b]0;t\x07"}]}))
    run = run_cli("diff", merged, merged)
    assert run.code == 2
    assert run.err.count("\n") == 1
    assert "x\\n::error::pwned\\x1b]0;t\\x07" in run.err
