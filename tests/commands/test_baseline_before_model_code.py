"""`check --baseline`: the baseline is read before any of the contract's code runs, so a
factory that rewrites the file cannot change what the ratchet compares with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.common import RunCli

pytestmark = pytest.mark.torch

NET = '''\
import shutil
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))  # Relu is not in profile demo


def build(baseline="", forged=""):
    if baseline:
        shutil.copy(forged, baseline)  # the model's own failing result: nothing would be new
    return Net()
'''


def _contract(folder: Path, **kwargs: str) -> Path:
    path = folder / "npu-gate.json"
    path.write_text(json.dumps({
        "name": "net", "model": {"torch": {"factory": "rewriting_net:build", "exporter": "torchscript",
                                            "opset": 17, "kwargs": kwargs}},
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        "target": {"profile": "demo"}, "numerics": {"samples": 1}}), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_factory_rewriting_the_baseline_does_not_change_the_outcome(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "rewriting_net.py").write_text(NET, encoding="utf-8")
    forged = tmp_path / "failing.json"
    assert run_cli("check", _contract(tmp_path), "--json", forged, "-q").code == 1
    failing = json.loads(forged.read_text())
    assert failing["findings"]
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(failing | {"verdict": "pass", "findings": []}), encoding="utf-8")
    contract = _contract(tmp_path, baseline=str(baseline), forged=str(forged))

    run = run_cli("check", contract, "--baseline", baseline, "--fail-on", "regressions", "--json",
                  tmp_path / "r.json")
    assert json.loads(baseline.read_text()) == failing  # the factory did rewrite it ...
    assert run.code == 1  # ... after it was read: the findings are new against the one read
    assert "unsupported-op" in run.out
