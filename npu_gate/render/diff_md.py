"""Markdown and terminal views of a ``diff.diff_results`` dict. Pure: they only read it."""

from __future__ import annotations

from typing import Any

from npu_gate.escape import md, md_code, term
from npu_gate.render.cells import short, size, table, tensor

MAX_NAMES = 30


def render(d: dict[str, Any], title: str = "npu-gate diff") -> str:
    a, b = d["a"], d["b"]
    head = f"## {md(title)}: {md_code(a['label'])} → {md_code(b['label'])}\n\n"
    return head + render_body(d)


def render_body(d: dict[str, Any], level: str = "###") -> str:
    """Everything below the title; ``level`` is the Markdown heading of each section."""
    if d["identical"]:
        return "No differences in the graph, placement, partitions or shape chains.\n"
    parts = [
        _sides(d["a"], d["b"]),
        _metrics(d),
        _ops(d),
        _added_removed(d),
        _placements(d),
        _placement_by_op(d),
        _chains(d),
        _changed(d),
    ]
    text = "\n\n".join(p for p in parts if p) + "\n"
    # Every section heading starts a line; model text cannot (md() escapes "#").
    return text.replace("\n### ", f"\n{level} ")


def render_text(d: dict[str, Any]) -> str:
    a, b = d["a"], d["b"]
    lines = [f"npu-gate diff: {term(a['label'])} -> {term(b['label'])}"]
    if d["identical"]:
        return lines[0] + ": no differences\n"
    for m in d["metrics"]:
        if m["a"] != m["b"]:
            show = size if m["metric"].endswith("_bytes") else _v
            lines.append(f"  {m['metric']}: {show(m['a'])} -> {show(m['b'])}")
    for op, c in d["ops"].items():
        lines.append(f"  op {term(op)}: {c['a']} -> {c['b']}")
    lines.append(
        f"  nodes: {len(d['nodes_added'])} added, {len(d['nodes_removed'])} removed, "
        f"{len(d['nodes_changed'])} changed, {len(d['placement_changes'])} moved"
    )
    ch = d["shape_chains"]
    lines.append(
        f"  shape chains: {len(ch['added'])} added, {len(ch['removed'])} removed, "
        f"{len(ch['changed'])} changed"
    )
    return "\n".join(lines) + "\n"


def _v(value: Any) -> str:
    return "unknown" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _sides(a: dict[str, Any], b: dict[str, Any]) -> str:
    def source(s: dict[str, Any]) -> str:
        text = md(s["source"] or "?")
        if s.get("exporter"):
            text += f" ({md(s['exporter'])} exporter)"
        return text

    rows = [
        ["source", source(a), source(b)],
        ["opset", _v(a["opset"]), _v(b["opset"])],
        ["profile", _profile(a), _profile(b)],
        ["verdict", md(a["verdict"] or "?"), md(b["verdict"] or "?")],
    ]
    return table(["", "A", "B"], rows)


def _profile(side: dict[str, Any]) -> str:
    """The profile's name and the evidence its placements rest on, as every report shows it."""
    text = md(side["profile"] or "?")
    return f"{text} ({md(side['evidence'])})" if side.get("evidence") else text


def _metrics(d: dict[str, Any]) -> str:
    rows = []
    for m in d["metrics"]:
        if m["a"] is None and m["b"] is None:
            continue
        if m["metric"].endswith("_bytes"):  # bytes read better with their unit beside them
            a, b = size(m["a"]), size(m["b"])
            delta = "" if m["delta"] is None else size(m["delta"], signed=True) if m["delta"] else "="
        else:
            a, b = _v(m["a"]), _v(m["b"])
            delta = "" if m["delta"] is None else f"{m['delta']:+,}" if m["delta"] else "="
        rows.append([m["metric"], a, b, delta])
    return "### Summary\n\n" + table(["", "A", "B", "delta"], rows)


def _ops(d: dict[str, Any]) -> str:
    if not d["ops"]:
        return "### Op census\n\nSame ops, same counts."
    rows = [
        [md_code(op), str(c["a"]), str(c["b"]), f"{c['delta']:+d}"] for op, c in d["ops"].items()
    ]
    return "### Op census\n\n" + table(["op", "A", "B", "delta"], rows)


def _names(nodes: list[dict[str, Any]]) -> str:
    shown = ", ".join(f"{md_code(n['name'])} ({md(n['op_type'])})" for n in nodes[:MAX_NAMES])
    if len(nodes) > MAX_NAMES:
        shown += f" and {len(nodes) - MAX_NAMES} more"
    return shown


def _added_removed(d: dict[str, Any]) -> str:
    lines = ["### Nodes (matched by name)", ""]
    lines.append(f"- added in B ({len(d['nodes_added'])}): {_names(d['nodes_added']) or 'none'}")
    lines.append(
        f"- removed from A ({len(d['nodes_removed'])}): {_names(d['nodes_removed']) or 'none'}"
    )
    return "\n".join(lines)


def _placements(d: dict[str, Any]) -> str:
    if not d["placement_changes"]:
        return ""
    rows = [
        [md_code(p["name"]), md(p["op_type"]), p["a"], p["b"], md("; ".join(p["reasons"]))]
        for p in d["placement_changes"]
    ]
    return "### Placement changes\n\n" + table(["node", "op", "A", "B", "reason in B"], rows)


def _placement_by_op(d: dict[str, Any]) -> str:
    by_op = d.get("placement_by_op") or {}
    if not by_op:
        return ""

    def cell(c: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in c.items() if v) or "none"

    rows = [[md_code(op), cell(c["a"]), cell(c["b"])] for op, c in by_op.items()]
    return "### Placement by op\n\n" + table(["op", "A", "B"], rows)


def _chains(d: dict[str, Any]) -> str:
    ch = d["shape_chains"]
    if not any(ch.values()):
        return ""
    rows = []
    for c in ch["added"]:
        rows.append([md_code(c["key"]), "added", "", c["status"], _list(c["nodes"])])
    for c in ch["removed"]:
        rows.append([md_code(c["key"]), "removed", c["status"], "", _list(c["nodes"])])
    for c in ch["changed"]:
        rows.append([md_code(c["key"]), "changed", c["a"], c["b"], _list(c["nodes_b"])])
    return "### Shape chains\n\n" + table(["consumer", "change", "A", "B", "nodes"], rows)


def _list(names: list[str]) -> str:
    return ", ".join(md_code(n) for n in names[:12]) + (
        f" and {len(names) - 12} more" if len(names) > 12 else ""
    )


def _shape(t: dict[str, Any] | None) -> str:
    return "absent" if t is None else tensor(t)


def _changed(d: dict[str, Any]) -> str:
    if not d["nodes_changed"]:
        return ""
    rows = []
    for c in d["nodes_changed"]:
        name = md_code(c["name"])
        if "op_type" in c:
            rows.append([name, "op", md(c["op_type"]["a"]), md(c["op_type"]["b"])])
        for key, v in c.get("attributes", {}).items():
            rows.append([name, f"attribute {md(key)}", md(_value(v["a"])), md(_value(v["b"]))])
        for t in c.get("tensors", []):
            rows.append([name, f"{t['io']} {t['index']}", _shape(t["a"]), _shape(t["b"])])
    return "### Changed nodes\n\n" + table(["node", "what", "A", "B"], rows)


def _value(value: Any) -> str:
    return "absent" if value is None else short(value)
