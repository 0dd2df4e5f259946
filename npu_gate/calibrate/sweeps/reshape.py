"""Reshape: to ranks 1 to 5 from 4-D inputs (and back from 5-D), the channel shuffle, issue 20's
real models' flattens, unit-dim moves and patch unfolds; one hypothesis for every family."""

from __future__ import annotations

from typing import Any

import onnx

from npu_gate.calibrate.sweeps.builders import Family, Point, between, dims, i64, model, node


def _reshape(c: int) -> Point:
    return between(f"reshape-1x{c}x1x1-to-1x{c}", "Reshape", [1, c, 1, 1], {"shape": i64(1, c)}, ["shape"])


def _reshape_to(shape: list[int], to: list[int]) -> Point:
    return between(f"reshape-{dims(shape)}-to-{dims(to)}", "Reshape", shape, {"shape": i64(*to)}, ["shape"])


def shuffle_point(w: int, measured: str) -> Point:
    """shufflenet's channel shuffle, Relu -> Reshape [1,16,w,w] -> [1,2,8,w,w] -> Transpose [0,2,1,3,4] ->
    Reshape back -> Relu: ``measured`` is the Reshape measured, "reshape" (to 5-D) or "reshape_back" (to 4-D)."""
    def build() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"), node("Reshape", ["a", "to5"], ["r"]),
                      node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3, 4]),
                      node("Reshape", ["t", "to4"], ["b"], name="reshape_back"),
                      node("Relu", ["b"], ["y"], name="after")], {"x": ("float32", [1, 16, w, w])},
                     {"to5": i64(1, 2, 8, w, w), "to4": i64(1, 16, w, w)})
    return Point(f"reshape-shuffle-1x16x{w}x{w}-{measured.replace('_', '-')}", build, node=measured)


