"""Table cells as a reader takes them in: a byte count with its unit beside it, many node
names as how many and the first few."""

from __future__ import annotations

from collections.abc import Sequence

from npu_gate.escape import md_code

_UNITS = ("KiB", "MiB", "GiB", "TiB")
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


def node_names(nodes: Sequence[str | None]) -> str:
    """The node cell of a row that stands for several findings or nodes: one name, or how many
    and the first MAX_NAMES of them."""
    names = [md_code(n) for n in nodes if n]
    shown = ", ".join(names[:MAX_NAMES]) + (f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")
    if len(nodes) == 1:
        return shown
    what = "nodes" if len(names) == len(nodes) else "findings"
    return f"{len(nodes)} {what}" + (f": {shown}" if shown else "")
