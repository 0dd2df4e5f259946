"""GitHub's Markdown renderer (cmark-gfm) and the checks on what it renders: hostile model and
contract text, and whether any link, mention or reference survives in the HTML."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
import onnx
from cmarkgfm.cmark import Options
from onnx import TensorProto, helper

from npu_gate.escape import WORD_JOINER

HOSTILE = ("@octocat owner/repo#2 see #1 GH-3 https://evil.example/login www.evil.example "
           "mail a@b.example </details>")
VISIBLE = "@octocat owner/repo#2 see #1 GH-3 https://evil.example/login www.evil.example mail a@b.example"
SHORT = "@octocat #1 GH-3 https://evil.example www.evil.example"  # attribute values show 60 characters


def gfm(text: str) -> str:
    """GitHub's renderer, raw HTML kept (GitHub keeps <code> and <details> too)."""
    html: str = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
    return html


class _Balance(HTMLParser):
    TAGS = ("details", "summary", "code", "table", "tr", "td", "th")

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.TAGS:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.TAGS:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def assert_inert(rendered: str) -> None:
    """No link at all; outside <code> no mention, reference, URL or e-mail; tags balanced."""
    assert "<a " not in rendered
    outside = re.sub(r"<code>.*?</code>", "", rendered, flags=re.S)
    for pattern in (r"@\w", r"#\d", r"(?i)gh-\d", r"://", r"(?i)www\."):
        found = re.search(pattern, outside)
        assert found is None, f"{pattern!r} survives: ...{outside[max(found.start() - 60, 0):found.end() + 20]}"
    balance = _Balance()
    balance.feed(rendered)
    assert balance.problems == [] and balance.stack == []


def readable(rendered: str) -> str:
    """What a reader sees: tags dropped, entities decoded, word joiners removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace(WORD_JOINER, "")


def hostile_model() -> onnx.ModelProto:
    """A Relu named HOSTILE whose declared output shape is wrong (onnx's checker quotes the
    name in its message) and a custom op whose type is HOSTILE and string attribute SHORT."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["y"], name=HOSTILE),
             helper.make_node("Op" + HOSTILE, ["x"], ["z"], name="custom", domain="evil.domain", note=SHORT)]
    graph = helper.make_graph(nodes, "g", [x], [y, z])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("evil.domain", 1)])
    model.ir_version = 8
    return model


def write_case(folder: Path, model: onnx.ModelProto) -> Path:
    folder.mkdir()
    (folder / "m.onnx").write_bytes(model.SerializeToString())
    contract = {"name": HOSTILE, "model": {"onnx": "m.onnx"}, "target": {"profile": "demo"},
                "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
                "waivers": [{"rule": "unsupported-op", "op_type": "Relu", "reason": HOSTILE},
                            {"rule": "op-constraint", "node": HOSTILE, "reason": "unused"}]}
    (folder / "npu-gate.json").write_text(json.dumps(contract), encoding="utf-8")
    return folder
