"""examples/shape-variants: the checked-in diff reports regenerate identically."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from tests.helpers.common import REPO, Golden, RunCli, WriteContract

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
    from tests.helpers.common import validate_diff

    dynamic = json.loads((EXAMPLE / "diffs" / "static-vs-dynamic-batch.json").read_text())
    validate_diff(dynamic)
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
@pytest.mark.slow
def test_compare_exporters_on_the_example(tmp_path: Path) -> None:
    from npu_gate.contract.spec import load_contract
    from npu_gate.pipeline import check_contract

    contract = load_contract(EXAMPLE / "npu-gate.json")
    gated = check_contract(contract)
    result = gated.to_dict()
    assert result["model"]["exporter"] == "dynamo"
    # The dynamo exporter writes the conv weights to model.onnx.data: left unread.
    assert result["model"]["external_weights_unread"] == 2
    # The dynamo exporter leaves no shape computation; TorchScript leaves two chains,
    # both folded under the contract's static shapes.
    assert result["shape_chains"] == []
    comparison = result["exporter_comparison"]
    assert (comparison["exporter"], comparison["status"]) == ("torchscript", "ok")
    diff = comparison["diff"]
    from tests.helpers.common import validate_diff

    validate_diff(diff)
    assert [(c["key"], c["status"]) for c in diff["shape_chains"]["added"]] == [
        ("/Resize", "folds"),
        ("/Reshape", "folds"),
    ]
    metrics = {m["metric"]: (m["a"], m["b"]) for m in diff["metrics"]}
    assert metrics["node_count"] == (7, 21)
    assert metrics["nodes_after_folding"] == (7, 7)
    assert metrics["boundary_bytes"] == (21504, 21504)
    assert diff["a"]["verdict"] == result["verdict"] == "fail"
    none = {"npu": 0, "cpu": 0, "folded": 0}
    assert diff["placement_by_op"]["Shape"] == {"a": none, "b": {**none, "folded": 2}}
    from npu_gate.render import text

    assert (
        "  torchscript exporter (compared, not gated): +14 nodes, +0 after folding, "
        "+2 shape chains, +0 cpu nodes\n"
    ) in text.render(gated)


def test_exported_dynamic_batch_under_a_contract(run_cli: RunCli, write_contract: WriteContract,
                                                 tmp_path: Path) -> None:
    """The TorchScript export with a dynamic batch, gated with batch 1: both chains fold."""
    import shutil

    shutil.copy(EXAMPLE / "dynamic-batch.onnx", tmp_path / "model.onnx")
    contract = write_contract(
        {
            "model": {"onnx": "model.onnx"},
            "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}],
            "target": {"profile": "demo"},
        }
    )
    out = tmp_path / "r.json"
    assert run_cli("check", contract, "--json", out, "-q").code == 1
    doc = json.loads(out.read_text())
    assert [(c["consumer"], c["status"], c["fixed_by_contract"]) for c in doc["shape_chains"]] == [
        ("/Resize", "folds", ["images[0]"]),
        ("/Reshape", "folds", ["images[0]"]),
    ]
    s = doc["summary"]
    assert (s["node_count"], s["nodes_after_folding"], s["boundary_bytes"]) == (32, 7, 21504)
    placements = {n["name"]: n["placement"] for n in doc["nodes"]}
    assert placements["/Shape_2"] == placements["/Concat_1"] == "folded"
    assert doc["dynamic_dims"] == [
        {
            "input": "images",
            "dim": 0,
            "symbol": "batch",
            "contract": 1,
            "chains_folded_by_fixing": ["/Resize", "/Reshape"],
        }
    ]


def test_report_of_the_dynamic_batch_variant(run_cli: RunCli, tmp_path: Path, golden: Golden) -> None:
    """The whole Markdown report (but the measured Timings) of the exported dynamic-batch
    model: shape chains that stay, dynamic dims, and the fix's effect."""
    md = tmp_path / "report.md"
    code = run_cli("inspect", EXAMPLE / "dynamic-batch.onnx", "--markdown", md, "-q").code
    assert code == 1
    text = md.read_text(encoding="utf-8")
    golden("shape_variants_dynamic_batch.md", text[: text.index("### Timings")])
