"""The machine-readable result (validated against schemas/result.schema.json in tests).

Layout: one top-level key per line and one list element (node, finding, partition...)
per line. Readable in a diff, and fast: the C encoder does the work (``indent`` would
force the pure-Python encoder, seconds on a 10k-node graph).
"""

from __future__ import annotations

import json
from typing import Any

from npu_gate.gc_pause import gc_paused
from npu_gate.result import GateResult


def render(result: GateResult) -> str:
    with gc_paused():  # to_dict builds a dict per node: see gc_pause.py
        return dumps(result.to_dict())


def dumps(doc: dict[str, Any]) -> str:
    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            items = ",\n    ".join(_compact(v) for v in value)
            lines.append(f"  {_compact(key)}: [\n    {items}\n  ]")
        else:
            lines.append(f"  {_compact(key)}: {_compact(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))


def _compact(value: Any) -> str:
    return _ENCODER.encode(value)
