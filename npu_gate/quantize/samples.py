"""Calibration and hold-out samples: the contract's samples files, or seeded rows drawn from each
input's range. Hold-out rows are never calibration rows: drawn ones use sample indices after the
calibration ones (``make_samples``' sample k depends only on the seed and k)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from npu_gate.contract.spec import CALIBRATION_COUNT, HOLDOUT_COUNT, Contract, InputSpec
from npu_gate.errors import ContractError, GateError
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


def model_input_specs(model: Path, shapes: dict[str, list[int]]) -> list[InputSpec]:
    """The inputs of an ONNX file as sample specs (``npu-gate probe --quantize``, no contract):
    each input's shape from ``shapes`` (``--inputs``) or its static one, its dtype, and the
    default range a contract input gets (floats [0, 1], integers [0, 10])."""
    from npu_gate.contract.spec import DTYPE_BOUNDS, FLOAT_DTYPES
    from npu_gate.graph.facts import initializer_inputs, tensor_info_from_type
    from npu_gate.graph.model_file import load_onnx

    onnx_model, _ = load_onnx(model, weights=False)
    weights = {t.name for t in onnx_model.graph.initializer} - initializer_inputs(onnx_model, list(shapes))
    specs, problems = [], []
    for value in onnx_model.graph.input:
        if value.name in weights:
            continue
        info = tensor_info_from_type(value.name, value.type)
        shape = shapes.get(value.name) or info.shape
        dims = [d for d in shape or [] if isinstance(d, int) and d > 0]
        if shape is None or len(dims) != len(shape):
            problems.append(f"{model.name}: input {value.name} has dynamic shape: give a static one with "
                            f"--inputs {value.name}:DIMS to quantize")
            continue
        if info.dtype not in DTYPE_BOUNDS:
            problems.append(f"{model.name}: input {value.name} is {info.dtype}: --quantize draws and reads "
                            f"samples of {', '.join(DTYPE_BOUNDS)} only")
            continue
        default = (0.0, 1.0) if info.dtype in FLOAT_DTYPES else (0.0, 10.0)
        specs.append(InputSpec(value.name, dims, info.dtype, None, default))
    if problems:
        raise GateError(*problems)
    return specs


def request_sets(inputs: list[InputSpec], calibration: Path | None, holdout: Path | None,
                 seed: int = 0) -> QuantSampleSet:
    """The samples of ``npu-gate probe --quantize``: ``--calibration`` and ``--holdout`` files
    (``.npz``, one array per input, sample k in row k), as a contract's would be read. One file
    for both: the calibration takes its first rows, the hold-out its last HOLDOUT_COUNT. Without a
    file, rows drawn from the ranges (hold-out rows after the calibration indices)."""
    from npu_gate.contract.samples_file import read_samples

    calib = read_samples(calibration, inputs, "--calibration", contract=False) if calibration is not None else None
    hold = read_samples(holdout, inputs, "--holdout", contract=False) if holdout is not None else None
    if calib is not None and hold is None:
        if len(calib) <= HOLDOUT_COUNT:
            raise ContractError(f"{calibration}: --calibration: {len(calib)} rows, too few for calibration and "
                                f"{HOLDOUT_COUNT} hold-out rows (hold-out samples are never calibration samples: "
                                "give more rows or a --holdout file)")
        calib, hold = calib[:-HOLDOUT_COUNT], calib[-HOLDOUT_COUNT:]
        return QuantSampleSet(calib, hold, False, False)
    drawn = make_samples(inputs, CALIBRATION_COUNT + HOLDOUT_COUNT, seed) if calib is None or hold is None else []
    return QuantSampleSet(calib if calib is not None else drawn[:CALIBRATION_COUNT],
                          hold if hold is not None else drawn[CALIBRATION_COUNT:], calib is None, hold is None)
