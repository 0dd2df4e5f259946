"""``layout``: the tensor's dimension letters, where the contract's ``inputs[].layout`` makes them
known, are one of a list. An unknown layout is the op's own ONNX layout: only a known, different one fails."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import CONTENT, Context, Failed, Parser, Tensor, TensorCheck, show, words_set


@dataclass(frozen=True)
class Layout(TensorCheck):
    keys = ("layout",)
    group = CONTENT
    layouts: list[str]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Layout:
        return cls(raw["layout"])

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        layout = ctx.layouts.get(tensor.name)
        if layout is not None and layout not in self.layouts:
            return [Failed(layout, self.layouts, f"layout {layout} not in {show(self.layouts)}")]
        return []

    def phrases(self) -> list[str]:
        return [f"layout in {words_set(self.layouts)} (where the contract declares it)"]
