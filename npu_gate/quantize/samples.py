"""Calibration and hold-out samples: the contract's samples files, or seeded rows drawn from each
input's range. Hold-out rows are never calibration rows: drawn ones use sample indices after the
calibration ones (``make_samples``' sample k depends only on the seed and k)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npu_gate.contract.spec import CALIBRATION_COUNT, HOLDOUT_COUNT, Contract
from npu_gate.model.samples import make_samples

Rows = list[dict[str, np.ndarray]]


@dataclass
class QuantSampleSet:
    calibration: Rows
    holdout: Rows
    calibration_synthetic: bool
    holdout_synthetic: bool


def sample_sets(contract: Contract) -> QuantSampleSet:
    """The contract's calibration and hold-out samples (``contract.quantization`` must be set)."""
    q = contract.quantization
    assert q is not None
    seed = contract.numerics.seed
    calibration = contract.calibration_rows
    calib_count = q.calibration.count or CALIBRATION_COUNT
    if calibration is None:
        calibration = make_samples(contract.inputs, calib_count, seed)
    holdout = contract.holdout_rows
    if holdout is None:  # drawn after the calibration indices: never the same rows
        count = q.holdout.count or HOLDOUT_COUNT
        holdout = make_samples(contract.inputs, calib_count + count, seed)[calib_count:]
    return QuantSampleSet(calibration, holdout, contract.calibration_rows is None, contract.holdout_rows is None)
