"""``dtype``: the tensor's element type is one of a list (numpy names)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import UNKNOWN, Context, Failed, Parser, Tensor, TensorCheck, show, words_set


@dataclass(frozen=True)
class Dtype(TensorCheck):
    keys = ("dtype",)
    dtypes: list[str]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Dtype:
        return cls(raw["dtype"])

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        dtype = tensor.info.dtype
        if dtype in self.dtypes:
            return []
        return [Failed(dtype or UNKNOWN, self.dtypes, f"dtype {dtype or UNKNOWN} not in {show(self.dtypes)}")]

    def phrases(self) -> list[str]:
        return [f"dtype in {words_set(self.dtypes)}"]
