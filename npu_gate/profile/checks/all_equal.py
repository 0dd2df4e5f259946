"""``all_equal``: every element of a list value is the same (square kernels)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import Failed, Parser, ValueCheck, hashable, show


@dataclass(frozen=True)
class AllEqual(ValueCheck):
    keys = ("all_equal",)
    first = True
    enabled: bool

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> AllEqual:
        return cls(bool(raw["all_equal"]))

    def evaluate(self, value: Any) -> list[Failed]:
        if self.enabled and isinstance(value, list) and len(set(map(hashable, value))) > 1:
            return [Failed(value, "all elements equal", f"{show(value)} has unequal elements")]
        return []

    def phrases(self) -> list[str]:
        return ["all elements equal"] if self.enabled else []
