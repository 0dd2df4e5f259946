"""``any_of``: alternatives, each a subject with its tests; the constraint passes when one passes.

A failure is worded by the alternative that came closest (``closeness``), with every
alternative's actual and allowed values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import Context, Failed, FormCheck, Parser
from npu_gate.profile.checks.subject import Test


@dataclass(frozen=True)
class AnyOf(FormCheck):
    keys = ("any_of",)
    alternatives: tuple[Test, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> AnyOf:
        items = raw["any_of"]
        return cls(tuple(parser.test(a) for a in items if isinstance(a, Mapping)) if isinstance(items, list) else ())

    def evaluate(self, ctx: Context) -> list[Failed]:
        texts, actuals, alloweds, distances = [], [], [], []
        for alternative in self.alternatives:
            failed = alternative.failed(ctx)
            if not failed:
                return []
            texts.append("; ".join(f"{subject} {f.text}" for subject, f in failed))
            actuals.append(failed[0][1].actual if len(failed) == 1 else [f.actual for _, f in failed])
            alloweds.append(failed[0][1].allowed if len(failed) == 1 else [f.allowed for _, f in failed])
            distances.append(closeness(alternative, [f.actual for _, f in failed]))
        best = min(range(len(texts)), key=lambda i: (distances[i], i))
        others = len(texts) - 1
        text = texts[best] + (f" (the closest of {len(texts)} ways to meet it; the finding's `allowed` and "
                              "`npu-gate explain` list them all)" if others else "")
        return [Failed(actuals, {"any_of": alloweds}, text)]

    def phrases(self) -> list[str]:
        return ["one of: " + " | ".join(f"({a.describe()})" for a in self.alternatives)]


def closeness(alternative: Test, actuals: list[Any]) -> tuple[int, int]:
    """How far a failed alternative is from holding (``actuals``: the values its failed tests
    saw), smaller is closer: fewer failed tests first; then an attribute that must avoid a few
    values (``not_in``: any other value meets it, the smallest change), then another attribute
    test, then tests on tensors and values, last an optional input the node does not have."""
    if "attribute" in alternative.keys:
        kind = 0 if "not_in" in alternative.keys else 1
    elif all(actual == "absent" for actual in actuals):
        kind = 3
    else:
        kind = 2
    return len(actuals), kind
