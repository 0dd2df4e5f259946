"""``max_elements`` and ``max_bytes``: the size of one tensor (its shape static, for bytes its dtype known)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import UNKNOWN, Context, Failed, Parser, Tensor, TensorCheck


@dataclass(frozen=True)
class MaxElements(TensorCheck):
    keys = ("max_elements",)
    limit: int

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> MaxElements:
        return cls(raw["max_elements"])

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        n = tensor.info.elements
        if n is None:
            return [Failed(UNKNOWN, self.limit, "element count unknown (shape not static)")]
        if n > self.limit:
            return [Failed(n, self.limit, f"has {n} elements, above the maximum {self.limit}")]
        return []

    def phrases(self) -> list[str]:
        return [f"at most {self.limit:,} elements"]


@dataclass(frozen=True)
class MaxBytes(TensorCheck):
    keys = ("max_bytes",)
    limit: int

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> MaxBytes:
        return cls(raw["max_bytes"])

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        b = tensor.info.nbytes
        if b is None:
            return [Failed(UNKNOWN, self.limit, "byte size unknown (shape or dtype not static)")]
        if b > self.limit:
            return [Failed(b, self.limit, f"has {b} bytes, above the maximum {self.limit}")]
        return []

    def phrases(self) -> list[str]:
        return [f"at most {self.limit:,} bytes"]
