"""The machine-readable result (validated against schemas/result.schema.json in tests)."""

from __future__ import annotations

import json

from npu_gate.result import GateResult


def render(result: GateResult) -> str:
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
