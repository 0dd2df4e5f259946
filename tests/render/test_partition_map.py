"""The partition map (render.mermaid) in the Markdown report, and the HTML page (render.html)
that draws it as SVG: exact output on the seed net, escaping of hostile names, large graphs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from npu_gate.render import html, markdown, mermaid
from npu_gate.result.read import result_from_dict
from npu_gate.result.types import GateResult, NodeResult, PartitionResult
from tests.helpers.common import REPO, Golden

SEED = REPO / "tests" / "golden" / "seed-onnx.json"
HOSTILE = '"]; click P0 "javascript:alert(1)"\n```\n<img src=x onerror=alert(1)>'


def _seed() -> GateResult:
    return result_from_dict(json.loads(SEED.read_text(encoding="utf-8")))


def test_seed_map_is_exact() -> None:
    assert mermaid.partition_map(_seed()) == "\n".join([
        "```mermaid",
        "flowchart LR",
        '  subgraph P0["NPU partition 0: 2 nodes"]',
        '    P0_0["/conv/Conv"]',
        '    P0_1["/Add"]',
        "  end",
        "  style P0 fill:#dff5e1,stroke:#2b7a3d,color:#111",
        '  subgraph P1["CPU partition 1: 1 node"]',
        '    P1_0["/Clip<br/>Clip not in the profile"]',
        "  end",
        "  style P1 fill:#fbe0de,stroke:#b3261e,color:#111",
        '  subgraph P2["NPU partition 2: 2 nodes"]',
        '    P2_0["/Mul"]',
        '    P2_1["/Div"]',
        "  end",
        "  style P2 fill:#dff5e1,stroke:#2b7a3d,color:#111",
        '  P0 -->|"4,096 (4 KiB)"| P1',
        '  P0 -->|"4,096 (4 KiB)"| P2',
        '  P1 -->|"4,096 (4 KiB)"| P2',
        "```"])


def test_the_markdown_report_has_the_map_folded_in_the_partitions_section() -> None:
    report = markdown.render(_seed())
    section = report[report.index("### Partitions"):]
    assert section.startswith("### Partitions\n\n<details><summary>Partition map (execution order; bytes crossing "
                              "on the edges)</summary>\n\n```mermaid\nflowchart LR\n")


def _hostile_result() -> GateResult:
    doc = json.loads(SEED.read_text(encoding="utf-8"))
    result = result_from_dict(doc)
    old = "/Clip"
    for n in result.nodes:
        if n.name == old:
            n.name = HOSTILE
    for p in result.partitions:
        p.nodes = [HOSTILE if x == old else x for x in p.nodes]
    for f in result.findings:
        if f.node == old:
            f.node = HOSTILE
            f.op_type = HOSTILE
    return result


def test_model_text_cannot_break_out_of_a_label_or_the_block() -> None:
    block = mermaid.partition_map(_hostile_result())
    assert block.count("```") == 2 and block.startswith("```mermaid\n") and block.endswith("\n```")
    labels = re.findall(r'\["([^"]*)"\]', block)
    assert len(labels) == 8  # three partitions and five nodes: no label was split or added
    assert all(line.count('"') in (0, 2) for line in block.splitlines())  # no quote from the model
    assert "javascript" in block and "click" in block  # as text, inside labels ...
    for line in block.splitlines():  # ... never as a statement of its own
        assert not line.strip().startswith("click")
    assert "<img" not in block and "\n```\n" not in block
    assert '″⟧; click P0 ″javascript:alert(1)″?ˋˋˋ?‹img src=x onerror=alert(1)› not in the profile' in block


def test_large_graphs_show_partitions_not_nodes_and_never_drop_the_map() -> None:
    result = _seed()
    result.nodes = [NodeResult(f"n{i}", "Relu", "", [], [], {}, [], "npu" if i % 2 else "cpu", [], i)
                    for i in range(70)]
    result.partitions = [PartitionResult(i, "npu" if i % 2 else "cpu", [f"n{i}"]) for i in range(70)]
    result.boundaries = []
    result.findings = []
    lay = mermaid.layout(result)
    assert not lay.node_level and lay.hidden == 70 - mermaid.MAX_BOXES
    assert [b.id for b in lay.boxes][-2:] == [f"P{mermaid.MAX_BOXES - 1}", "MORE"]
    block = mermaid.partition_map(result)
    assert "subgraph" not in block and '  MORE["<b>10 more partitions (in the JSON result)</b>"]' in block
    assert '  P1["<b>NPU partition 1: 1 node</b><br/>Relu"]' in block


def test_the_html_page_is_self_contained_and_escaped(golden: Golden) -> None:
    page = html.render(_seed())
    golden("seed-onnx.html", page)
    assert "<script" not in page and "mermaid" not in page and "http-equiv=\"Content-Security-Policy\"" in page
    assert page.count("<rect") == 3 and page.count("marker-end=") == 3
    hostile = html.render(_hostile_result())
    assert "<img" not in hostile and "onerror=alert(1)>" not in hostile.replace("&gt;", "")
    assert "<script" not in hostile


@pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on this machine (apt install chromium)")
def test_the_html_page_renders_in_headless_chromium(tmp_path: Path) -> None:
    """The documented check (docs/development.md): the page opens in a real browser and paints."""
    page = tmp_path / "report.html"
    page.write_text(html.render(_seed()), encoding="utf-8")
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a painted page, not a blank one
