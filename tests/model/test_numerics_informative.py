"""Issue 19 item 2: comparisons that cannot fail say so, and tiny outputs are judged on their scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from npu_gate.model.numerics import compare_output
from tests.helpers.common import RunCli

RNG = np.random.default_rng(0)


def _pairs(ref: list[np.ndarray], got: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray | None]]:
    return list(zip(got, ref, strict=True))


def test_a_random_init_output_within_atol_is_judged_on_its_scale() -> None:
    ref = [(RNG.standard_normal((1, 10)) * 8e-10).astype(np.float32) for _ in range(2)]
    close = [r + np.float32(1e-16) for r in ref]
    c = compare_output("logits", _pairs(ref, close), atol=1e-4, rtol=1e-3)
    assert (c.passed, c.uninformative) == (True, "below-atol")
    assert c.scale_rel_err is not None and c.scale_rel_err < 1e-3
    assert c.reference_range is not None and max(map(abs, c.reference_range)) < 1e-4
    wrong = [r * np.float32(1.5) for r in ref]  # 50 % off: atol alone passed this
    c = compare_output("logits", _pairs(ref, wrong), atol=1e-4, rtol=1e-3)
    assert (c.passed, c.uninformative) == (False, "below-atol")
    assert c.scale_rel_err is not None and 0.4 < c.scale_rel_err < 0.6


def test_zero_and_constant_outputs_are_flagged_not_failed() -> None:
    zeros = [np.zeros((1, 4), np.float32)] * 2
    c = compare_output("y", _pairs(zeros, zeros), atol=1e-4, rtol=1e-3)
    assert (c.passed, c.uninformative, c.reference_range) == (True, "zero", (0.0, 0.0))
    const = [np.full((1, 4), 0.5, np.float32)] * 2
    c = compare_output("y", _pairs(const, const), atol=1e-4, rtol=1e-3)
    assert (c.passed, c.uninformative) == (True, "constant")


def test_an_ordinary_output_is_informative() -> None:
    ref = [RNG.standard_normal((1, 8)).astype(np.float32) for _ in range(2)]
    c = compare_output("y", _pairs(ref, ref), atol=1e-4, rtol=1e-3)
    assert (c.passed, c.uninformative, c.scale_rel_err) == (True, None, None)
    assert c.to_dict()["reference_range"] == list(c.reference_range or ())
    assert "uninformative" not in c.to_dict()


@pytest.mark.torch
@pytest.mark.slow
def test_check_warns_on_an_output_inside_atol(tmp_path: Path, run_cli: RunCli) -> None:
    import json

    (tmp_path / "net.py").write_text(
        "import torch\n\n\ndef build():\n    torch.manual_seed(0)\n    m = torch.nn.Linear(4, 3)\n"
        "    with torch.no_grad():\n        m.weight.mul_(1e-9)\n        m.bias.zero_()\n    return m\n")
    doc = {"model": {"torch": {"factory": "net:build", "exporter": "torchscript", "opset": 17}},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}], "target": {"profile": "demo"},
           "numerics": {"samples": 2}}
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc))
    run = run_cli("check", tmp_path, "--json", tmp_path / "r.json", "--no-cache")
    result = json.loads((tmp_path / "r.json").read_text())
    [entry] = result["numerics"]
    assert entry["uninformative"] == "below-atol" and entry["passed"] is True
    [warning] = [f for f in result["findings"] if f["rule"] == "numerics-uninformative"]
    assert warning["severity"] == "warning" and warning["subject"] == f"output {entry['output']}"
    assert "inside atol 0.0001 of zero, so atol alone cannot fail" in warning["message"]
    assert "not informative: below atol, judged by scale" in run.out
