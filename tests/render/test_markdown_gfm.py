"""Model and contract text rendered by GitHub's Markdown (cmark-gfm): no link, mention or reference.

GitHub decodes entities before it links, so these tests read the rendered HTML, not the
Markdown source: outside <code> (where GitHub neither mentions nor references) no ``@name``,
``#1``, ``GH-3`` or URL survives intact, nothing anywhere becomes a link, and every
<details>/<code>/table element we open is closed.
"""

from __future__ import annotations

import re
from pathlib import Path

import onnx

from npu_gate.escape import md, md_code
from tests.helpers.common import RunCli, SaveModel
from tests.helpers.gfm import HOSTILE, SHORT, VISIBLE, assert_inert, gfm, hostile_model, readable, write_case


def test_plain_text_breaks_every_trigger() -> None:
    rendered = gfm(md(HOSTILE))
    assert_inert(rendered)
    assert VISIBLE in readable(rendered)
    # Dates, negative numbers and ordinary words are left alone.
    assert md("2027-03-01 (-1) Conv-k3") == "2027-03-01 &#40;-1&#41; Conv-k3"


def test_code_breaks_links_but_keeps_names_copyable() -> None:
    rendered = gfm(md_code("Relu#0 @scope/x " + HOSTILE))
    assert_inert(rendered)
    code = re.findall(r"<code>(.*?)</code>", rendered, flags=re.S)
    # GitHub does not mention or reference inside <code>: those stay as typed.
    assert code[0].startswith("Relu#0 @scope/x @octocat owner/repo#2 see #1 GH-3 ")
    assert VISIBLE in readable(rendered)


def test_bidi_and_invisible_characters_show_as_escapes() -> None:
    # An entity such as &#8238; still renders as U+202E, which reverses the rest of the line
    # ("op Relu not in profile" after the name); a zero-width space makes two names look alike.
    name = "a\u202egnp.exe\u200bb\x1b]0;t\x07\u2066c"
    for rendered in (gfm(f"| x |\n| --- |\n| {md(name)} op Relu |\n"), gfm(md_code(name))):
        assert not any(ch in rendered for ch in "\u202e\u200b\x1b\x07\u2066")
        assert "a\\u202egnp.exe\\u200bb\\x1b]0;t\\x07\\u2066c" in readable(rendered)


def test_check_report_renders_inert(tmp_path: Path, run_cli: RunCli) -> None:
    case = write_case(tmp_path / "case", hostile_model())
    run = run_cli("check", case, "--markdown", tmp_path / "r.md", "--json", tmp_path / "r.json")
    assert run.code == 1
    report = (tmp_path / "r.md").read_text(encoding="utf-8")
    rendered = gfm(report)
    assert_inert(rendered)
    seen = readable(rendered)
    # The hostile text reaches every kind of place, readable: the heading (contract name), the
    # waiver reason, onnx's message quoting the node, the custom op in a message, the unused
    # waiver's message, and the attribute value in the shapes table.
    assert f"FAIL · {VISIBLE}" in seen
    assert f"waived: {VISIBLE}" in seen
    assert f"node name: {VISIBLE}" in seen
    assert f"op evil.domain::Op{VISIBLE}" in seen
    assert f"node={VISIBLE}" in seen
    assert f"note={SHORT}" in seen

    # A baseline comparison lists the same findings as new (render/report.py).
    plain = onnx.ModelProto()
    plain.CopyFrom(hostile_model())
    del plain.graph.node[1:]
    del plain.graph.output[1:]
    plain.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 4
    base = write_case(tmp_path / "base", plain)
    run_cli("check", base, "--json", tmp_path / "base.json", "-q")
    run = run_cli("merge", tmp_path / "r.json", "--baseline", tmp_path / "base.json", "--markdown", tmp_path / "m.md")
    merged = gfm((tmp_path / "m.md").read_text(encoding="utf-8"))
    assert "New findings:" in merged
    assert_inert(merged)
    assert f"node name: {VISIBLE}" in readable(merged.split("New findings:")[1])


def test_diff_report_renders_inert(tmp_path: Path, run_cli: RunCli, save_model: SaveModel) -> None:
    a = save_model(hostile_model(), "a.onnx")
    other = hostile_model()
    other.graph.node[1].attribute[0].s = b"plain"
    b = save_model(other, "b.onnx")
    run = run_cli("diff", a, b, "--markdown", tmp_path / "d.md")
    assert run.code == 1
    rendered = gfm((tmp_path / "d.md").read_text(encoding="utf-8"))
    assert "Changed nodes" in rendered
    assert_inert(rendered)
    assert f"attribute note\n{SHORT}\nplain" in readable(rendered.split("Changed nodes")[1])
