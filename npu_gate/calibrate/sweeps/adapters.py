"""The rank adapters the compiler adds around inputs of rank other than 4."""

from __future__ import annotations

from npu_gate.calibrate.sweeps.builders import ADAPTER, Family, Point, dims, single


def _adapted(shape: list[int]) -> Point:
    return single(f"adapter-relu-{dims(shape)}", "Relu", {"x": ("float32", shape)})


def adapter_families() -> list[Family]:
    shapes = [[2, 8], [2, 10], [2, 12], [2, 16], [1, 17], [1, 24], [2, 4, 12], [2, 4, 16], [1, 2, 3, 4, 12],
              [1, 2, 3, 4, 16], [33], [40]]
    return [Family("rank-adapters", "Reshape", [_adapted(s) for s in shapes], kind=ADAPTER,
                   note="Relu on inputs of rank 1, 2, 3 and 5, last dim around multiples of 8")]
