"""The machine-readable result (validated against schemas/result.schema.json in tests).

Layout: one top-level key per line and one list element (node, finding, partition...)
per line: readable in a diff. orjson encodes each element (on a 50k-node graph the JSON
is about 28 MB and the standard library's C encoder took 0.8 s where orjson takes 0.2 s;
see bench/README.md). A value orjson refuses (an integer beyond 64 bits, computed from
absurd dims) falls back to the standard library for that element. Non-finite floats
become ``null`` (orjson's rule), never the invalid JSON tokens ``NaN``/``Infinity``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from npu_gate.process.gc_pause import gc_paused
from npu_gate.result.types import GateResult


def render(result: GateResult) -> str:
    with gc_paused():  # to_dict builds a dict per node: see gc_pause.py
        return dumps(result.to_dict())


def dumps(doc: dict[str, Any]) -> str:
    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            items = b",\n    ".join([_compact(v) for v in value])
            lines.append(b"  " + _compact(key) + b": [\n    " + items + b"\n  ]")
        else:
            lines.append(b"  " + _compact(key) + b": " + _compact(value))
    return (b"{\n" + b",\n".join(lines) + b"\n}\n").decode("utf-8")


def _compact(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats as None, as orjson writes them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
