"""Tables and cells as a reader takes them in: a GitHub table of at most ``MAX_ROWS`` rows, a
byte count with its unit beside it, many node names as how many and the first few, a tensor,
a value in one short line."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from npu_gate.escape import md, md_code
from npu_gate.graph.source import Source, describe
from npu_gate.result.types import Finding, NodeResult, TensorEntry

_UNITS = ("KiB", "MiB", "GiB", "TiB")
MAX_ROWS = 200  # per table; the JSON result always has everything
MAX_NAMES = 5  # node names in one cell of a row that stands for several nodes


def size(value: int | None, *, signed: bool = False) -> str:
    """Bytes: ``12,288 (12 KiB)``; below 1 KiB the number alone; None is "unknown".
    ``signed``: a change, ``+32,768 (+32 KiB)``."""
    if value is None:
        return "unknown"
    text = f"{value:+,}" if signed else f"{value:,}"
    scaled, unit = float(abs(value)), ""
    for name in _UNITS:
        if round(scaled, 1) < 1024:
            break
        scaled, unit = scaled / 1024, name
    if not unit:
        return text
    sign = "-" if value < 0 else "+" if signed else ""
    return f"{text} ({sign}{f'{scaled:.1f}'.removesuffix('.0')} {unit})"


def number(value: float | None) -> str:
    """A measured number (an error, a metric value) to three significant digits; None is n/a."""
    return "n/a" if value is None else f"{value:.3g}"


def node_names(nodes: Sequence[str | None], where: Mapping[str, str] | None = None) -> str:
    """The node cell of a row that stands for several findings or nodes: one name, or how many
    and the first MAX_NAMES of them. ``where``: node name -> its PyTorch source (``sources``),
    shown first (the reader wrote the Python, not the graph), distinct lines once each."""
    names = [md_code(n) for n in nodes if n]
    shown = ", ".join(names[:MAX_NAMES]) + (f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")
    lines = list(dict.fromkeys(where[n] for n in nodes if n and where and n in where))
    code = "; ".join(md(line) for line in lines[:MAX_NAMES]) + (
        f" and {len(lines) - MAX_NAMES} more places" if len(lines) > MAX_NAMES else "")
    if len(nodes) == 1:
        return f"{code}: {shown}" if code else shown
    what = "nodes" if len(names) == len(nodes) else "findings"
    return f"{len(nodes)} {what}" + (f" at {code}" if code else "") + (f": {shown}" if shown else "")


def sources(nodes: Iterable[NodeResult]) -> dict[str, str]:
    """Node name -> where it came from in the PyTorch code (``models/zoo.py:72 TinyUNet.up
    (Upsample)``), for the nodes whose model says so."""
    out = {}
    for n in nodes:
        described = describe(cast("Source", n.source)) if n.source else None
        if described:
            out[n.name] = described
    return out


def row_key(f: Finding) -> tuple[Any, ...]:
    """What the findings of one row (or terminal line) share besides rule and severity: the
    message, or a dynamic-shape finding's root cause (one dynamic batch dim is one row, not one
    per node)."""
    return ("cause", *f.cause) if f.cause else ("message", f.message)


def row_message(same: Sequence[Finding]) -> str:
    """The message of a row of findings sharing ``row_key`` (plain text: the caller escapes)."""
    f = same[0]
    if not f.cause or len(same) == 1:
        return f.message
    return f"output shapes not static at {len(same)} nodes, all following from {', '.join(f.cause)}"


def table(headers: list[str], rows: list[list[Any]], total: int | None = None) -> str:
    """A GitHub table of at most MAX_ROWS rows; ``total`` counts rows not even built."""
    from tabulate import tabulate  # Markdown only: the terminal summary has no table

    shown = rows[:MAX_ROWS]
    text: str = tabulate(shown, headers=headers, tablefmt="github", disable_numparse=True)
    hidden = (total if total is not None else len(rows)) - len(shown)
    if hidden > 0:
        text += f"\n\n_{hidden} more rows in the JSON result._"
    return text


def tensor(t: TensorEntry | dict[str, Any]) -> str:
    """Name, dims joined by a multiplication sign, dtype; a scalar's shape is ``[]``, a dim
    not known ``?``, a tensor known by name only ``(unknown)``."""
    if t["shape"] is None and t["dtype"] is None:
        return f"{md_code(t['name'])} (unknown)"
    if t["shape"] is None:
        shape = "(shape unknown)"
    else:
        shape = md("×".join("?" if d is None else str(d) for d in t["shape"]) or "[]")
    dtype = md(t["dtype"]) if t["dtype"] else "(dtype unknown)"
    return f"{md_code(t['name'])} {shape} {dtype}"


def short(value: Any) -> str:
    """A value in one line of at most 60 characters; lists and dicts (a Constant's value) as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def metric_values(metric: dict[str, Any], esc: Callable[[str], str]) -> str:
    """A task metric's values in a few words (or its error)."""
    if "error" in metric:
        return f"error: {esc(metric['error'])}"
    values = ", ".join(f"{esc(k)} {v:.4g}" for k, v in metric["values"].items())
    return f"{values} ({'passed' if metric['passed'] else 'FAILED'})"
