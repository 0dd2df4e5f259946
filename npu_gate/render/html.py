"""The report as one self-contained HTML page, for reading outside GitHub (``--html PATH``).

The page is the Markdown report (``render.markdown``) turned into HTML, with the partition map
drawn as inline SVG instead of the ``mermaid`` block (no script, no network: it opens from a CI
artefact as it is). The Markdown report already escapes every model text as HTML entities, so
the conversion only turns its own markup (headings, tables, ``**bold**``, backticks, links,
lists, ``<details>``) into tags; text inside backticks and the SVG labels are escaped here.
The converter knows the subset ``render.markdown`` writes, nothing more.
"""

from __future__ import annotations

import html
import re

from npu_gate.escape import shorten, visible
from npu_gate.render import markdown, mermaid
from npu_gate.render.cells import size
from npu_gate.result.types import GateResult

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_STRIKE = re.compile(r"~~(.+?)~~")
_TICKS = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(((?:https?://|\.{0,2}/|[\w.-]+/)[^)\s\"'<>]*)\)")
_EMPH = re.compile(r"(?<![\w*])_([^_]+)_(?![\w*])")
_STYLE = """
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 72em;
       padding: 0 1em; color: #1f2328; }
table { border-collapse: collapse; margin: .6em 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; vertical-align: top; }
th { background: #f6f8fa; }
code { background: #eff1f3; padding: 0 .3em; border-radius: 4px; font-size: 90%; }
details { margin: .6em 0; } summary { cursor: pointer; font-weight: 600; }
svg text { font: 12px sans-serif; }
"""


def render(result: GateResult) -> str:
    """The whole page."""
    body = to_html(markdown.render(result), partition_svg(result))
    title = html.escape(visible(shorten(f"npu-gate: {result.verdict.upper()} · {result.name}")))
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">\n'
            f"<style>{_STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def to_html(text: str, svg: str = "") -> str:
    """Our Markdown subset as HTML; a ``mermaid`` block becomes ``svg``."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            if line.strip() == "```mermaid":
                out.append(svg)
            else:
                out.append("<pre>" + html.escape("\n".join(lines[i + 1:end])) + "</pre>")
            i = end + 1
            continue
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-| :]+\|$", lines[i + 1]):
            flush()
            rows = [line]
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            out.append(_table(rows))
            continue
        if m := re.match(r"^(#{1,4}) (.*)$", line):
            flush()
            level = len(m.group(1))
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
        elif line.startswith(("<details>", "</details>", "<summary>")) or line.startswith("<details><summary>"):
            flush()
            out.append(_details(line))
        elif line.startswith("- "):
            flush()
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif not line.strip():
            flush()
        else:
            paragraph.append(line)
        i += 1
    flush()
    return "\n".join(out)


def _details(line: str) -> str:
    """``<details><summary>TEXT</summary>`` lines as the Markdown writes them: the tags are ours,
    the summary text is converted like any other."""
    m = re.match(r"^<details><summary>(.*)</summary>(.*)$", line)
    if m:  # the partition map is the page's picture: shown open (a comment keeps it folded)
        tag = "<details open>" if m.group(1).startswith("Partition map") else "<details>"
        return f"{tag}<summary>{_inline(m.group(1))}</summary>{_inline(m.group(2))}"
    if line.startswith("</details>"):
        return "</details>" + _inline(line[len("</details>"):])
    return _inline(line)


def _table(rows: list[str]) -> str:
    def cells(row: str) -> list[str]:
        return [c.strip() for c in row.strip().strip("|").split("|")]

    head = "".join(f"<th>{_inline(c)}</th>" for c in cells(rows[0]))
    body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in cells(r)) + "</tr>" for r in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _inline(text: str) -> str:
    """Bold, strike, emphasis, code spans and links of our Markdown. Everything else is already
    entity-escaped text or one of our own tags (``<code>``, ``<br>``)."""
    text = _TICKS.sub(lambda m: f"<code>{html.escape(m.group(1), quote=False)}</code>", text)
    text = _LINK.sub(lambda m: f'<a href="{html.escape(m.group(2))}">{m.group(1)}</a>', text)
    text = _BOLD.sub(r"<b>\1</b>", text)
    text = _STRIKE.sub(r"<s>\1</s>", text)
    return _EMPH.sub(r"<i>\1</i>", text)


BOX_W, BOX_H, GAP_X, GAP_Y, PER_ROW = 230, 92, 70, 60, 4
_FILL = {"npu": ("#dff5e1", "#2b7a3d"), "cpu": ("#fbe0de", "#b3261e"), "more": ("#eeeeee", "#777777")}


def partition_svg(result: GateResult) -> str:
    """The partition map (``mermaid.layout``) as an inline SVG: boxes in execution order, rows of
    PER_ROW, an arrow per pair of partitions with the bytes crossing; "" without partitions."""
    if not result.partitions:
        return ""
    lay = mermaid.layout(result)
    where: dict[str, tuple[int, int]] = {}
    order = {box.id: k for k, box in enumerate(lay.boxes)}
    parts = []
    top = 46  # room for the arcs of edges that skip boxes
    for k, box in enumerate(lay.boxes):
        x, y = 10 + (k % PER_ROW) * (BOX_W + GAP_X), top + (k // PER_ROW) * (BOX_H + GAP_Y + top)
        where[box.id] = (x, y)
        fill, stroke = _FILL.get(box.device, _FILL["more"])
        parts.append(f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="{fill}" '
                     f'stroke="{stroke}"/>')
        texts = [box.title, *box.lines]
        if box.nodes:
            texts.append(", ".join(box.nodes))
        for j, line in enumerate(texts[:5]):
            weight = ' font-weight="bold"' if j == 0 else ""
            parts.append(f'<text x="{x + 8}" y="{y + 18 + j * 16}"{weight}>{_svg_text(line, 34)}</text>')
    for n, e in enumerate(lay.edges):
        (x1, y1), (x2, y2) = where[e.source], where[e.target]
        if y1 == y2 and order[e.target] == order[e.source] + 1:  # the next box: a straight arrow
            path = f"M{x1 + BOX_W},{y1 + BOX_H // 2} L{x2 - 4},{y2 + BOX_H // 2}"
            lx, ly = (x1 + BOX_W + x2) // 2, y1 + BOX_H // 2 - 6
        else:  # over the boxes between, above the rows (each such edge a little higher)
            lift = 14 + (n % 3) * 10
            cx1, cx2 = x1 + BOX_W // 2, x2 + BOX_W // 2
            path = f"M{cx1},{y1} C{cx1},{y1 - lift * 2} {cx2},{y2 - lift * 2} {cx2},{y2 - 4}"
            lx, ly = (cx1 + cx2) // 2, min(y1, y2) - lift - 4
        what = size(e.bytes) + (f" in {e.tensors} tensors" if e.tensors > 1 else "")
        parts.append(f'<path d="{path}" fill="none" stroke="#555" marker-end="url(#arrow)"/>')
        parts.append(f'<text x="{lx}" y="{ly}" text-anchor="middle">{_svg_text(what, 40)}</text>')
    rows = (len(lay.boxes) + PER_ROW - 1) // PER_ROW
    width = min(len(lay.boxes), PER_ROW) * (BOX_W + GAP_X) + 20
    height = rows * (BOX_H + GAP_Y + top) + 20
    marker = ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
              'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="partition map">{marker}{"".join(parts)}</svg>')


def _svg_text(text: str, limit: int) -> str:
    return html.escape(visible(shorten(text, limit)))
