"""What the contract's keys do, with expectations worked out by hand: input ranges and
samples, the numeric comparison, waivers, input order and shapes, YAML contracts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_gate.contract.spec import InputSpec, load_contract
from npu_gate.model.numerics import compare_output
from npu_gate.model.samples import make_samples
from npu_gate.pipeline import check_contract
from tests.helpers import model_zoo
from tests.helpers.common import RunCli, SaveModel, WriteContract, validate_result


def _conv_relu_contract(**extra: object) -> dict[str, Any]:
    """model_zoo.conv_relu under demo: Relu (relu0) is not in the profile."""
    return {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
            "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}], **extra}


def test_bool_and_integer_samples_stay_in_the_range() -> None:
    specs = [InputSpec("t", [64], "bool", None, (1, 1)), InputSpec("f", [64], "bool", None, (0, 0)),
             InputSpec("u", [64], "uint8", None, (250, 255)), InputSpec("i", [64], "int64", None, (0.5, 1.5))]
    sample = make_samples(specs, 1, 0)[0]
    assert sample["t"].all() and not sample["f"].any()
    assert sample["u"].min() >= 250 and sample["u"].dtype == np.uint8
    assert set(sample["i"].tolist()) == {1}


def _f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


@pytest.mark.parametrize(("got", "ref", "atol", "rtol", "passed"), [
    (1.25, 1.0, 0.125, 0.125, True),   # |diff| 0.25 == atol + rtol * |ref| 0.25: the limit passes
    (1.25, 1.0, 0.125, 0.0625, False),  # limit 0.1875
    (1.0, 1.3, 0.0, 0.25, True),  # rtol scales the reference (second) side: limit 0.325 >= 0.3
    (1.3, 1.0, 0.0, 0.25, False),  # limit 0.25 < 0.3
    (0.125, 0.0, 0.125, 1.0, True),  # a zero reference: atol alone
])
def test_tolerance_is_atol_plus_rtol_times_the_reference(got: float, ref: float, atol: float, rtol: float,
                                                         passed: bool) -> None:
    c = compare_output("y", [(_f32(got), _f32(ref))], atol, rtol)
    assert (c.passed, c.problem) == (passed, None)


def test_nan_never_matches_and_the_problem_says_where() -> None:
    """NaN on both sides in the same places used to read "non-finite values differ"."""
    same = _f32(np.nan, 1.0)
    c = compare_output("y", [(_f32(1.0, 1.0), _f32(1.0, 1.0)), (same, same.copy())], 1.0, 1.0)
    assert not c.passed
    assert c.problem == "NaN on sample(s) 1: 1 of 2 values, 1 in the reference; NaN never counts as a match"
    c = compare_output("y", [(_f32(1.0, 1.0), _f32(np.nan, np.nan))], 1.0, 1.0)
    assert c.problem == "NaN on sample(s) 0: 0 of 2 values, 2 in the reference; NaN never counts as a match"


def test_infinities_pass_only_when_equal_and_are_counted() -> None:
    inf = _f32(np.inf, -np.inf, 2.0)
    c = compare_output("y", [(inf, inf.copy()), (inf, inf.copy())], 1e-4, 1e-3)
    assert (c.passed, c.max_abs_err, c.problem) == (True, 0.0, "4 infinite values, the same on both sides")
    c = compare_output("y", [(inf, _f32(np.inf, np.inf, 2.0))], 1e-4, 1e-3)
    assert (c.passed, c.problem) == (False, "infinite values differ from the reference on sample(s) 0")
    c = compare_output("y", [(_f32(3.0), _f32(np.inf))], 1e-4, 1e-3)
    assert (c.passed, c.problem) == (False, "infinite values differ from the reference on sample(s) 0")


def test_integer_outputs_past_2_53_are_compared_exactly() -> None:
    """As float64, 2**53 + 1 and 2**53 are the same number: an int64 id off by one passed."""
    big = 2**53
    got = np.array([[big + 1, 7], [-3, 2**62]], dtype=np.int64)
    ref = np.array([[big, 7], [-3, 2**62]], dtype=np.int64)
    c = compare_output("ids", [(got, ref)], 0.0, 0.0)
    assert (c.passed, c.max_abs_err, c.problem) == (False, 1.0, None)
    c = compare_output("ids", [(ref, ref.copy()), (ref, ref.copy())], 0.0, 0.0)
    assert (c.passed, c.max_abs_err, c.max_rel_err) == (True, 0.0, 0.0)
    c = compare_output("ids", [(np.array([5], np.int64), np.array([3], np.int32))], 2.0, 0.0)
    assert (c.passed, c.max_abs_err) == (True, 2.0)  # the tolerance still applies to integers


def test_a_waiver_shadowed_by_an_earlier_one_is_not_unused(save_model: SaveModel,
                                                           write_contract: WriteContract) -> None:
    """The first matching waiver waives; a later one that matches the same finding is used
    too (it used to be reported as "matched no finding"), and an expired one is reported
    as expired whether or not another waiver covers the finding."""
    save_model(model_zoo.conv_relu())
    doc = _conv_relu_contract(waivers=[
        {"rule": "unsupported-op", "node": "relu0", "op_type": "Conv", "reason": "op differs"},
        {"rule": "unsupported-op", "node": "relu0", "op_type": "Relu", "reason": "both", "expires": "2027-01-10"},
        {"rule": "unsupported-op", "reason": "rule only"},
        {"rule": "unsupported-op", "node": "relu0", "reason": "yesterday", "expires": "2027-01-09"},
        {"rule": "onnx-checker", "reason": "nothing to match"},
    ])
    result = check_contract(load_contract(write_contract(doc)), today=dt.date(2027, 1, 10))
    validate_result(result.to_dict())
    assert [(f.rule, f.waived, f.waiver_reason, f.message) for f in result.findings] == [
        ("unsupported-op", True, "both", "op Relu not in profile demo"),
        ("waiver-unused", False, None, "waivers[0] (rule=unsupported-op, node=relu0, op_type=Conv) matched no finding"),
        ("waiver-expired", False, None,
         "waivers[3] (rule=unsupported-op, node=relu0) expired on 2027-01-09 and no longer waives"),
        ("waiver-unused", False, None, "waivers[4] (rule=onnx-checker) matched no finding"),
    ]
    assert result.verdict == "pass"


def test_yaml_contract_with_an_unquoted_expiry_date(save_model: SaveModel, tmp_path: Path, run_cli: RunCli) -> None:
    """YAML reads `2027-01-10` as a date; the contract wants the text JSON has (it was
    refused: "datetime.date(2027, 1, 10) is not of type 'string'")."""
    pytest.importorskip("yaml")
    save_model(model_zoo.conv_relu())
    path = tmp_path / "npu-gate.yaml"
    path.write_text(
        "name: yaml contract\n"
        "model: {onnx: model.onnx}\n"
        "inputs: [{name: x, shape: [1, 3, 8, 8], dtype: float32}]\n"
        "target: {profile: demo}\n"
        "waivers: [{rule: unsupported-op, op_type: Relu, reason: tracked, expires: 2027-01-10}]\n",
        encoding="utf-8",
    )
    contract = load_contract(path)
    assert [w.expires for w in contract.waivers] == [dt.date(2027, 1, 10)]
    run = run_cli("check", path, "--today", "2027-01-11", "-q", "--no-cache")
    assert (run.code, run.err) == (1, "")


TWO_INPUTS = """import torch


