"""``rank``: the tensor's number of dims is within ``min`` .. ``max``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import UNKNOWN, Context, Failed, Parser, Tensor, TensorCheck


@dataclass(frozen=True)
class Rank(TensorCheck):
    keys = ("rank",)
    spec: Mapping[str, Any]  # {"min": ..., "max": ...}

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Rank:
        return cls(raw["rank"])

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        shape = tensor.info.shape
        rank = None if shape is None else len(shape)
        lo, hi = self.spec.get("min"), self.spec.get("max")
        if rank is None:
            return [Failed(UNKNOWN, self.spec, "rank unknown (shape not inferred)")]
        if (lo is not None and rank < lo) or (hi is not None and rank > hi):
            span = f"{'' if lo is None else lo}..{'' if hi is None else hi}"
            return [Failed(rank, self.spec, f"rank {rank} outside {span}")]
        return []

    def phrases(self) -> list[str]:
        lo, hi = self.spec.get("min"), self.spec.get("max")
        if lo is not None and lo == hi:
            return [f"rank {lo}"]
        if lo is not None and hi is not None:
            return [f"rank {lo} to {hi}"]
        if hi is not None:
            return [f"rank ≤ {hi}"]
        if lo is not None:
            return [f"rank ≥ {lo}"]
        return []
