"""``matches``: a string attribute (an Einsum equation), without whitespace, fully matches one of
a list of regular expressions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import Failed, Parser, ValueCheck, show


@dataclass(frozen=True)
class Matches(ValueCheck):
    keys = ("matches",)
    first = True
    on_constants = False  # a test of a string attribute only
    patterns: list[str]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Matches:
        return cls(raw["matches"])

    @property
    def needs_value(self) -> bool:
        return True

    def allowed_when_unknown(self) -> dict[str, Any]:
        return {"matches": self.patterns}

    def evaluate(self, value: Any) -> list[Failed]:
        if matches(self.patterns, value):
            return []
        return [Failed(value, {"matches": self.patterns}, f"{show(value)} matches none of the forms allowed")]

    def phrases(self) -> list[str]:
        return ["without spaces, matches one of " + ", ".join(f"`{p}`" for p in self.patterns)]

    def problems(self, where: str, subjects: tuple[tuple[str, Any], ...]) -> list[str]:
        """Regular expressions that compile, on a string attribute."""
        where = f"{where}.matches"
        if "attribute" not in [kind for kind, _ in subjects]:
            return [f"{where}: matches tests a string attribute (an Einsum equation); it needs attribute"]
        problems = []
        for i, pattern in enumerate(self.patterns if isinstance(self.patterns, list) else []):
            try:
                re.compile(pattern)
            except (re.error, TypeError) as e:
                problems.append(f"{where}[{i}]: not a regular expression: {e}")
        return problems


def matches(patterns: list[str], value: Any) -> bool:
    """Whether ``value``, a string with every whitespace character removed, fully matches one of
    ``patterns`` (regular expressions; the profile loader checks that they compile)."""
    if not isinstance(value, str):
        return False
    text = "".join(value.split())
    return any(re.fullmatch(p, text) is not None for p in patterns)
