"""Issue 18 with real exports from both exporters: a module tree with two interpolations on
known lines; each node's source, stable keys that survive a change to the other layer, waivers
by module and source line, the ratchet and diff reporting exactly the layer that changed."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import RunCli

pytestmark = pytest.mark.torch

ZOO = '''import torch.nn as nn
import torch.nn.functional as F


class Up(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        align = True if self.mode == "bilinear" else None
        return F.interpolate(x, scale_factor=2, mode=self.mode, align_corners=align)


class Net(nn.Module):
    def __init__(self, first):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.up1 = Up(first)
        self.up2 = Up("bilinear")

    def forward(self, x):
        y = self.up1(self.conv(x))
        return self.up2(y)


def build_model(first="bilinear"):
    return Net(first)
'''
INTERPOLATE_LINE = ZOO.splitlines().index(
    "        return F.interpolate(x, scale_factor=2, mode=self.mode, align_corners=align)") + 1


def _repo(tmp_path: Path, exporter: str, first: str = "bilinear", waivers: list[Any] | None = None) -> Path:
    """A repository (``.git``) with the model code in models/ and the contract in contracts/net/."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "models").mkdir(exist_ok=True)
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "zoo.py").write_text(ZOO)
    contract_dir = tmp_path / "contracts" / "net"
    contract_dir.mkdir(parents=True, exist_ok=True)
    (contract_dir / "zoo_factory.py").write_text(  # the factory sits beside the contract
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))\n"
        "from models.zoo import build_model  # noqa: E402\n")
    contract = {
        "name": "net",
        "model": {"torch": {"factory": "zoo_factory:build_model", "kwargs": {"first": first},
                            "exporter": exporter, "opset": 18}},
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        "target": {"profile": "rknn-rk3588"},
        "numerics": {"samples": 0},
    }
    if waivers:
        contract["waivers"] = waivers
    (contract_dir / "npu-gate.json").write_text(json.dumps(contract))
    return contract_dir


def _check(run_cli: RunCli, contract_dir: Path, out: Path, *extra: str) -> dict[str, Any]:
    run = run_cli("check", contract_dir, "--json", out, "-q", "--no-cache", *extra)
    assert run.code in (0, 1), run.err
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _resizes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in doc["nodes"] if n["op_type"] == "Resize"]


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
@pytest.mark.slow
def test_each_node_names_its_module_and_the_same_stable_keys(tmp_path: Path, run_cli: RunCli, exporter: str) -> None:
    doc = _check(run_cli, _repo(tmp_path, exporter), tmp_path / "r.json")
    resizes = _resizes(doc)
    assert [n["stable_key"] for n in resizes] == ["up1/Resize#0", "up2/Resize#0"]
    assert [n["source"]["module_path"] for n in resizes] == ["up1", "up2"]
    conv = next(n for n in doc["nodes"] if n["op_type"] == "Conv")
    assert conv["stable_key"] == "conv/Conv#0"
    if exporter == "dynamo":
        assert [(n["source"]["file"], n["source"]["line"], n["source"]["function"]) for n in resizes] == [
            ("models/zoo.py", INTERPOLATE_LINE, "forward")] * 2
        assert [n["source"]["module_class"] for n in resizes] == ["models.zoo.Up"] * 2
        assert conv["source"]["module_class"] == "torch.nn.modules.conv.Conv2d"
        assert conv["source"]["file"] == "models/zoo.py"  # the user's line, not torch's conv.py
        assert conv["source"]["code"] == "y = self.up1(self.conv(x))"
    else:  # TorchScript names say the module, nothing of the line
        assert [(n["source"]["file"], n["source"]["module_class"]) for n in resizes] == [(None, None)] * 2
    # the failure is reported where the reader can act on it
    findings = [f for f in doc["findings"] if f["rule"] == "op-constraint"]
    assert sorted(f["node"] for f in findings) == sorted(n["name"] for n in resizes)


