"""Issue 19 item 10: a contract can ask for a dynamic-batch export (a named dim with an example
size), and the report shows what that does to the graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import RunCli

NET = ("import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
       "        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)\n\n    def forward(self, x):\n"
       "        y = self.conv(x)\n        return y.view(y.size(0), -1)\n\n\ndef build():\n    return Net()\n")


def _contract(tmp_path: Path, shape: list[Any], **extra: object) -> Path:
    (tmp_path / "net.py").write_text(NET)
    doc = {"model": {"torch": {"factory": "net:build", "exporter": "torchscript", "opset": 17}},
           "inputs": [{"name": "x", "shape": shape, "dtype": "float32"}], "target": {"profile": "demo"},
           "numerics": {"samples": 1}, **extra}
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc))
    return tmp_path


@pytest.mark.torch
@pytest.mark.slow
def test_a_named_dim_is_exported_dynamic_and_analysed_at_its_example_size(tmp_path: Path, run_cli: RunCli) -> None:
    folder = _contract(tmp_path, ["batch", 3, 8, 8], dynamic_dims={"batch": 2})
    run = run_cli("check", folder, "--json", tmp_path / "r.json", "--no-cache", "-q")
    result = json.loads((tmp_path / "r.json").read_text())
    [x] = result["inputs"]
    assert (x["shape"], x["model_shape"], x["static"]) == ([2, 3, 8, 8], ["batch", 3, 8, 8], False)
    dynamic = [f for f in result["findings"] if f["rule"] == "dynamic-input"]
    assert [f["severity"] for f in dynamic] == ["error"] and run.code == 1
    assert result["shape_chains"], "view(y.size(0), -1) computes its shape from the dynamic batch"
    assert result["numerics"][0]["passed"] is True  # compared at the example size
    folder = _contract(tmp_path, ["batch", 3, 8, 8], dynamic_dims={"batch": 2},
                       gates={"allow_dynamic_shapes": True})
    run = run_cli("check", folder, "--json", tmp_path / "r.json", "--no-cache", "-q")
    result = json.loads((tmp_path / "r.json").read_text())
    assert {f["severity"] for f in result["findings"] if f["rule"].startswith("dynamic")} == {"warning"}


@pytest.mark.parametrize(("shape", "dims", "problem"), [
    (["batch", 3, 8, 8], {}, "inputs[0].shape[0]: the named dim 'batch' has no example size: add dynamic_dims.batch"),
    ([1, 3, 8, 8], {"batch": 2}, "dynamic_dims.batch: no inputs[].shape names it"),
])
def test_named_dims_need_their_example_sizes(tmp_path: Path, run_cli: RunCli, shape: list[Any], dims: dict[str, Any],
                                             problem: str) -> None:
    folder = _contract(tmp_path, shape, dynamic_dims=dims)
    run = run_cli("check", folder)
    assert run.code == 2 and problem in run.err, run.err
