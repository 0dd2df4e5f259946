"""``same_non_unit_dims_as``: the tensor's dims without its 1s equal another input's (or output's)
without its 1s: a Reshape that only adds, drops or moves dims of size 1 ([1,76,34,1] -> [1,1,76,34]).
Unknown or symbolic dims fail."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import UNKNOWN, Context, Failed, Parser, Tensor, TensorCheck, show_shape


@dataclass(frozen=True)
class SameNonUnitDims(TensorCheck):
    keys = ("same_non_unit_dims_as",)
    ref: Mapping[str, int]  # {"input": k} or {"output": k}

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> SameNonUnitDims:
        return cls(raw["same_non_unit_dims_as"])

    @property
    def other(self) -> tuple[str, int]:
        kind = "input" if "input" in self.ref else "output"
        return kind, self.ref[kind]

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        kind, index = self.other
        names = ctx.node.inputs if kind == "input" else ctx.node.outputs
        other = ctx.tensors.get(names[index]) if index < len(names) and names[index] else None
        allowed = {"same_non_unit_dims_as": self.ref}
        t = tensor.info
        a, b = t.shape, other.shape if other is not None else None
        if a is None or b is None or not all(isinstance(d, int) for d in [*a, *b]):
            shown = show_shape(other) if other is not None else "?"
            return [Failed(UNKNOWN, allowed, f"dims not static (shape {show_shape(t)}, {kind} {index} {shown})")]
        mine, theirs = [d for d in a if d != 1], [d for d in b if d != 1]
        if mine == theirs:
            return []
        return [Failed(list(t.shape or []), allowed,
                       f"dims {show_shape(t)} without their 1s are {mine}, {kind} {index}'s are {theirs}: "
                       f"it does more than move dims of size 1")]

    def phrases(self) -> list[str]:
        kind, index = self.other
        return [f"the dims of {kind} {index} with only dims of size 1 added, dropped or moved"]
