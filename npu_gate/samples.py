"""Seeded input samples drawn from the contract's declared ranges."""

from __future__ import annotations

import numpy as np

from npu_gate.contract import InputSpec


def make_samples(inputs: list[InputSpec], count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """``count`` samples; sample k is the same for a given seed whatever ``count`` is."""
    out = []
    for k in range(count):
        rng = np.random.default_rng([seed, k])
        sample: dict[str, np.ndarray] = {}
        for spec in inputs:
            lo, hi = spec.range
            if spec.dtype == "bool":
                sample[spec.name] = rng.random(spec.shape) < 0.5
            elif spec.dtype.startswith("float"):
                sample[spec.name] = rng.uniform(lo, hi, size=spec.shape).astype(spec.dtype)
            else:  # integers: inclusive range
                ints = rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=spec.shape)
                sample[spec.name] = ints.astype(spec.dtype)
        out.append(sample)
    return out
