"""Pattern families: whether the compiler fuses a chain of nodes into one op (HardSwish, GELU,
SiLU, attention, F.normalize), each with near misses; and Softmax at batch 4."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from npu_gate.calibrate.sweeps.builders import PATTERN, Family, Point, between, f32, i64, model, node, single


def _after_conv(pid: str, body: Callable[[str], list[onnx.NodeProto]], inits: dict[str, Any] | None = None) -> Point:
    """Conv -> the pattern (reading the Conv's output c), as networks write activations."""
    def build() -> onnx.ModelProto:
        conv = node("Conv", ["x", "cw"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        return model([conv, *body("c")], None, {"cw": f32(16, 16, 3, 3), **(inits or {})})
    return Point(pid, build)


def _hardswish(pid: str, hi: float, div: float) -> Point:
    def body(x: str) -> list[onnx.NodeProto]:
        return [node("Add", [x, "three"], ["a"], name="hs_add"),
                node("Clip", ["a", "zero", "hi"], ["b"], name="hs_clip"),
                node("Mul", [x, "b"], ["m"], name="hs_mul"), node("Div", ["m", "div"], ["y"], name="hs_div")]
    return _after_conv(pid, body, {"three": np.float32(3), "zero": np.float32(0), "hi": np.float32(hi),
                                   "div": np.float32(div)})


def _gelu(pid: str, root: float, half_first: bool) -> Point:
    def body(x: str) -> list[onnx.NodeProto]:
        head = [node("Div", [x, "root"], ["d"], name="gelu_div"), node("Erf", ["d"], ["e"], name="gelu_erf"),
                node("Add", ["e", "one"], ["a"], name="gelu_add")]
        if half_first:
            return [*head, node("Mul", ["a", "half"], ["h"], name="gelu_half"),
                    node("Mul", [x, "h"], ["y"], name="gelu_mul")]
        return [*head, node("Mul", [x, "a"], ["m"], name="gelu_mul"),
                node("Mul", ["m", "half"], ["y"], name="gelu_half")]
    return _after_conv(pid, body, {"root": np.float32(root), "one": np.float32(1), "half": np.float32(0.5)})


def _silu(pid: str, same: bool) -> Point:
    def build() -> onnx.ModelProto:
        nodes = [node("Conv", ["x", "cw"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                 node("Sigmoid", ["c"], ["s"], name="silu_sigmoid"),
                 node("Mul", ["c" if same else "x", "s"], ["y"], name="silu_mul")]
        return model(nodes, None, {"cw": f32(16, 16, 3, 3)})
    return Point(pid, build)


def _attention(pid: str, scale: bool, axis: int = -1) -> Point:
    def build() -> onnx.ModelProto:
        nodes = [node("MatMul", ["q", "kt"], ["s"], name="att_scores")]
        last = "s"
        if scale:
            nodes.append(node("Div", ["s", "c"], ["sd"], name="att_scale"))
            last = "sd"
        nodes += [node("Softmax", [last], ["p"], name="att_softmax", axis=axis),
                  node("MatMul", ["p", "v"], ["y"], name="att_context")]
        qkv = {"q": ("float32", [1, 2, 16, 32]), "kt": ("float32", [1, 2, 32, 16]), "v": ("float32", [1, 2, 16, 32])}
        return model(nodes, qkv, {"c": np.float32(5.657)} if scale else {})
    return Point(pid, build)


def pattern_families() -> list[Family]:
    return [
        Family("pattern-hardswish", "HardSwish", [_hardswish("hardswish-after-conv", 6, 6),
                                                  _hardswish("hardswish-near-miss-clip-0-5", 5, 6),
                                                  _hardswish("hardswish-near-miss-div-5", 6, 5)],
               kind=PATTERN, pattern="hardswish-add-clip-mul-div"),
        Family("pattern-gelu", "GELU", [_gelu("gelu-after-conv", 1.4142135, False),
                                        _gelu("gelu-near-miss-div-1.5", 1.5, False)],
               kind=PATTERN, pattern="gelu-erf"),
        Family("pattern-gelu-half-first", "GELU", [_gelu("gelu-half-first-after-conv", 1.4142135, True),
                                                   _gelu("gelu-half-first-near-miss-div-1.5", 1.5, True)],
               kind=PATTERN, pattern="gelu-erf-half-first"),
        Family("pattern-silu", "SiLU", [_silu("silu-after-conv", True), _silu("silu-near-miss-other-input", False)],
               kind=PATTERN, pattern="silu-sigmoid-mul"),
        Family("pattern-attention", "SDPAttention", [_attention("attention-scaled", True),
                                                     _attention("attention-unscaled", False),
                                                     _attention("attention-softmax-axis2", True, axis=2)],
               kind=PATTERN, pattern="attention-matmul-div-softmax-matmul"),
    ]


def normalize_point(pid: str, reduce: str = "ReduceL2", axis: int = -1) -> Point:
    """F.normalize(x, dim) as both exporters write it: ReduceL2(keepdims) -> Clip(min eps) ->
    Expand to x's shape -> Div(x, ·) (timm's edgenext cross-covariance attention)."""
    shape = [1, 2, 16, 32]
    def build() -> onnx.ModelProto:
        nodes = [node(reduce, ["x"], ["r"], name="l2_reduce", axes=[axis], keepdims=1),
                 node("Clip", ["r", "eps"], ["c"], name="l2_clip"),
                 node("Expand", ["c", "shape"], ["e"], name="l2_expand"),
                 node("Div", ["x", "e"], ["y"], name="l2_div")]
        return model(nodes, {"x": ("float32", shape)}, {"eps": np.float32(1e-12), "shape": i64(*shape)})
    return Point(pid, build)


def issue20_pattern_families() -> list[Family]:
    """What the timm set showed (issue 20), measured after the standard sweep's patterns: F.normalize
    (edgenext) as a fused pattern, at p=2 and p=1, on two axes, with ReduceMax as the near miss; and
    Softmax at batch 4 (mobilevit's attention runs its patch area as the batch) against the vendor's
    batch-1 remark."""
    return [
        Family("pattern-l2-normalize", "L2Normalize",
               [normalize_point("l2-normalize-last-axis"), normalize_point("l2-normalize-axis1", axis=1),
                normalize_point("l2-normalize-near-miss-reducemax", reduce="ReduceMax")],
               kind=PATTERN, pattern="l2-normalize-reducel2-clip-expand-div"),
        Family("pattern-l1-normalize", "L1Normalize",
               [normalize_point("l1-normalize-last-axis", reduce="ReduceL1")],
               kind=PATTERN, pattern="l1-normalize-reducel1-clip-expand-div"),
        Family("softmax-batch", "Softmax",
               [single("softmax-batch4-axis-1", "Softmax", {"x": ("float32", [4, 2, 16, 16])}, axis=-1),
                between("softmax-batch4-between", "Softmax", [4, 2, 16, 16], axis=-1)]),
    ]
