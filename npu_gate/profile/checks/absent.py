"""``absent``: the attribute is not set in the model (its default applies); its value is not tested."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import AttributeCheck, Context, Failed, Parser, show


@dataclass(frozen=True)
class Absent(AttributeCheck):
    keys = ("absent",)
    enabled: bool

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Absent:
        return cls(bool(raw["absent"]))

    @property
    def stands_alone(self) -> bool:
        return self.enabled

    def evaluate(self, name: str, ctx: Context) -> list[Failed]:
        node = ctx.node
        if name in node.attributes and name not in node.defaulted:
            value = node.attributes[name]
            return [Failed(value, "absent", f"= {show(value)} is set; it must be left at its default")]
        return []

    def phrases(self) -> list[str]:
        return ["not set (its default only)"] if self.enabled else []