class Net(torch.nn.Module):
    def forward(self, x, mask):
        return x * mask + x


def build():
    return Net()
"""


@pytest.mark.torch
@pytest.mark.parametrize(("names", "code", "err"), [
    (["mask", "x"], 2, "inputs[0].name: 'mask' is a parameter of forward(x, mask), which takes the contract's "
                       "inputs by position: inputs[0] would feed 'x'; declare the inputs in forward()'s order"),
    (["x", "mask"], 0, ""),
    (["images", "weights"], 0, ""),  # names forward() does not use are free
])
@pytest.mark.torch
@pytest.mark.slow
def test_torch_inputs_declared_out_of_forward_order(tmp_path: Path, write_contract: WriteContract, run_cli: RunCli,
                                                    names: list[str], code: int, err: str) -> None:
    """The swapped contract used to pass: the exported graph computed forward(mask, x)."""
    (tmp_path / "sem_two_inputs.py").write_text(TWO_INPUTS, encoding="utf-8")
    shapes = {names[0]: [1, 3, 4, 4], names[1]: [1, 3, 4, 4]}
    doc = {"model": {"torch": {"factory": "sem_two_inputs:build", "exporter": "torchscript", "opset": 17}},
           "target": {"profile": "demo"}, "numerics": {"samples": 1},
           "inputs": [{"name": n, "shape": shapes[n], "dtype": "float32"} for n in names]}
    path = write_contract(doc)
    run = run_cli("check", path, "-q", "--no-cache")
    assert (run.code, run.err) == (code, f"npu-gate: error: {path}: {err}\n" if err else "")


MODEL_INPUTS = "(model inputs: x [1, 3, 8, 8] float32)"


@pytest.mark.parametrize(("inputs", "errors"), [
    ([{"name": "x", "shape": [1, 3, 9, 8], "dtype": "float32"}],
     [f"inputs[0].shape: [1, 3, 9, 8] for input x contradicts the model's [1, 3, 8, 8] {MODEL_INPUTS}"]),
    ([{"name": "x", "shape": [1, 3, 8], "dtype": "float32"}],
     [f"inputs[0].shape: [1, 3, 8] for input x contradicts the model's [1, 3, 8, 8] {MODEL_INPUTS}"]),
    ([{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"},
      {"name": "images", "shape": [1, 3, 8, 8], "dtype": "float32"}],
     [f"inputs[1].name: 'images' is not an input of the model {MODEL_INPUTS}"]),
    ([{"name": "input", "shape": [1, 3, 8, 8], "dtype": "float32"},
      {"name": "x", "shape": [2, 3, 8, 8], "dtype": "float32"}],
     [f"inputs[0].name: 'input' is not an input of the model {MODEL_INPUTS}",
      f"inputs[1].shape: [2, 3, 8, 8] for input x contradicts the model's [1, 3, 8, 8] {MODEL_INPUTS}"]),
])
def test_a_contract_input_the_model_contradicts_is_a_contract_error(save_model: SaveModel,
                                                                    write_contract: WriteContract, run_cli: RunCli,
                                                                     inputs: list[dict[str, Any]],
                                                                     errors: list[str]) -> None:
    """Issue 19: a wrong input name, or a shape that the model's static dims contradict, is exit 2
    with one line per input naming the JSON path and the model's inputs, before any analysis."""
    save_model(model_zoo.conv_relu())
    path = write_contract(_conv_relu_contract(inputs=inputs))
    run = run_cli("check", path, "--no-cache")
    assert (run.code, run.out) == (2, "")
    assert run.err.splitlines() == [f"npu-gate: error: {path}: {e}" for e in errors]


def test_waiver_findings_cannot_be_waived(save_model: SaveModel, write_contract: WriteContract,
                                          run_cli: RunCli) -> None:
    """They are reported after the waivers are applied: such a waiver could only ever be
    reported as unused itself."""
    save_model(model_zoo.conv_relu())
    path = write_contract(_conv_relu_contract(waivers=[{"rule": "waiver-unused", "reason": "noise"},
                                                       {"rule": "waiver-expired", "reason": "noise"}]))
    run = run_cli("check", path)
    assert run.code == 2
    assert run.err.splitlines() == [
        f"npu-gate: error: {path}: waivers[0].rule: waiver-unused findings are about the waivers themselves "
        "and cannot be waived",
        f"npu-gate: error: {path}: waivers[1].rule: waiver-expired findings are about the waivers themselves "
        "and cannot be waived",
    ]
