"""The parts of a contract that a run reads beyond the contract itself: the input specs, the
gates and the waivers. ``npu_gate.contract.spec`` reads them from a contract and re-exports
them; they live here so that the stages, which ``inspect`` runs with their defaults, do not
import the contract reader (its other dataclasses, the code and file checks) to get them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

__all__ = ["Gates", "InputSpec", "Waiver"]


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: list[int]  # static; a named dim holds its example size (dynamic_dims)
    dtype: str
    layout: str | None
    range: tuple[float, float]
    # per dim, its name when the contract names it ("batch": exported as a dynamic dim and
    # analysed with the example size); None for a fixed dim. Empty: no named dim.
    dim_names: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class Gates:
    max_cpu_nodes: int | None = None
    max_npu_partitions: int | None = None
    max_boundary_bytes: int | None = None
    max_peak_activation_bytes: int | None = None  # summary.peak_activation_bytes (upper bound)
    max_weight_bytes: int | None = None  # summary.weight_bytes
    allow_dynamic_shapes: bool = False
    min_output_sqnr_db: float | None = None  # quantization: every output's SQNR (dB), hold-out samples
    min_output_cosine: float | None = None  # quantization: every output's cosine similarity
    max_sram_bytes: int | None = None  # the compiler's own SRAM estimate (Vela's), stages.probe.estimates
    max_estimated_ms: float | None = None  # the compiler's own time estimate (Vela's), stages.probe.estimates


@dataclass(frozen=True)
class Waiver:
    rule: str
    reason: str
    node: str | None = None  # a node's name or its stable key
    op_type: str | None = None
    expires: dt.date | None = None
    module: str | None = None  # an nn.Module path ("up.conv"), glob allowed ("encoder.*")
    source: str | None = None  # a PyTorch source line, "models/zoo.py:72" (the file may be a glob)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "reason": self.reason}
        for key in ("node", "op_type", "module", "source"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.expires is not None:
            out["expires"] = self.expires.isoformat()
        return out