# The hypothesis of every Reshape family (three constraints, each written once), measured with RKNN-Toolkit2 2.5.0
# (rk3588, fp16) on the points below and shown by no simpler one. With P the product of the input's last two dims
# (H x W of the 4-D inputs measured), a Reshape ran on the NPU exactly where
# - the output is not 4-D: P is a multiple of 8, or P is 1 and input dim 1 (C of [1,C,1,1]) is a multiple of 8;
# - the output is 4-D: P is a multiple of 8, or the output keeps the input's last dim, or it keeps input dim 1
#   and that dim is a multiple of 8.
# What it is not: the output's last dim (a multiple of 8 at [1,16,6,6] -> [1,576] and [1,1,1,576], CPU; 4 at
# [1,16,8,8] -> [1,256,4], NPU), its size (676 and 1024 NPU), or whether the batch dim moves ([16,1,1,64] NPU,
# [16,1,1,100] CPU). The three Reshapes of issue 20's real models (nudenet (1,82,10,10) -> (82,1,1,100), ddddocr
# common_det's (1,6,26,26) -> (1,6,1,676) and (1,6,13,13) -> (1,6,1,169)) are points here. The channel-shuffle
# triplet's Reshapes are folded by the compiler: the profile's `eliminates` Reshape around-transpose says so (infer.py
# leaves a point its derived clean-up eliminates, and the compiler folded, out of the op's test). Inputs of
# other ranks were not measured: each constraint passes them (the vendor's claim stands there).
# the output-rank alternatives come last: a finding is worded by the first of the closest (closeness)
_OUT_RANK4 = {"output": 0, "rank": {"min": 4, "max": 4}}
_PLANE_8 = {"input": 0, "dim": {"axes": [-2, -1], "multiple_of": 8}}
# measured from 4-D inputs (and 5-D ones to 4-D): other input ranks pass, the vendor's claim for them stands
_IN_NOT_4D: list[dict[str, Any]] = [{"input": 0, "rank": {"max": 3}}, {"input": 0, "rank": {"min": 5}}]
RESHAPE_HYPOTHESIS: list[dict[str, Any]] = [
    {"id": "reshape-input-plane-multiple-of-8",
     "any_of": [_PLANE_8, {"input": 0, "dim": {"axes": [-2, -1], "max": 1}}, _OUT_RANK4, *_IN_NOT_4D],
     "message": "from a 4-D input to an output rank other than 4, the NPU ran it only where the input's last two "
                "dims multiply to a multiple of 8 or to 1; measured to ranks 1, 2, 3 and 5, other input ranks were not "
                "measured and pass",
     "fix": "keep H x W a multiple of 8 before flattening it (pad or crop the feature map), or reshape to 4-D"},
    {"id": "reshape-unit-plane-channels-multiple-of-8",
     "any_of": [_PLANE_8, {"input": 0, "dim": {"axis": 1, "multiple_of": 8}}, _OUT_RANK4, *_IN_NOT_4D],
     "message": "from [1,C,1,1] to an output rank other than 4, the NPU ran it only where C is a multiple of 8; "
                "other input ranks were not measured and pass",
     "fix": "use a channel count that is a multiple of 8 before the flatten"},
    {"id": "reshape-rank4-keeps-last-dim-or-channels",
     "any_of": [_PLANE_8, {"output": 0, "dim": {"axis": -1, "in": [{"ref": {"input": 0, "axis": -1}}]}},
                {"output": 0, "dim": {"axis": 1, "multiple_of": 8, "in": [{"ref": {"input": 0, "axis": 1}}]}},
                {"output": 0, "same_non_unit_dims_as": {"input": 0}},
                {"output": 0, "rank": {"max": 3}}, {"output": 0, "rank": {"min": 5}}, _IN_NOT_4D[0]],
     "message": "to a 4-D output, the NPU ran it only where the input's last two dims multiply to a multiple of 8, "
                "the output keeps the input's last dim, it keeps input dim 1 and that is a multiple of 8, or it "
                "only moves dims of size 1 (the compiler runs that as a Transpose) (measured with 4-D and 5-D "
                "inputs, batch 1 or moved; inputs of rank 3 or less were not measured and pass)",
     "fix": "flatten H x W only when it is a multiple of 8, keep the last dim, keep a channel count that is a "
            "multiple of 8 in dim 1, or move only dims of size 1 (x.permute or x.transpose where a dim is 1)"},
    # issue 20 (timm mobilevit's patch unfold, x.reshape(B * C * nh, ph, nw, pw)): moving work into the batch dim
    {"id": "reshape-batch-moved-output-plane-multiple-of-8",
     "any_of": [{"output": 0, "dim": {"axis": 0, "max": 1}}, {"input": 0, "dim": {"axis": 0, "min": 2}},
                {"output": 0, "dim": {"axes": [-2, -1], "multiple_of": 8}},
                {"output": 0, "dim": {"axis": -1, "in": [{"ref": {"input": 0, "axis": -1}}]}},
                {"output": 0, "same_non_unit_dims_as": {"input": 0}},
                {"output": 0, "rank": {"max": 3}}, {"output": 0, "rank": {"min": 5}}, *_IN_NOT_4D],
     "message": "from a batch-1 4-D input to a 4-D output whose dim 0 is above 1 (work moved into the batch dim, as "
                "a patch unfold does), the NPU ran it only where the output's last two dims multiply to a multiple "
                "of 8 or the output keeps the input's last dim (measured with batch-1 inputs; other input batches "
                "and ranks pass)",
     "fix": "unfold patches so that each one's last two dims (nw x pw of x.reshape(B*C*nh, ph, nw, pw)) multiply to "
            "a multiple of 8 (a feature map of width 8, 16, 32 for 2x2 patches), or keep the batch dim at 1"}]