@pytest.mark.slow
def test_reports_speak_pytorch(tmp_path: Path, run_cli: RunCli) -> None:
    contract_dir = _repo(tmp_path, "dynamo")
    run = run_cli("check", contract_dir, "--markdown", tmp_path / "r.md", "--no-cache")
    assert run.code == 1
    where = f"models/zoo.py:{INTERPOLATE_LINE}"
    # the terminal: the two layers, then the ONNX names
    assert (f"op-constraint ×2 at {where} Net.up1 (Up); {where} Net.up2 (Up) "
            "[node_upsample_bilinear2d, node_upsample_bilinear2d_1]: resize-linear-not-align-corners") in run.out
    report = html.unescape((tmp_path / "r.md").read_text())
    assert f"{where} Net.up1 (Up)" in report and f"{where} Net.up2 (Up)" in report


@pytest.mark.slow
def test_a_change_to_one_layer_is_that_layer_only(tmp_path: Path, run_cli: RunCli) -> None:
    """up1 becomes nearest: dynamo renames up2's node (node_upsample_bilinear2d_1 ->
    node_upsample_bilinear2d); matched by stable key, only up1 changed."""
    before = _check(run_cli, _repo(tmp_path, "dynamo"), tmp_path / "before.json")
    after_dir = _repo(tmp_path, "dynamo", first="nearest")
    after = _check(run_cli, after_dir, tmp_path / "after.json", "--baseline", str(tmp_path / "before.json"))
    up2_before, up2_after = _resizes(before)[1], _resizes(after)[1]
    assert up2_before["name"] != up2_after["name"]  # the exporter renumbered it
    assert up2_before["stable_key"] == up2_after["stable_key"] == "up2/Resize#0"

    run = run_cli("check", after_dir, "--baseline", tmp_path / "before.json", "--no-cache")
    assert "baseline: 0 new, 1 fixed findings" in run.out, run.out

    run = run_cli("diff", tmp_path / "before.json", tmp_path / "after.json", "--json", tmp_path / "d.json", "-q")
    diff = json.loads((tmp_path / "d.json").read_text())
    assert diff["matched_by"] == "stable_key"
    assert [(c["stable_key"], c["a"], c["b"]) for c in diff["placement_changes"]] == [("up1/Resize#0", "cpu", "npu")]
    assert diff["nodes_added"] == [] and diff["nodes_removed"] == []


@pytest.mark.slow
def test_waivers_by_module_and_by_source_line(tmp_path: Path, run_cli: RunCli) -> None:
    waivers = [{"rule": "op-constraint", "module": "up2", "reason": "upsampled on the host for now"}]
    doc = _check(run_cli, _repo(tmp_path, "dynamo", waivers=waivers), tmp_path / "r.json")
    waived = {f["node"]: f["waived"] for f in doc["findings"] if f["rule"] == "op-constraint"}
    names = [n["name"] for n in _resizes(doc)]
    assert waived == {names[0]: False, names[1]: True}
    assert not [f for f in doc["findings"] if f["rule"] == "waiver-unused"]

    # up1 becomes nearest: the module waiver still waives up2, whatever dynamo now calls it
    doc = _check(run_cli, _repo(tmp_path, "dynamo", first="nearest", waivers=waivers), tmp_path / "r2.json")
    assert [(f["node"], f["waived"]) for f in doc["findings"] if f["rule"] == "op-constraint"] == [
        (_resizes(doc)[1]["name"], True)]

    line = [{"rule": "op-constraint", "source": f"models/*.py:{INTERPOLATE_LINE}", "reason": "both, for now"}]
    doc = _check(run_cli, _repo(tmp_path, "dynamo", waivers=line), tmp_path / "r3.json")
    assert [f["waived"] for f in doc["findings"] if f["rule"] == "op-constraint"] == [True, True]
    assert doc["verdict"] == "pass"  # both CPU fallbacks waived, nothing else wrong
