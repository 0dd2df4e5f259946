"""examples/custom-profile: a team profile extending ort-nnapi, and a model whose Conv
breaks three constraints at once; the report lists all three with their actual values."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path

from tests.helpers.common import REPO, CliRun, validate_result

EXAMPLE = REPO / "examples" / "custom-profile"


def test_checked_in_model_matches_its_script() -> None:
    spec = importlib.util.spec_from_file_location("make_model", EXAMPLE / "make_model.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (EXAMPLE / "model.onnx").read_bytes() == module.build().SerializeToString()


def test_report_lists_all_three_conv_failures(
    tmp_path: Path, run_cli: Callable[..., CliRun], golden: Callable[[str, str], None]
) -> None:
    r = run_cli("check", EXAMPLE, "--json", tmp_path / "r.json", "--markdown", tmp_path / "r.md")
    assert r.code == 1
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    validate_result(doc)
    assert doc["profile"]["extends"] == ["ort-nnapi"]
    conv = [
        (f["constraint"], f["actual"], f["allowed"], f["message"])
        for f in doc["findings"]
        if f.get("node") == "conv0"
    ]
    assert conv == [
        ("conv-stride", [3, 3], [1, 2], "conv-stride: stride [3, 3] not in {1, 2}"),
        ("conv-square-kernel", [3, 5], "all elements equal", "conv-square-kernel: kernel [3, 5] is not square"),
        (
            "conv-group",
            2,
            [1, 16],
            "conv-group: group 2: dense (1) or depthwise (input channels) only, allowed [1, 16]",
        ),
    ]
    assert [
        (f["rule"], f.get("node")) for f in doc["findings"] if f["rule"] == "unsupported-op"
    ] == [("unsupported-op", "resize0")]
    placed = {n["name"]: n["placement"] for n in doc["nodes"]}
    assert placed == {"conv0": "cpu", "relu0": "npu", "resize0": "cpu", "sigmoid0": "npu"}
    report = (tmp_path / "r.md").read_text(encoding="utf-8")
    section = report[report.index("### CPU fallback") : report.index("### Partitions")]
    golden("custom_profile_cpu_fallback.md", section)


def test_explain_a_constraint_of_a_profile_file(run_cli: Callable[..., CliRun]) -> None:
    r = run_cli("explain", f"{EXAMPLE / 'team-npu.json'}:conv-group")
    assert r.code == 0
    assert r.out.splitlines()[:3] == [
        "conv-group (constraint of Conv in profile team-npu, illustrative)",
        "",
        "attribute group: in {1, input 0 dim 1}.",
    ]
