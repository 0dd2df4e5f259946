"""``unchecked``: a condition the profile's source states that npu_gate cannot check (vague, or
about tensor values): no subject and no test, a ``message`` saying what and why. Never a CPU
fallback: reported (rule unchecked-condition) so a reviewer knows what rests on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import FormCheck, Parser

_ALLOWED = ("id", "message", "doc", "unchecked", "when")


@dataclass(frozen=True)
class Unchecked(FormCheck):
    keys = ("unchecked",)
    enabled: bool
    extra: tuple[str, ...]  # the constraint's keys an unchecked condition cannot have
    has_message: bool

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Unchecked:
        return cls(bool(raw["unchecked"]), tuple(k for k in raw if k not in _ALLOWED), bool(raw.get("message")))

    @property
    def active(self) -> bool:
        return self.enabled

    @property
    def checked(self) -> bool:
        return False

    def phrases(self) -> list[str]:
        return ["not checked by npu_gate (reported as unchecked-condition)"]

    def form_problems(self, where: str) -> list[str]:
        problems = []
        if self.extra:
            problems.append(f"{where}: an unchecked condition has no subject or test; remove {', '.join(self.extra)}")
        if not self.has_message:
            problems.append(f"{where}: an unchecked condition needs a message saying what is not checked")
        return problems
