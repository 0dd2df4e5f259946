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

# JSONEncoder.encode builds a new C encoder on every call; a 50k-node result makes 160k
# calls. Build the C encoder once with the same settings (as json.encoder does inside
# iterencode, minus the circular-reference check: a result is plain, acyclic data) and
# call it directly; without the C extension, fall back to encode().
_C_ENCODER = (
    json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, _ENCODER.default, json.encoder.encode_basestring, None,  # type: ignore[attr-defined]
        _ENCODER.key_separator, _ENCODER.item_separator, False, False, True,
    )
    if json.encoder.c_make_encoder is not None  # type: ignore[attr-defined]
    else None
)


def _compact(value: Any) -> str:
    if _C_ENCODER is None or isinstance(value, str):
        return _ENCODER.encode(value)
    return "".join(_C_ENCODER(value, 0))
