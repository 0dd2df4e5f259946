"""A picture of the partitions: NPU and CPU partitions as boxes in execution order, the bytes
crossing between them on the edges, the CPU-fallback reasons on the CPU boxes.

GitHub renders a ``mermaid`` code block in comments; ``partition_map`` writes one. Small graphs
show their nodes inside each partition; above ``NODE_LEVEL_MAX`` nodes the map shows partitions
only (never dropped: partitions are few where nodes are many), and above ``MAX_BOXES`` partitions
it keeps the first ones and says how many more there are. ``layout`` gives the same picture as
plain data, which the HTML page draws as SVG.

Every label is model text: ``label`` keeps letters, digits and a few safe characters and writes
each character Mermaid or Markdown could read as syntax as a look-alike that is not (``"`` as
U+2033, ``#`` as U+FF03, a backtick as U+02CB...), control and format characters as ``?``: a name
cannot close the quotes, the code block or a label, nor inject a statement. (Mermaid's own
``#NNN;`` entities are not used: Mermaid 11 leaves them undecoded, seen in headless Chromium.)
Box ids are ours (``P3``, ``P3_0``), never the model's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from npu_gate.escape import shorten
from npu_gate.render.cells import size
from npu_gate.result.types import CPU, GateResult

NODE_LEVEL_MAX = 40  # placed nodes up to which the map shows nodes inside partitions
MAX_BOXES = 60  # partitions drawn; more are counted in a last box
_SAFE = frozenset(" ._-,:;/()=+*%'!?@$^~…")
_LOOKALIKE = {'"': "″", "#": "＃", "`": "ˋ", "<": "‹", ">": "›", "[": "⟦", "]": "⟧", "{": "❴", "}": "❵",
              "|": "¦", "&": "＆", "\\": "＼"}


@dataclass
class Box:
    id: str
    device: str  # npu | cpu | more
    title: str
    lines: list[str] = field(default_factory=list)  # op counts, or node names; CPU reasons
    nodes: list[str] = field(default_factory=list)  # node-level maps: the partition's nodes


@dataclass
class Edge:
    source: str
    target: str
    bytes: int | None
    tensors: int


@dataclass
class Layout:
    boxes: list[Box]
    edges: list[Edge]
    node_level: bool
    hidden: int  # partitions not drawn


def label(text: object, limit: int = 60) -> str:
    """Model text made safe inside a quoted Mermaid label."""
    return "".join(ch if ch.isalnum() or ch in _SAFE else _LOOKALIKE.get(ch, "?") for ch in shorten(text, limit))


def layout(result: GateResult) -> Layout:
    """The boxes and edges of the map, in execution (partition id) order."""
    nodes = {n.name: n for n in result.nodes}
    placed = sum(len(p.nodes) for p in result.partitions)
    node_level = placed <= NODE_LEVEL_MAX
    shown = result.partitions[:MAX_BOXES]
    reasons = _cpu_reasons(result)
    boxes = []
    for p in shown:
        ops = Counter(nodes[name].op_type if name in nodes else "?" for name in p.nodes)
        noun = "node" if len(p.nodes) == 1 else "nodes"
        box = Box(id=f"P{p.id}", device=p.device, title=f"{p.device.upper()} partition {p.id}: {len(p.nodes)} {noun}")
        box.lines = [", ".join(f"{op}×{k}" if k > 1 else op for op, k in ops.most_common(4))
                     + (f" and {len(ops) - 4} more op types" if len(ops) > 4 else "")]
        if p.device == CPU:
            why = Counter(r for name in p.nodes for r in reasons.get(name, []))
            box.lines += [f"CPU: {r}" + (f" ×{k}" if k > 1 else "") for r, k in why.most_common(3)]
        if node_level:
            box.nodes = list(p.nodes)
        boxes.append(box)
    hidden = len(result.partitions) - len(shown)
    if hidden:
        boxes.append(Box(id="MORE", device="more", title=f"{hidden} more partitions (in the JSON result)"))
    drawn = {b.id for b in boxes}
    pairs: dict[tuple[str, str], list[int | None]] = {}
    for b in result.boundaries:
        key = (f"P{b.source}", f"P{b.target}")
        if key[0] in drawn and key[1] in drawn:
            pairs.setdefault(key, []).append(b.bytes)
    edges = [Edge(s, t, None if None in sizes else sum(x or 0 for x in sizes), len(sizes))
             for (s, t), sizes in pairs.items()]
    return Layout(boxes, edges, node_level, hidden)


def partition_map(result: GateResult) -> str:
    """The ``mermaid`` block of the map, or "" when there are no partitions."""
    if not result.partitions:
        return ""
    lay = layout(result)
    lines = ["```mermaid", "flowchart LR"]
    why = _cpu_reasons(result) if lay.node_level else {}
    for box in lay.boxes:
        fill, stroke = _COLOURS[box.device]
        if box.nodes:  # a one-line title (Mermaid draws a subgraph's title over its nodes)
            lines.append(f'  subgraph {box.id}["{label(box.title)}"]')
            for i, name in enumerate(box.nodes):
                reason = "<br/>" + label("; ".join(why[name]), 120) if name in why else ""
                lines.append(f'    {box.id}_{i}["{label(name)}{reason}"]')
            lines.append("  end")
            lines.append(f"  style {box.id} fill:{fill},stroke:{stroke},color:#111")
        else:
            text = "<br/>".join([f"<b>{label(box.title)}</b>", *(label(line, 120) for line in box.lines)])
            lines.append(f'  {box.id}["{text}"]')
            lines.append(f"  style {box.id} fill:{fill},stroke:{stroke},color:#111")
    for e in lay.edges:
        what = size(e.bytes) + (f" in {e.tensors} tensors" if e.tensors > 1 else "")
        lines.append(f'  {e.source} -->|"{label(what)}"| {e.target}')
    lines.append("```")
    return "\n".join(lines)


_COLOURS = {"npu": ("#dff5e1", "#2b7a3d"), "cpu": ("#fbe0de", "#b3261e"), "more": ("#eeeeee", "#777777")}


def _cpu_reasons(result: GateResult) -> dict[str, list[str]]:
    """Node name -> why it runs on CPU, in a few words (the active placement findings)."""
    out: dict[str, list[str]] = {}
    for f in result.findings:
        if f.node and f.rule in ("unsupported-op", "op-constraint", "profile-limit") and not f.waived:
            what = f"{f.op_type} not in the profile" if f.rule == "unsupported-op" else f"{f.constraint}"
            out.setdefault(f.node, []).append(what)
    return out
