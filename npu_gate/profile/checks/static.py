"""``static``: every dim of the tensor is a known number."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import UNKNOWN, Context, Failed, Parser, Tensor, TensorCheck, show_shape


@dataclass(frozen=True)
class Static(TensorCheck):
    keys = ("static",)
    enabled: bool

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Static:
        return cls(bool(raw["static"]))

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        t = tensor.info
        if self.enabled and not t.static:
            shape = t.shape if t.shape is not None else UNKNOWN
            return [Failed(shape, "static", f"shape {show_shape(t)} is not static")]
        return []

    def phrases(self) -> list[str]:
        return ["static shape"] if self.enabled else []
