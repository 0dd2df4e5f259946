"""examples/shape-variants: the checked-in diff reports regenerate identically."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "shape-variants"


def test_checked_in_diffs_regenerate_identically(tmp_path: Path) -> None:
    make_diffs = runpy.run_path(str(EXAMPLE / "make_diffs.py"))
    written = make_diffs["generate"](tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in (EXAMPLE / "diffs").iterdir())
    for path in written:
        checked_in = (EXAMPLE / "diffs" / path.name).read_text(encoding="utf-8")
        assert path.read_text(encoding="utf-8") == checked_in, (
            f"{path.name} differs: run `python make_diffs.py` in {EXAMPLE} and review the diff"
        )


def test_what_the_diffs_say() -> None:
    dynamic = json.loads((EXAMPLE / "diffs" / "static-vs-dynamic-batch.json").read_text())
    chains = {c["key"]: (c["a"], c["b"]) for c in dynamic["shape_chains"]["changed"]}
    assert chains == {"/Resize": ("folds", "stays"), "/Reshape": ("folds", "stays")}
    metrics = {m["metric"]: (m["a"], m["b"]) for m in dynamic["metrics"]}
    assert metrics["nodes_after_folding"] == (7, 22)
    assert metrics["boundary_bytes"] == (21504, None)

    bilinear = json.loads((EXAMPLE / "diffs" / "nearest-vs-bilinear.json").read_text())
    assert bilinear["ops"] == {}
    [resize] = bilinear["nodes_changed"]
    assert resize["name"] == "/Resize"
    assert resize["attributes"]["mode"] == {"a": "nearest", "b": "linear"}
    assert bilinear["placement_changes"] == []


@pytest.mark.torch
def test_compare_exporters_on_the_example(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from npu_gate.contract import load_contract
    from npu_gate.pipeline import check_contract

    contract = load_contract(EXAMPLE / "npu-gate.json")
    result = check_contract(contract).to_dict()
    assert result["model"]["exporter"] == "dynamo"
    # The dynamo exporter leaves no shape computation; TorchScript leaves two chains,
    # both folded under the contract's static shapes.
    assert result["shape_chains"] == []
    comparison = result["exporter_comparison"]
    assert (comparison["exporter"], comparison["status"]) == ("torchscript", "ok")
    diff = comparison["diff"]
    assert [(c["key"], c["status"]) for c in diff["shape_chains"]["added"]] == [
        ("/Resize", "folds"),
        ("/Reshape", "folds"),
    ]
    metrics = {m["metric"]: (m["a"], m["b"]) for m in diff["metrics"]}
    assert metrics["node_count"] == (7, 21)
    assert metrics["nodes_after_folding"] == (7, 7)
    assert metrics["boundary_bytes"] == (21504, 21504)
    assert diff["a"]["verdict"] == result["verdict"] == "fail"
