"""AveragePool (kernel x stride x pads x count_include_pad) and MaxPool."""

from __future__ import annotations

from typing import Any

from npu_gate.calibrate.sweeps.builders import Family, Point, single


def pool_point(op: str, k: int, pad: int, include: int | None = None, stride: int = 1) -> Point:
    """A k x k pool ``op`` on x, ``pad`` on every side; ``include``: its count_include_pad, when given."""
    attrs: dict[str, Any] = {"kernel_shape": [k, k], "pads": [pad] * 4, "strides": [stride, stride]}
    if include is not None:
        attrs["count_include_pad"] = include
    suffix = f"-include{include}" if include is not None else ""
    return single(f"{op.lower()}-k{k}-s{stride}-pad{pad}{suffix}", op, **attrs)


def pool_families() -> list[Family]:
    avg = [pool_point("AveragePool", k, p, c, s) for k, p, c, s in
           ((3, 1, 0, 1), (3, 1, 1, 1), (3, 0, 0, 1), (3, 0, 1, 1), (2, 0, 0, 2), (3, 1, 0, 2), (3, 1, 1, 2),
            (5, 2, 0, 1), (5, 2, 1, 1))]
    mx = [pool_point("MaxPool", k, p, None, s) for k, p, s in ((2, 0, 2), (3, 1, 1), (3, 1, 2), (5, 2, 1), (3, 0, 1))]
    return [Family("averagepool-pads-count-include-pad", "AveragePool", avg,
                   [{"id": "averagepool-pads-count-include-pad", "any_of": [
                       {"attribute": "count_include_pad", "in": [1]}, {"attribute": "pads", "each": True, "max": 0}],
                   "fix": "use count_include_pad=True (the default) or padding=0 in nn.AvgPool2d"}],
                   note="kernel x stride x pads x count_include_pad"),
            Family("maxpool-kernel-stride-pads", "MaxPool", mx)]
