"""Slice: steps over C, H and W, reversals (step -1, torch.flip) on each axis, and slices on axis 0."""

from __future__ import annotations

from typing import Any

from npu_gate.calibrate.sweeps.builders import Family, Point, X, between, dims, i64


def _slice(pid: str, starts: list[int], ends: list[int], axes: list[int], steps: list[int]) -> Point:
    return between(pid, "Slice", X, {"starts": i64(*starts), "ends": i64(*ends), "axes": i64(*axes),
                                     "steps": i64(*steps)}, ["starts", "ends", "axes", "steps"])


def slice_family() -> Family:
    points = [_slice(f"slice-axis{a}-step{s}", [0], [8 if a == 1 else 16], [a], [s])
              for a in (1, 2, 3) for s in (1, 2)]
    points.append(_slice("slice-axis3-step-1", [-1], [-33], [3], [-1]))
    points.append(_slice("slice-axis3-start4-step1", [4], [20], [3], [1]))
    return Family("slice-axes-steps", "Slice", points,
                  [{"id": "slice-steps-1-or-minus-1", "input": 4,
                    "value": {"each": True, "in": [1, -1], "default": [1]},
                    "fix": "slice with step 1 (x[:, :, a:b]); for x[..., ::2] use a stride-2 Conv2d/pool "
                           "or a reshape"}],
                  note="steps (input 4's values) 1, 2 and -1 over C, H, W")


INT64_MIN_END = -(2**63) + 1  # torch.flip's Slice end: past the first element, backwards

SLICE_REVERSE_HYPOTHESIS: list[dict[str, Any]] = [
    {"id": "slice-reverse-last-axis-only",
     "any_of": [{"input": 4, "value": {"each": True, "in": [1], "default": [1]}},
                {"input": 3, "value": {"axes_from_end_of_input": 0, "each": True, "in": [-1]}}],
     "message": "a Slice with step -1 (a reversal, torch.flip) ran on the NPU only along the input's last axis; "
                "measured on 2-D, 3-D and 4-D inputs, one axis per Slice",
     "fix": "flip along the last axis only: move the axis last first (x.transpose(...).flip(-1)), or reverse "
            "the sequence outside the model; for a backward RNN, nn.LSTM/nn.GRU(bidirectional=True) "
            "exports no reversal"},
    {"id": "slice-reverse-whole-axis",
     "any_of": [{"input": 4, "value": {"each": True, "in": [1], "default": [1]}},
                {"output": 0, "dim": {"axis": -1, "in": [{"ref": {"input": 0, "axis": -1}}]}}],
     "message": "a reversal (step -1) of the last axis ran on the NPU only when it keeps every element "
                "(x.flip(-1)); a part of the axis reversed (x[..., 6::-1]) ran on the CPU",
     "fix": "reverse the whole last axis (x.flip(-1)) and slice the part you need after it with step 1"}]


def slice_reverse_family() -> Family:
    """Issue 20: reversals (step -1, torch.flip) on each axis of 2-D to 4-D inputs; captcha-whisperer's
    CRNN reverses its [20, 1, 4096] time-major sequence on axis 0 for its backward LSTM."""
    def point(shape: list[int], axis: int, start: int = -1, end: int = INT64_MIN_END) -> Point:
        tail = "" if (start, end) == (-1, INT64_MIN_END) else f"-from{start}-to{end}"
        return between(f"slice-reverse-axis{axis}-{dims(shape)}{tail}", "Slice", shape,
                       {"starts": i64(start), "ends": i64(end), "axes": i64(axis), "steps": i64(-1)},
                       ["starts", "ends", "axes", "steps"])
    four = [1, 16, 8, 8]
    points = [point([20, 1, 64], 0), point([1, 20, 64], 1), point([1, 20, 64], 2), point([20, 64], 0),
              point([20, 64], 1), point(four, 1), point(four, 2), point(four, 3), point(four, -1),
              point(four, 3, -2, -9), point(four, 2, -2, -9), point(four, 3, -1, -5), point(four, 3, -1, -9),
              point(four, 3, 7, -9), point([1, 16, 8, 16], 3, -1, -17), point([1, 16, 8, 16], 3, -1, -9)]
    return Family("slice-reverse", "Slice", points, SLICE_REVERSE_HYPOTHESIS,
                  note="step -1 over each axis of [20,1,64], [1,20,64], [20,64] and [1,16,8,8], whole and partial "
                       "(also the last axis of [1,16,8,16])")


def slice_axis0_family() -> Family:
    """The vendor's "batchsize: 1" remark for Slice, read as dim 0 at most 1 (rknn-toolkit2-v2.1's
    slice-batch-1), against slices on axis 0 of a dim 0 above 1 (a q/k/v split of attention)."""
    def point(pid: str, shape: list[int]) -> Point:
        return between(pid, "Slice", shape, {"starts": i64(0), "ends": i64(1), "axes": i64(0), "steps": i64(1)},
                       ["starts", "ends", "axes", "steps"])
    return Family("slice-axis0", "Slice", [point("slice-axis0-2x16x8x8", [2, 16, 8, 8]),
                                           point("slice-axis0-3x1x4x8x16", [3, 1, 4, 8, 16])],
                  note="one Slice on axis 0 of a 4-D input of dim 0 2 and a 5-D one of dim 0 3 (step 1)")
