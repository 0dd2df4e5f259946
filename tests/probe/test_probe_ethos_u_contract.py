"""target.probe with ethos-u in a torch contract: the factory runs in the compiler's venv (never in
the gate's process), calibrated on the contract's quantization samples; `probe --factory` exports
in the contract-code child. The `ethos_u`-marked tests run the examples for real (one probe each):
`pytest -m ethos_u` with NPU_GATE_ETHOS_U_VENV (default .venv-ethos-u); without it they SKIP."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_gate.contract.spec import load_contract
from npu_gate.errors import GateError
from npu_gate.stages.compiler import factory_options
from tests.helpers.common import REPO, RunCli, SaveModel, WriteContract, probe_venv, validate_result
from tests.helpers.gate_models import seed_onnx

# absolute: a contract resolves a relative venv from its own folder
VENV = Path(os.environ.get("NPU_GATE_ETHOS_U_VENV", REPO / ".venv-ethos-u")).absolute()
TODAY = dt.date(2026, 12, 3)
INPUTS = [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32", "range": [-1, 1]}]
NET = '''import os
import torch
from torch import nn


def build_model():
    with open(os.environ["NPU_GATE_TEST_MARK"], "w") as f:
        f.write(str(os.getpid()))
    return nn.Conv2d(3, 4, 3)
'''


def _torch_contract(write_contract: WriteContract, tmp_path: Path, **extra: Any) -> Path:
    (tmp_path / "net.py").write_text(NET, encoding="utf-8")
    doc = {"model": {"torch": {"factory": "net:build_model", "kwargs": {}}}, "inputs": INPUTS,
           "target": {"profile": "demo", "probe": {"compiler": "ethos-u", "target": "ethos-u55-128"}}, **extra}
    return write_contract(doc)


def test_an_onnx_contract_cannot_name_ethos_u(save_model: SaveModel, write_contract: WriteContract,
                                              run_cli: RunCli) -> None:
    save_model(seed_onnx())
    path = write_contract({"model": {"onnx": "model.onnx"},
                           "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}],
                           "target": {"profile": "demo", "probe": {"compiler": "ethos-u", "target": "ethos-u55-128"}}})
    run = run_cli("check", path)
    assert run.code == 2
    assert run.err.strip() == (
        f"npu-gate: error: {path}: target.probe.compiler: ethos-u probes a torch model (model.torch) only: the ONNX "
        "route (onnx2tf to int8 TFLite, then Vela) is not built yet, because its result depends on that converter "
        "as much as on Vela (docs/ethos-u.md)")


def test_the_torchscript_exporter_cannot_be_tied_to_the_compiler(write_contract: WriteContract, tmp_path: Path,
                                                                 run_cli: RunCli) -> None:
    path = _torch_contract(write_contract, tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["model"]["torch"]["exporter"] = "torchscript"
    path.write_text(json.dumps(doc), encoding="utf-8")
    run = run_cli("check", path)
    assert run.code == 2
    assert run.err.strip() == (
        f"npu-gate: error: {path}: model.torch.exporter: the ethos-u probe ties the compiler's nodes to the ONNX "
        "nodes through the dynamo exporter's metadata: use \"dynamo\" (got 'torchscript')")


def test_calibration_rows_come_from_the_quantization_samples_file(write_contract: WriteContract,
                                                                  tmp_path: Path) -> None:
    rows = np.random.default_rng(5).uniform(-1, 1, (6, 1, 3, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=rows)
    contract = load_contract(_torch_contract(write_contract, tmp_path, quantization={
        "mode": "int8", "calibration": {"samples_file": "calib.npz", "count": 4}, "holdout": {"count": 2}}))
    options, words = factory_options(contract, tmp_path)
    assert words == "4 rows of the contract's quantization calibration samples (quantization.calibration.samples_file)"
    assert {k: v for k, v in options.items() if k != "samples_file"} == {
        "factory": "net:build_model", "kwargs": {}, "folders": [str(f) for f in contract.import_folders],
        "seed": 0, "ranges": {"x": [-1.0, 1.0]}}
    with np.load(options["samples_file"], allow_pickle=False) as data:  # the driver's layout: s{row}i{input}
        assert sorted(data.files) == ["s0i0", "s1i0", "s2i0", "s3i0"]
        np.testing.assert_array_equal(np.stack([data[f"s{k}i0"] for k in range(4)]), rows[:4])


def test_without_quantization_the_rows_are_synthetic_and_said_so(write_contract: WriteContract, tmp_path: Path) -> None:
    options, words = factory_options(load_contract(_torch_contract(write_contract, tmp_path)), tmp_path)
    assert words == "4 synthetic rows drawn from the inputs' ranges (the contract has no quantization)"
    with np.load(options["samples_file"], allow_pickle=False) as data:
        values = np.stack([data[f"s{k}i0"] for k in range(4)])
    assert values.shape == (4, 1, 3, 8, 8) and values.min() >= -1 and values.max() <= 1 and values.min() < 0


@pytest.mark.torch
@pytest.mark.slow
def test_probe_factory_builds_the_module_outside_the_gate_process(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from npu_gate.probe.factory import export_factory

    (tmp_path / "net.py").write_text(NET, encoding="utf-8")
    mark = tmp_path / "pid"
    monkeypatch.setenv("NPU_GATE_TEST_MARK", str(mark))
    (tmp_path / "out").mkdir()
    out = export_factory("net:build_model", {"x": [1, 3, 8, 8]}, tmp_path, tmp_path / "out" / "model.onnx")
    assert out.is_file() and int(mark.read_text()) != os.getpid()
    assert "net" not in sys.modules
    with pytest.raises(GateError) as err:
        export_factory("net:nothing", {"x": [1, 3, 8, 8]}, tmp_path, tmp_path / "out" / "model.onnx")
    assert err.value.problems == ["--factory net:nothing: 'net' has no callable 'nothing'"]


# --- the examples, for real (needs the venv) ---

@pytest.fixture(scope="module")
def venv() -> Path:
    return probe_venv(VENV, "ethos-u", "Ethos-U")


def _example(name: str, tmp_path: Path, venv: Path) -> Path:
    """The example's contract, copied beside its net with the venv named."""
    folder = tmp_path / name
    shutil.copytree(REPO / "examples" / name, folder, ignore=shutil.ignore_patterns("*.md", "u85"))
    path = folder / "npu-gate.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["target"]["probe"]["venv"] = str(venv)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.ethos_u
