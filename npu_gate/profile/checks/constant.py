"""``constant``: the tensor is a constant (an initializer, or folded from constants)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import Context, Failed, Parser, Tensor, TensorCheck


@dataclass(frozen=True)
class Constant(TensorCheck):
    keys = ("constant",)
    enabled: bool

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Constant:
        return cls(bool(raw["constant"]))

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        if self.enabled and not tensor.constant:
            return [Failed("runtime tensor", "constant", "must be a constant (initializer or folded)")]
        return []

    def phrases(self) -> list[str]:
        return ["constant (initializer or folded)"] if self.enabled else []
