"""`--html PATH` on inspect and check: the self-contained page, also from a cache hit, never onto an input."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.common import RunCli, SaveModel
from tests.helpers.gate_models import seed_onnx


def _contract(tmp_path: Path) -> Path:
    (tmp_path / "model.onnx").write_bytes(seed_onnx().SerializeToString())
    doc = {"model": {"onnx": "model.onnx"},
           "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}],
           "target": {"profile": "demo"}}
    path = tmp_path / "npu-gate.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_inspect_writes_the_page(tmp_path: Path, run_cli: RunCli, save_model: SaveModel) -> None:
    model = save_model(seed_onnx())
    run = run_cli("inspect", model, "--html", tmp_path / "r.html", "-q")
    assert run.code == 1
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("<rect") == 3 and "<script" not in page
    assert "<h2>❌ npu-gate: <b>FAIL</b> · model</h2>" in page


def test_check_writes_the_page_from_a_cache_hit_too(tmp_path: Path, run_cli: RunCli) -> None:
    contract = _contract(tmp_path)
    first = run_cli("check", contract, "--html", tmp_path / "a.html", "-q")
    second = run_cli("check", contract, "--html", tmp_path / "b.html")
    assert first.code == second.code == 1
    assert "result from cache" in second.out
    a = (tmp_path / "a.html").read_text(encoding="utf-8")
    b = (tmp_path / "b.html").read_text(encoding="utf-8")
    assert a.split("<h3>Timings</h3>")[0] == b.split("<h3>Timings</h3>")[0]  # the same page but timings


def test_html_onto_an_input_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    contract = _contract(tmp_path)
    before = contract.read_bytes()
    run = run_cli("check", contract, "--html", contract)
    assert run.code == 2 and "--html" in run.err
    assert contract.read_bytes() == before