@pytest.mark.torch
def test_constraint_example_on_u55_fails_on_the_two_ops_vela_leaves_on_the_cpu(run_cli: RunCli, tmp_path: Path,
                                                                               venv: Path) -> None:
    out, md = tmp_path / "result.json", tmp_path / "report.md"
    run = run_cli("check", _example("ethos-u-constraints", tmp_path, venv), "--no-cache", "--json", out,
                  "--markdown", md, "--quiet")
    assert run.code == 1, run.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    validate_result(doc)
    probe = doc["stages"]["probe"]
    cpu = {n["name"]: n["reason"] for n in probe["nodes"] if n["actual"] == "cpu"}
    assert cpu == {"node_upsample_bilinear2d": "Op is not supported on U55.",
                   "node_convolution": "Unsupported stride of (3, 3) for Ethos-U55. You can use stride of (1,1) or "
                                       "(2,2), stride (1,2) for IFM height kernel height of 1 and stride(2,1) for "
                                       "IFM width and kernel width of 1"}
    assert doc["summary"]["measured"] == {"cpu_nodes": 2, "npu_partitions": 3, "cpu_partitions": 2}
    assert probe["calibration"] == ("8 rows of the contract's quantization calibration samples (synthetic, drawn "
                                    "from the inputs' ranges)")
    evidence = "estimated by Vela 5.2.0 for Ethos_U55_128, Ethos_U55_High_End_Embedded, Shared_Sram"
    assert probe["estimates"]["evidence"] == evidence
    gates = {g["name"]: (g["limit"], g["actual"], g["passed"]) for g in doc["gates"]}
    assert gates["max_cpu_nodes"] == (0, 2, False)
    assert gates["max_sram_bytes"][2] and gates["max_estimated_ms"][2]
    assert [f["message"] for f in doc["findings"] if f["rule"] == "gate-exceeded"] == [
        "max_cpu_nodes: 2 exceeds the limit 0"]
    report = md.read_text(encoding="utf-8")
    assert "#### Compiler memory and estimates" in report and "| compiler: SRAM used (largest partition) |" in report


@pytest.mark.ethos_u
@pytest.mark.torch
def test_mobilenet_example_runs_wholly_on_u55(run_cli: RunCli, tmp_path: Path, venv: Path) -> None:
    out = tmp_path / "result.json"
    run = run_cli("check", _example("ethos-u-mobilenet", tmp_path, venv), "--no-cache", "--json", out, "--quiet")
    assert run.code == 0, run.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    probe = doc["stages"]["probe"]
    assert doc["summary"]["measured"] == {"cpu_nodes": 0, "npu_partitions": 1, "cpu_partitions": 0}
    # every node tied, the 23 Convs the exporter fused with their BatchNorm too
    assert len(probe["nodes"]) == 76 and {n["actual"] for n in probe["nodes"]} == {"npu"}
    assert probe["estimates"]["npu_partitions"] == 1 and probe["estimates"]["vela_cpu_operators"] == 0
