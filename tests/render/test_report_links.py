"""`--markdown P` next to an evidence bundle: P's links into the bundle resolve from P's folder."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from tests.helpers import model_zoo

LINK = re.compile(r"\]\(([^)\s]+)\)")
MINIMAL = [
    "minimal/01-unsupported-op-Relu.onnx",
    "minimal/02-unsupported-op-Clip.onnx",
    "minimal/03-unsupported-op-Sigmoid.onnx",
]


def _minimal_links(report: Path) -> list[str]:
    return [t for t in LINK.findall(report.read_text(encoding="utf-8")) if "minimal" in t]


def _resolve(report: Path, target: str) -> Path:
    return (report.parent / unquote(target)).resolve()


@pytest.mark.parametrize(("out", "markdown", "prefix"), [
    ("pb", "p.md", "pb/"),
    ("pb", "reports/p.md", "../pb/"),
    ("work/pb", "work/p.md", "pb/"),
    ("pb", "pb/copy.md", ""),
    ("my out (1)", "p.md", "my%20out%20%281%29/"),
])
def test_inspect_markdown_links_resolve_from_the_report(
    tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
    out: str, markdown: str, prefix: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.onnx").write_bytes(model_zoo.diamond().SerializeToString())
    (tmp_path / markdown).parent.mkdir(parents=True, exist_ok=True)
    run = run_cli("inspect", "m.onnx", "--out", out, "--markdown", markdown, "-q")
    assert run.code == 1
    report = tmp_path / markdown
    assert _minimal_links(report) == [prefix + m for m in MINIMAL]
    assert [_resolve(report, t) for t in _minimal_links(report)] == [(tmp_path / out / m).resolve() for m in MINIMAL]
    # the bundle's own report.md links from inside the bundle, and the JSON stays bundle-relative
    assert _minimal_links(tmp_path / out / "report.md") == MINIMAL
    doc = json.loads((tmp_path / out / "result.json").read_text(encoding="utf-8"))
    assert [m["path"] for m in doc["minimal"]["models"]] == MINIMAL


def _contract(folder: Path) -> Path:
    folder.mkdir()
    (folder / "model.onnx").write_bytes(model_zoo.diamond().SerializeToString())
    doc = {"name": "t", "model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "x", "shape": [1, 4, 8, 8], "dtype": "float32"}], "numerics": {"samples": 0}}
    (folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder / "npu-gate.json"


@pytest.mark.parametrize("extra", [[], ["--fail-on", "never"]])  # the plain report and the ratchet's
def test_check_bundle_markdown_links_resolve_from_the_report(
    tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    contract = _contract(tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    run = run_cli("check", contract, "--bundle", "--markdown", "reports/p.md", "-q", *extra)
    assert run.code == (0 if extra else 1)
    report = tmp_path / "reports" / "p.md"
    links = _minimal_links(report)
    assert links and all(t.startswith("../npu-gate-out/t/minimal/") for t in links)
    assert all(_resolve(report, t).is_file() for t in links)


def test_merged_report_links_into_each_bundle_or_names_the_path(
    tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`npu-gate merge`: a bundle's own result.json gets links from the merged report's folder
    into that bundle; a result JSON away from its bundle (copied, or inside a merged document)
    names its minimal models' paths as text, since no link could resolve."""
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b"):
        (tmp_path / f"{name}.onnx").write_bytes(model_zoo.diamond().SerializeToString())
        assert run_cli("inspect", f"{name}.onnx", "--out", f"out/{name}", "-q").code == 1
    (tmp_path / "copied.json").write_bytes((tmp_path / "out" / "b" / "result.json").read_bytes())
    (tmp_path / "reports").mkdir()
    run = run_cli("merge", "out/a/result.json", "copied.json", "--markdown", "reports/all.md",
                  "--json", "all.json", "-q")
    assert run.code == 1
    report = tmp_path / "reports" / "all.md"
    assert _minimal_links(report) == ["../out/a/" + m for m in MINIMAL]
    assert all(_resolve(report, t).is_file() for t in _minimal_links(report))
    b = report.read_text(encoding="utf-8").split("· b\n")[1].split("### Minimal failing models")[1]
    assert "Model paths are inside the model's evidence bundle (its `--out`/`--bundle` folder)." in b
    assert [line.split("|")[4].strip() for line in b.splitlines() if "| `unsupported-op`" in line] == [
        f"<code>{m}</code>" for m in MINIMAL]
    # read back from a merged document, no result sits in its bundle
    run = run_cli("merge", "all.json", "--markdown", "again.md", "-q")
    assert _minimal_links(tmp_path / "again.md") == []
    # a merged report written into the bundle itself links as the bundle's report.md does
    run = run_cli("merge", "out/a/result.json", "--markdown", "out/a/merged.md", "-q")
    assert _minimal_links(tmp_path / "out" / "a" / "merged.md") == MINIMAL
