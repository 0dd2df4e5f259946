"""Bad input exits 2 with one line per problem naming file and JSON path, no traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import model_zoo
from tests.helpers.common import RunCli, SaveModel, WriteContract


def _base(onnx_file: str = "model.onnx") -> dict[str, Any]:
    return {
        "model": {"onnx": onnx_file},
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        "target": {"profile": "demo"},
    }


@pytest.fixture
def contract_dir(tmp_path: Path, save_model: SaveModel) -> Path:
    save_model(model_zoo.conv_relu())
    return tmp_path


def test_negative_dim_names_json_path(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    doc = _base()
    doc["inputs"][0]["shape"][2] = -3
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert "inputs[0].shape[2]: -3 is less than the minimum of 1" in run.err
    assert "Traceback" not in run.err


def test_every_schema_error_is_reported(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    doc = _base()
    del doc["target"]
    doc["inputs"][0]["dtype"] = "float64"
    doc["gates"] = {"max_cpu_nodes": -1, "colour": "red"}
    path = write_contract(doc)
    run = run_cli("check", path)
    assert run.code == 2
    lines = run.err.strip().splitlines()
    assert f"npu-gate: error: {path}: (root): 'target' is a required property" in lines
    assert any("inputs[0].dtype: 'float64' is not one of" in line for line in lines)
    assert any("gates.max_cpu_nodes: -1 is less than the minimum of 0" in line for line in lines)
    assert f"npu-gate: error: {path}: gates: Additional properties are not allowed ('colour' was unexpected)" in lines
    assert len(lines) == 4


def test_misspelt_keys_suggest_the_nearest_valid_ones(contract_dir: Path, write_contract: WriteContract,
                                                      run_cli: RunCli) -> None:
    doc = _base()
    doc["gatse"] = doc.pop("gates", {"max_cpu_nodes": 0})
    doc["waivres"] = []
    doc["inputs"][0]["layuot"] = "NCHW"
    path = write_contract(doc)
    run = run_cli("check", path)
    assert run.code == 2
    assert run.err.splitlines() == [
        f"npu-gate: error: {path}: (root): Additional properties are not allowed ('gatse', 'waivres' were "
        "unexpected); 'gatse': did you mean 'gates'?; 'waivres': did you mean 'waivers'?",
        f"npu-gate: error: {path}: inputs[0]: Additional properties are not allowed ('layuot' was unexpected); "
        "did you mean 'layout'?",
    ]


def test_unknown_profile_is_a_contract_error(contract_dir: Path, write_contract: WriteContract,
                                             run_cli: RunCli) -> None:
    doc = _base()
    doc["target"]["profile"] = "hisilicon-magic"
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert "target.profile: unknown profile 'hisilicon-magic' (built-in: ascend-atc, demo" in run.err
    doc["target"]["profile"] = "rknn-rk358"
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert ("target.profile: unknown profile 'rknn-rk358'; did you mean 'rknn-rk3588' or 'rknn-rk3588-fused'? "
            "(built-in: ascend-atc, demo") in run.err
    doc["target"]["profile"] = "rknn"  # too short to be close: the names it begins
    run = run_cli("check", write_contract(doc))
    assert ("target.profile: unknown profile 'rknn'; did you mean 'rknn-rk3588' or 'rknn-rk3588-fused' or "
            "'rknn-toolkit2-v2.1'? (built-in: ascend-atc, demo") in run.err


def test_missing_model_file(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    run = run_cli("check", write_contract(_base("nope.onnx")))
    assert run.code == 2
    assert "model.onnx: file 'nope.onnx' not found" in run.err


def test_file_that_is_not_onnx(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    (contract_dir / "junk.onnx").write_bytes(b"\xff\xfe this is not protobuf \x00\x01" * 10)
    run = run_cli("check", write_contract(_base("junk.onnx")))
    assert run.code == 2
    assert "junk.onnx: not an ONNX model" in run.err


def test_invalid_json_names_line_and_column(tmp_path: Path, run_cli: RunCli) -> None:
    path = tmp_path / "npu-gate.json"
    path.write_text('{"model": {"onnx": "m.onnx"},\n  "inputs": [,]}', encoding="utf-8")
    run = run_cli("check", path)
    assert run.code == 2
    assert f"{path}:2:14: invalid JSON" in run.err


def test_unknown_waiver_rule_and_bad_date(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    doc = _base()
    doc["waivers"] = [
        {"rule": "unsupported-opp", "reason": "typo"},
        {"rule": "unsupported-op", "reason": "x", "expires": "2026-02-30"},
    ]
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert "waivers[0].rule: unknown rule 'unsupported-opp'" in run.err
    assert "waivers[1].expires: '2026-02-30' is not a date" in run.err


def test_waiver_date_that_is_not_a_date_is_named_in_words(contract_dir: Path, write_contract: WriteContract,
                                                          run_cli: RunCli) -> None:
    doc = _base()
    doc["waivers"] = [{"rule": "unsupported-op", "reason": "y", "expires": "next week"}]
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert run.err.endswith("waivers[0].expires: 'next week': expected a date, YYYY-MM-DD (e.g. 2027-03-01)\n")


def test_a_huge_value_in_a_contract_is_quoted_shortened(contract_dir: Path, write_contract: WriteContract,
                                                        run_cli: RunCli) -> None:
    doc = _base()
    doc["inputs"][0]["dtype"] = "f" * 1_000_000
    path = write_contract(doc)
    run = run_cli("validate", path)
    [line] = run.err.splitlines()
    assert (run.code, line[:len(f"npu-gate: error: {path}: inputs[0].dtype: 'fff")]) == (
        2, f"npu-gate: error: {path}: inputs[0].dtype: 'fff")
    assert len(line) == len("npu-gate: error: ") + 500 and line.endswith("f…")


def test_semantic_input_errors(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    doc = _base()
    doc["inputs"].append({"name": "x", "shape": [1], "dtype": "int64", "range": [5, 1],
                          "layout": "NCHW"})
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert "inputs[1].name: duplicate input 'x'" in run.err
    assert "inputs[1].range: low 5 is above high 1" in run.err
    assert "inputs[1].layout: 'NCHW' has 4 letters but the shape has rank 1" in run.err


def test_a_layout_letter_twice_is_refused(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    doc = _base()
    doc["inputs"][0]["layout"] = "NCHH"  # layout constraints look dims up by letter
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert "inputs[0].layout: 'NCHH' names H more than once: each letter is one dimension" in run.err


def test_range_the_dtype_cannot_hold(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    """Samples are drawn from the range: values the dtype cannot hold would wrap around
    (uint8 300 is 44) or become infinite (float16), and an integer range without a whole
    number has nothing to draw (it was an internal error)."""
    doc = _base()
    doc["inputs"] += [
        {"name": "u", "shape": [1], "dtype": "uint8", "range": [-5, 300]},
        {"name": "h", "shape": [1], "dtype": "float16", "range": [0, 100000]},
        {"name": "i", "shape": [1], "dtype": "int64", "range": [0.5, 0.7]},
        {"name": "b", "shape": [1], "dtype": "bool", "range": [5, 9]},
        {"name": "ok8", "shape": [1], "dtype": "int8", "range": [-128, 127]},
        {"name": "okb", "shape": [1], "dtype": "bool", "range": [1, 1]},
    ]
    path = write_contract(doc)
    run = run_cli("check", path)
    assert run.code == 2
    assert run.err.splitlines() == [
        f"npu-gate: error: {path}: inputs[1].range: [-5, 300] is outside what uint8 holds, [0, 255]",
        f"npu-gate: error: {path}: inputs[2].range: [0, 100000] is outside what float16 holds, [-65504, 65504]",
        f"npu-gate: error: {path}: inputs[3].range: [0.5, 0.7] holds no whole number, so no int64 value to sample",
        f"npu-gate: error: {path}: inputs[4].range: [5, 9] is outside what bool holds, [0, 1]",
    ]


def test_no_contract_in_folder(tmp_path: Path, run_cli: RunCli) -> None:
    run = run_cli("check", tmp_path)
    assert run.code == 2
    assert "no npu-gate.json" in run.err


def test_contract_found_in_current_folder(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    write_contract(_base())
    monkeypatch.chdir(contract_dir)
    run = run_cli("check", "-q")
    assert run.code == 1  # Relu is not in the demo profile
    assert run.err == ""


def test_contract_file_is_not_modified(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    path = write_contract(_base())
    before = path.read_bytes()
    model_before = (contract_dir / "model.onnx").read_bytes()
    run_cli("check", path, "-q")
    assert path.read_bytes() == before
    assert (contract_dir / "model.onnx").read_bytes() == model_before


@pytest.mark.torch
@pytest.mark.parametrize("no_cache", [[], ["--no-cache"]])
def test_factory_that_cannot_be_imported(tmp_path: Path, write_contract: WriteContract, run_cli: RunCli,
                                         no_cache: list[str]) -> None:
    """The one error, without a `not cached` note about a result that never came."""
    doc = _base()
    doc["model"] = {"torch": {"factory": "missing_module:build"}}
    path = write_contract(doc)
    run = run_cli("check", path, *no_cache)
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: {path}: model.torch.factory: cannot import 'missing_module': "
                       "No module named 'missing_module' (searched the contract folder, the repository root "
                       "and model.torch.path: ., then the installed packages; add the folder that holds it to "
                       "model.torch.path, relative to the contract)\n")


@pytest.mark.parametrize(("key", "value", "example"), [
    ("factory", "net", "seed_net:build_model"), ("factory", "a.b:c.d", "seed_net:build_model"),
    ("callable", "metrics.agreement", "metrics:agreement"),
])
def test_module_callable_pattern_is_said_in_words(contract_dir: Path, write_contract: WriteContract, run_cli: RunCli,
                                                  key: str, value: str, example: str) -> None:
    doc = _base()
    if key == "factory":
        doc["model"] = {"torch": {"factory": value}}
        where = "model.torch.factory"
    else:
        doc["metric"] = {"callable": value}
        where = "metric.callable"
    path = write_contract(doc)
    run = run_cli("check", path)
    assert (run.code, run.err) == (2, f"npu-gate: error: {path}: {where}: {value!r}: expected module:callable, "
                                      f"e.g. {example}\n")


@pytest.mark.torch
@pytest.mark.slow
def test_factory_that_returns_no_module(tmp_path: Path, write_contract: WriteContract, run_cli: RunCli) -> None:
    (tmp_path / "bad_factory.py").write_text("def build():\n    return 42\n", encoding="utf-8")
    doc = _base()
    doc["model"] = {"torch": {"factory": "bad_factory:build"}}
    run = run_cli("check", write_contract(doc))
    assert run.code == 2
    assert "bad_factory:build() returned int, not a torch.nn.Module" in run.err


def test_yaml_contract(contract_dir: Path, run_cli: RunCli) -> None:
    pytest.importorskip("yaml")
    path = contract_dir / "npu-gate.yaml"
    path.write_text(
        "model: {onnx: model.onnx}\n"
        "inputs: [{name: x, shape: [1, 3, 8, 8], dtype: float32}]\n"
        "target: {profile: demo}\n",
        encoding="utf-8",
    )
    run = run_cli("check", contract_dir, "--json", contract_dir / "r.json", "-q")
    assert run.code == 1
    assert json.loads((contract_dir / "r.json").read_text())["name"] == contract_dir.name


def test_several_contracts_with_one_json_output_is_refused(contract_dir: Path, write_contract: WriteContract,
                                                           run_cli: RunCli) -> None:
    a = write_contract(_base(), "a.json")
    b = write_contract(_base(), "b.json")
    run = run_cli("check", a, b, "--json", contract_dir / "r.json")
    assert run.code == 2
    assert "--json, --markdown, --html, --log and --out take one contract" in run.err


def test_a_model_that_cannot_be_read_does_not_hide_the_other_contracts(tmp_path: Path, save_model: SaveModel,
                                                                       run_cli: RunCli) -> None:
    """check a b: a's model is not ONNX; b still runs and its verdict is printed; the exit is 2."""
    save_model(model_zoo.conv_relu(), "good.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    for name, model in (("a.json", "junk.onnx"), ("b.json", "good.onnx")):
        doc = {"model": {"onnx": model}, "name": name[0],
               "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}], "target": {"profile": "demo"}}
        (tmp_path / name).write_text(json.dumps(doc), encoding="utf-8")
    run = run_cli("check", tmp_path / "a.json", tmp_path / "b.json", "--no-cache")
    assert run.code == 2
    assert "junk.onnx: not an ONNX model" in run.err
    assert run.out.startswith("npu-gate: b: FAIL")


def _contract_text(tail: str) -> str:
    """The base contract's JSON with ``tail`` (``, "key": value``) added to its top object."""
    return json.dumps(_base())[:-1] + tail + "}"


def _exits_2_with(run_cli: RunCli, path: Path, line: str) -> None:
    """`validate` and `check` both: exit 2, exactly one error line, no traceback."""
    for command in ("validate", "check"):
        run = run_cli(command, path)
        assert run.code == 2, (command, run.out, run.err)
        assert run.err == f"npu-gate: error: {path}: {line}\n", (command, run.err)


@pytest.mark.parametrize(("tail", "line"), [
    # JSON Schema counts 2.0 as an integer; no shape, count or seed is a float
    (', "numerics": {"samples": 2.0}', "numerics.samples: 2.0 is not of type 'integer'"),
    (', "gates": {"max_cpu_nodes": 1.0}', "gates.max_cpu_nodes: 1.0 is not of type 'integer', 'null'"),
    (', "name": "\\ud800"', "name: invalid text: a lone surrogate (\\ud800) is not a character"),
    (', "x-\\udfff": 1', "x-\\udfff: key invalid text: a lone surrogate (\\udfff) is not a character"),
    (', "numerics": {"samples": ' + "7" * 5000 + "}", "invalid JSON: an integer of more than 4300 digits"),
    (', "numerics": {"atol": NaN}', "numerics.atol: NaN is not allowed: numbers must be finite"),
    (', "numerics": {"rtol": Infinity}', "numerics.rtol: Infinity is not allowed: numbers must be finite"),
    (', "numerics": {"atol": -Infinity}', "numerics.atol: -Infinity is not allowed: numbers must be finite"),
    (', "numerics": {"atol": 1e999}', "numerics.atol: Infinity is not allowed: numbers must be finite"),
    (', "rewrites": [{"name": "x", "atol": NaN}]', "rewrites[0].atol: NaN is not allowed: numbers must be finite"),
])
def test_malformed_values_are_one_line_errors(contract_dir: Path, run_cli: RunCli, tail: str, line: str) -> None:
    path = contract_dir / "npu-gate.json"
    path.write_text(_contract_text(tail), encoding="utf-8")
    _exits_2_with(run_cli, path, line)


def test_a_float_dim_and_a_rank_above_32_are_refused(contract_dir: Path, write_contract: WriteContract,
                                                     run_cli: RunCli) -> None:
    doc = _base()
    doc["inputs"][0]["shape"] = [2.0, 3, 7, 5]
    _exits_2_with(run_cli, write_contract(doc), "inputs[0].shape[0]: 2.0 is not of type 'integer', 'string'")
    doc["inputs"][0]["shape"] = [1] * 100  # numpy could not even draw its samples
    _exits_2_with(run_cli, write_contract(doc), "inputs[0].shape: 100 items, at most 32")


def test_nesting_too_deep_is_one_line_not_a_recursion_error(contract_dir: Path, run_cli: RunCli) -> None:
    path = contract_dir / "npu-gate.json"
    path.write_text('{"model": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    _exits_2_with(run_cli, path, "invalid JSON: nested too deep to read (at most 64 levels)")
    path.write_text(_contract_text(', "x": ' + "[" * 70 + "]" * 70), encoding="utf-8")
    _exits_2_with(run_cli, path, "x" + "[0]" * 63 + ": nested more than 64 levels deep")


@pytest.mark.slow
def test_yaml_nan_infinity_and_deep_nesting(contract_dir: Path, run_cli: RunCli) -> None:
    pytest.importorskip("yaml")
    path = contract_dir / "npu-gate.yaml"
    base = ("model: {onnx: model.onnx}\ninputs: [{name: x, shape: [1, 3, 8, 8], dtype: float32}]\n"
            "target: {profile: demo}\n")
    path.write_text(base + "numerics: {atol: .nan}\n", encoding="utf-8")
    _exits_2_with(run_cli, path, "numerics.atol: NaN is not allowed: numbers must be finite")
    path.write_text(base + "numerics: {rtol: -.inf}\n", encoding="utf-8")
    _exits_2_with(run_cli, path, "numerics.rtol: -Infinity is not allowed: numbers must be finite")
    path.write_text(base + "numerics: {samples: " + "7" * 5000 + "}\n", encoding="utf-8")
    _exits_2_with(run_cli, path, "invalid YAML: an integer of more than 4300 digits")
    path.write_text("model: " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    _exits_2_with(run_cli, path, "invalid YAML: nested too deep to read (at most 64 levels)")


@pytest.mark.slow
def test_yaml_aliases_that_expand_past_the_limit_or_contain_themselves(contract_dir: Path, run_cli: RunCli) -> None:
    """A few lines of aliases stand for 9**9 values: refused from the counts alone, at once (the walk
    of the expanded document hung past 30 s); an alias inside itself too; an anchor used twice is fine."""
    pytest.importorskip("yaml")
    path = contract_dir / "npu-gate.yaml"
    base = ("model: {onnx: model.onnx}\ninputs: [{name: x, shape: [1, 3, 8, 8], dtype: float32}]\n"
            "target: {profile: demo}\n")
    levels = ["a0: &a0 [" + ", ".join(["x"] * 9) + "]"]
    levels += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, 9)]
    path.write_text("x-bomb:\n" + "".join(f"  {line}\n" for line in levels) + base, encoding="utf-8")
    _exits_2_with(run_cli, path, "invalid YAML: its aliases expand to more than 1,000,000 values")
    path.write_text("x-loop: &loop [1, *loop]\n" + base, encoding="utf-8")
    _exits_2_with(run_cli, path, "invalid YAML: an alias refers to a list or mapping that contains it")
    shared = ("model: {onnx: model.onnx}\ninputs: [&x {name: x, shape: [1, 3, 8, 8], dtype: float32}]\n"
              "target: {profile: demo}\nnumerics: {atol: &tol 0.001, rtol: *tol}\n")
    path.write_text(shared, encoding="utf-8")
    run = run_cli("validate", path)
    assert (run.code, run.err) == (0, "")


def test_a_profile_with_nan_or_infinity_is_refused(contract_dir: Path, write_contract: WriteContract,
                                                   run_cli: RunCli) -> None:
    profile = contract_dir / "p.npu-profile.json"
    ops = '{"Conv": {}, "Relu": {"constraints": [{"id": "c", "when": {"input": 0, "rank": {"max": NaN}}}]}}'
    profile.write_text('{"name": "p", "description": "d", "source": "s", "evidence": "illustrative", '
                       f'"ops": {ops}}}', encoding="utf-8")
    line = "ops.Relu.constraints[0].when.rank.max: NaN is not allowed: numbers must be finite"
    _exits_2_with(run_cli, profile, line)
    doc = _base()
    doc["target"]["profile"] = "./p.npu-profile.json"
    run = run_cli("check", write_contract(doc))
    assert run.code == 2 and line in run.err and "Traceback" not in run.err
