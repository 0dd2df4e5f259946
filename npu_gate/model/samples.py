"""Seeded input samples drawn from the contract's declared ranges."""

from __future__ import annotations

import math

import numpy as np

from npu_gate.contract.spec import InputSpec


def make_samples(inputs: list[InputSpec], count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """``count`` samples; sample k is the same for a given seed whatever ``count`` is."""
    out = []
    for k in range(count):
        rng = np.random.default_rng([seed, k])
        sample: dict[str, np.ndarray] = {}
        for spec in inputs:
            lo, hi = spec.range
            if spec.dtype.startswith("float"):
                sample[spec.name] = rng.uniform(lo, hi, size=spec.shape).astype(spec.dtype)
                continue
            low, high = math.ceil(lo), math.floor(hi)  # whole numbers, inclusive
            if spec.dtype == "bool" and (low, high) == (0, 1):
                sample[spec.name] = rng.random(spec.shape) < 0.5
            else:
                ints = rng.integers(low, high, size=spec.shape, endpoint=True, dtype=np.int64)
                sample[spec.name] = ints.astype(spec.dtype)
        out.append(sample)
    return out
