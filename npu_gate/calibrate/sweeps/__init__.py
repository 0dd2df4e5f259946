"""Calibration sweeps: families of small models, each probing one op, pattern or adapter rule.

A sweep is data. A ``Family`` is a set of points (models) built to sit on both sides of a
boundary chosen on purpose (a dim around 8192, channel counts around multiples of 8, pads x
count_include_pad, Resize modes x coordinate modes x scales...); its ``constraints`` are the
hypothesis. ``builders.py`` holds ``Point``, ``Family``, the family kinds and the helpers that
build the ONNX models; each other module holds the families of one op or topic (conv, resize,
pool, reshape, transpose, slices, pad, elementwise, matmul, patterns, adapters, cleanup, folding,
splits, int8, einsum, ethos_u). This module composes them into the named sweeps (``SWEEPS``) and
is what the rest of npu_gate imports. The order of the families and of their points is part of a
sweep: the checked-in calibration records list the points in it.
"""

from __future__ import annotations

from collections.abc import Callable

from npu_gate.calibrate.sweeps.adapters import adapter_families
from npu_gate.calibrate.sweeps.builders import (
    ADAPTER,
    CONTEXT,
    ELIMINATE,
    LOWER,
    OP,
    PATTERN,
    SPLIT,
    Family,
    Point,
    X,
    between,
    dims,
    f32,
    i64,
    model,
    node,
    quant_request,
    quantized,
    single,
)
from npu_gate.calibrate.sweeps.cleanup import cleanup_families
from npu_gate.calibrate.sweeps.conv import conv_families, convtranspose_family
from npu_gate.calibrate.sweeps.einsum import (
    EINSUM_POINTS,
    EINSUM_QDQ_HYPOTHESIS,
    einsum_family,
    einsum_point,
    einsum_points,
)
from npu_gate.calibrate.sweeps.elementwise import binary_families, rank_families, unary_families
from npu_gate.calibrate.sweeps.ethos_u import TORCH_X, ethos_u, export_torch_point
from npu_gate.calibrate.sweeps.folding import folding_families
from npu_gate.calibrate.sweeps.int8 import add_dtypes_int8, quantized_families
from npu_gate.calibrate.sweeps.matmul import matmul_families, recurrent_families
from npu_gate.calibrate.sweeps.pad import pad_family
from npu_gate.calibrate.sweeps.patterns import issue20_pattern_families, normalize_point, pattern_families
from npu_gate.calibrate.sweeps.pool import pool_families, pool_point
from npu_gate.calibrate.sweeps.reshape import reshape_families, shuffle_point
from npu_gate.calibrate.sweeps.resize import resize_families
from npu_gate.calibrate.sweeps.slices import slice_axis0_family, slice_family, slice_reverse_family
from npu_gate.calibrate.sweeps.splits import split_families
from npu_gate.calibrate.sweeps.transpose import transpose_family

# what the rest of npu_gate and the tests import from here
__all__ = [
    "ADAPTER",
    "CONTEXT",
    "EINSUM_POINTS",
    "EINSUM_QDQ_HYPOTHESIS",
    "ELIMINATE",
    "LOWER",
    "OP",
    "PATTERN",
    "SPLIT",
    "SWEEPS",
    "TORCH_X",
    "Family",
    "Point",
    "X",
    "between",
    "cleanup_families",
    "einsum_family",
    "einsum_point",
    "einsum_points",
    "export_torch_point",
    "f32",
    "folding_families",
    "i64",
    "model",
    "node",
    "normalize_point",
    "quant_request",
    "quantized",
    "reshape_families",
    "shuffle_point",
    "single",
]


def _tiny_transpose(d: int) -> Point:
    return between(f"transpose-1x2x{d}x4", "Transpose", [1, 2, d, 4], perm=[0, 1, 3, 2])


def tiny() -> list[Family]:
    """Boundaries chosen on purpose, few points: a dim around 8192 (axis 2 only), pads x count_include_pad."""
    return [
        Family("transpose-dim2-around-8192", "Transpose", [_tiny_transpose(8192), _tiny_transpose(8200)],
               [{"id": "transpose-dim2-max-8192", "input": 0, "dim": {"axis": 2, "max": 8192}}]),
        Family("averagepool-pads-count-include-pad", "AveragePool",
               [pool_point("AveragePool", 3, 1, 0), pool_point("AveragePool", 3, 1, 1),
                pool_point("AveragePool", 3, 0, 0)],
               [{"id": "averagepool-pads-count-include-pad", "any_of": [
                   {"attribute": "count_include_pad", "in": [1]}, {"attribute": "pads", "each": True, "max": 0}],
                   "fix": "use count_include_pad=True (the default) or padding=0 in nn.AvgPool2d"}]),
        Family("relu", "Relu", [single(f"relu-{dims(X)}", "Relu")]),
        Family("erf", "Erf", [single(f"erf-{dims(X)}", "Erf")]),
    ]


def standard() -> list[Family]:
    """The sweep behind the built-in rknn-rk3588 profile."""
    return [*conv_families(), convtranspose_family(), *resize_families(), *pool_families(),
            *reshape_families(plane=False), transpose_family(), slice_family(), slice_axis0_family(), pad_family(),
            *unary_families(), *binary_families(), *rank_families(), *matmul_families(), *recurrent_families(),
            *pattern_families(), *adapter_families(), *cleanup_families()]


def standard_int8() -> list[Family]:
    """The standard sweep with int8 builds (#21): the built-in rknn-rk3588 profile's. Adds the
    quantized points of ``quantized_families`` and ``add_dtypes_int8`` (for a compiler whose plug-in
    builds int8: ``probe --quantize int8``), and issue 20's two Reshape families after the standard
    ones (``standard`` keeps its 372 points, so that qnn-htp-fp16's record still derives),
    ``folding_families`` (the Mul into-conv and Mul identity families extended in place, the others
    after the clean-up), ``issue20_pattern_families`` (the timm set's F.normalize forms and Softmax at
    batch 4) and ``slice_reverse_family`` (captcha-whisperer's reversal of a non-last axis)."""
    folding = {f.id: f for f in folding_families()}
    out: list[Family] = []
    for f in standard():
        out.append(add_dtypes_int8() if f.id == "add-dtypes" else folding.pop(f.id, f))
        if f.id == "reshape-to-rank3-rank4":
            out += reshape_families()[3:]
    return out + list(folding.values()) + issue20_pattern_families() + [slice_reverse_family()] + quantized_families()


def standard_einsum() -> list[Family]:
    """The standard sweep and the Einsum equations (issue 22): the measured qnn-htp-fp16 profile's.
    The standard sweep itself is unchanged, so rknn-rk3588's record still derives."""
    return [*standard(), einsum_family()]


SWEEPS: dict[str, Callable[[], list[Family]]] = {"tiny": tiny, "standard": standard, "standard-int8": standard_int8,
                                                 "standard-einsum": standard_einsum,
                                                 "ethos-u": ethos_u,
                                                 "splits": split_families}  # + qdq: calibrate/__init__