def reshape_families(plane: bool = True) -> list[Family]:
    """The Reshape sweep; ``plane=False``: without issue 20's four families (``reshape-input-plane``,
    ``reshape-to-rank4``, ``reshape-unit-dims``, ``reshape-batch-moved``), the 31 points of the
    ``standard`` sweep, which qnn-htp-fp16's record was measured with (``standard-int8``, the RKNN
    sweep, has all 95)."""
    rank2 = [_reshape(c) for c in (7, 8, 9, 12, 15, 16, 17, 24, 32, 33)]
    rank2 += [_reshape_to([1, 16, 6, 6], [1, 576]), _reshape_to([1, 12, 5, 5], [1, 300]),
              _reshape_to([1, 16, 6, 6], [16, 36])]
    to5 = [_reshape_to([1, 16, w, w], [1, 2, 8, w, w]) for w in (2, 4, 8, 16)]
    to4 = [_reshape_to([1, 2, 8, w, w], [1, 16, w, w]) for w in (2, 4, 8, 16)]
    shuffle = [shuffle_point(w, m) for w in (2, 4) for m in ("reshape", "reshape_back")]
    rank34 = [_reshape_to([1, 16, 8, 8], [1, 16, 64]), _reshape_to([1, 12, 5, 5], [1, 12, 25]),
              _reshape_to([1, 16, 6, 6], [1, 16, 36]), _reshape_to([1, 16, 8, 8], [1, 8, 2, 64]),
              _reshape_to([1, 16, 6, 6], [1, 16, 3, 12]), _reshape_to([1, 16, 6, 6], [1, 8, 12, 6])]
    # issue 20: the input's H x W (a multiple of 8, 1, or neither) against the output's last dim, to ranks 1, 2, 3, 5
    flattens = [_reshape_to(a, b) for a, b in (
        ([1, 8, 8, 8], [1, 512]), ([1, 16, 2, 2], [1, 64]), ([1, 16, 2, 4], [1, 128]), ([1, 16, 4, 2], [1, 128]),
        ([1, 16, 4, 6], [1, 384]), ([1, 16, 3, 4], [1, 192]), ([1, 24, 6, 6], [1, 864]), ([1, 1, 1, 576], [1, 576]),
        ([1, 1, 1, 36], [1, 36]), ([1, 16, 1, 1], [4, 4]), ([1, 16, 1, 1], [1, 4, 4]), ([1, 16, 4, 6], [1, 16, 24]),
        ([1, 16, 1, 36], [1, 16, 36]), ([1, 16, 6, 6], [1, 36, 16]), ([1, 16, 8, 8], [1, 256, 4]),
        ([1, 16, 32, 32], [1, 16, 1024]), ([1, 16, 6, 6], [576]), ([1, 16, 1, 1], [16]), ([1, 12, 1, 1], [12]),
        ([1, 16, 2, 4], [1, 2, 8, 2, 4]), ([1, 16, 6, 6], [1, 2, 8, 6, 6]), ([1, 16, 3, 3], [1, 2, 8, 3, 3]),
        ([1, 16, 1, 1], [1, 2, 8, 1, 1]))]
    # issue 20: to 4-D, the real models' flattens of H x W (and the same with C = 16), the batch dim moved,
    # dim 1 and the last dim kept or not
    rank4 = [_reshape_to(a, b) for a, b in (
        ([1, 6, 26, 26], [1, 6, 1, 676]), ([1, 6, 13, 13], [1, 6, 1, 169]), ([1, 82, 10, 10], [82, 1, 1, 100]),
        ([1, 82, 10, 10], [1, 82, 1, 100]), ([1, 16, 26, 26], [1, 16, 1, 676]), ([1, 6, 8, 8], [1, 6, 1, 64]),
        ([1, 16, 10, 10], [16, 1, 1, 100]), ([1, 16, 8, 8], [16, 1, 1, 64]), ([1, 16, 6, 6], [1, 1, 1, 576]),
        ([1, 16, 8, 8], [1, 1024, 1, 1]), ([1, 12, 10, 10], [1, 12, 1, 100]), ([1, 24, 10, 10], [1, 24, 1, 100]),
        ([1, 16, 2, 2], [1, 8, 2, 4]), ([1, 16, 10, 10], [1, 8, 20, 10]), ([1, 16, 6, 6], [4, 4, 6, 6]),
        ([1, 8, 1, 1], [1, 2, 2, 2]), ([1, 24, 3, 3], [1, 8, 3, 9]))]
    # issue 20: Reshapes that only move dims of size 1 (tf2onnx's, in openwakeword's embedding model: the
    # compiler runs them as a Transpose), and the near misses that also reorder or merge other dims
    unit_moves = [_reshape_to(a, b) for a, b in (
        ([1, 76, 34, 1], [1, 1, 76, 34]), ([1, 5, 3, 1], [1, 1, 5, 3]), ([1, 12, 1, 1], [1, 1, 1, 12]),
        ([1, 12, 1, 1], [1, 1, 12, 1]), ([1, 1, 5, 3], [1, 5, 3, 1]), ([1, 7, 1, 5], [1, 1, 7, 5]),
        ([1, 96, 1, 1], [1, 1, 1, 96]), ([1, 5, 3, 1], [1, 3, 5, 1]), ([1, 5, 3, 1], [1, 1, 1, 15]),
        ([1, 7, 1, 5], [1, 1, 5, 7]))]
    # issue 20: [1,C,H,W] -> a 4-D output of batch above 1 (timm mobilevit's unfold [1,C,W,W] -> [C*W/2,2,W/2,2]
    # at W = 4 .. 16 and its fold's [1,C,N,4] -> [C*n,n,2,2]), W against H, and the same with batch 1 kept
    batch_moved = [_reshape_to(a, b) for a, b in (
        ([1, 16, 4, 4], [32, 2, 2, 2]), ([1, 16, 6, 6], [48, 2, 3, 2]), ([1, 16, 8, 8], [64, 2, 4, 2]),
        ([1, 16, 12, 12], [96, 2, 6, 2]), ([1, 16, 16, 16], [128, 2, 8, 2]), ([1, 16, 16, 4], [64, 4, 2, 2]),
        ([1, 16, 8, 4], [32, 2, 4, 2]), ([1, 16, 4, 8], [32, 2, 2, 4]), ([1, 16, 4, 4], [4, 4, 4, 4]),
        ([1, 16, 8, 8], [16, 4, 2, 8]), ([1, 16, 4, 4], [1, 64, 2, 2]), ([1, 16, 4, 4], [1, 32, 2, 4]),
        ([1, 16, 4, 8], [1, 64, 2, 4]), ([1, 16, 12, 4], [1, 48, 4, 4]))]
    before = [Family("reshape-to-rank2-channels", "Reshape", rank2, RESHAPE_HYPOTHESIS,
                   note="Reshape [1,C,1,1] -> [1,C], C around multiples of 8; [1,C,H,W] -> [1,CHW] and [C,HW]"),
            Family("reshape-rank4-rank5", "Reshape", to5 + to4 + shuffle, RESHAPE_HYPOTHESIS,
                   note="channel-shuffle shapes 4-D -> 5-D and back, last dim (a width) 2, 4, 8, 16; the shuffle "
                        "triplet Reshape -> Transpose -> Reshape, each Reshape measured (the compiler folds both "
                        "away, as the eliminates entry Reshape around-transpose says)"),
            Family("reshape-to-rank3-rank4", "Reshape", rank34, RESHAPE_HYPOTHESIS,
                   note="[1,C,H,W] -> rank 3 and rank 4, last dim a multiple of 8 or not")]
    if not plane:
        return before
    return [*before,
            Family("reshape-input-plane", "Reshape", flattens, RESHAPE_HYPOTHESIS,
                   note="[1,C,H,W] -> ranks 1, 2, 3 and 5: H x W a multiple of 8, 1 or neither, against the "
                        "output's last dim (a multiple of 8 or not) and C"),
            Family("reshape-to-rank4", "Reshape", rank4, RESHAPE_HYPOTHESIS,
                   note="[1,C,H,W] -> 4-D: the flattens of H x W in issue 20's real models (nudenet, ddddocr "
                        "common_det) and the same with C = 16, 12, 24, the batch dim moved, dim 1 or the last dim "
                        "kept or not"),
            Family("reshape-unit-dims", "Reshape", unit_moves, RESHAPE_HYPOTHESIS,
                   note="4-D -> 4-D moving only dims of size 1 (openwakeword's tf2onnx Reshapes, [1,76,34,1] -> "
                        "[1,1,76,34], [1,96,1,1] -> [1,1,1,96]), and moves that also reorder or merge other dims"),
            Family("reshape-batch-moved", "Reshape", batch_moved, RESHAPE_HYPOTHESIS,
                   note="[1,C,H,W] -> 4-D with dim 0 above 1 (timm mobilevit's patch unfold and fold at widths 4 to "
                        "16), the input's last dim a multiple of 8 or not, against H; the same shapes to batch 1")]
