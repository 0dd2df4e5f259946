"""``matches``: a string attribute (an Einsum equation), without whitespace, fully matches one of
a list of regular expressions.

Python's ``re`` cannot be interrupted, and a profile is a file of the pull request: the loader
refuses a pattern that could backtrack for long (``backtracking.problem``: nested or adjacent
quantifiers that can match the same text, a pattern over ``backtracking.MAX_PATTERN``
characters), and a value longer than ``MAX_TEXT`` is not matched at all (it fails the check).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.backtracking import MAX_PATTERN, problem
from npu_gate.profile.checks.base import Failed, Parser, ValueCheck, show

# Characters of a value (whitespace removed) a pattern is matched against: far above the longest
# Einsum equation a real model has (tens of characters: the 74 is already a long one; an
# equation names at most 52 letters per operand), so that a longer one is a model built to be
# slow, and no accepted pattern takes long on a text this short.
MAX_TEXT = 1024


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
        if isinstance(value, str) and len(_squeezed(value)) > MAX_TEXT:
            return [Failed(f"{len(_squeezed(value))} characters", {"matches": self.patterns},
                           f"is {len(_squeezed(value))} characters long, over the {MAX_TEXT} a pattern is "
                           "matched against")]
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
            if isinstance(pattern, str) and len(pattern) > MAX_PATTERN:
                problems.append(f"{where}[{i}]: the pattern is {len(pattern)} characters long, over the "
                                f"{MAX_PATTERN} allowed")
                continue
            try:
                re.compile(pattern)
            except (re.error, TypeError) as e:
                problems.append(f"{where}[{i}]: not a regular expression: {e}")
                continue
            why = problem(pattern)
            if why is not None:
                problems.append(f"{where}[{i}]: the pattern {why}")
        return problems


def matches(patterns: list[str], value: Any) -> bool:
    """Whether ``value``, a string with every whitespace character removed, fully matches one of
    ``patterns`` (regular expressions; the profile loader checks that they compile and cannot
    backtrack for long); a text over ``MAX_TEXT`` characters matches none."""
    if not isinstance(value, str):
        return False
    text = _squeezed(value)
    if len(text) > MAX_TEXT:
        return False
    return any(re.fullmatch(p, text) is not None for p in patterns)


def _squeezed(value: str) -> str:
    """The value with every whitespace character removed, as it is matched."""
    return "".join(value.split())
