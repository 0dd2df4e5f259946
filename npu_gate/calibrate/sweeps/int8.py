"""Points in the compiler's int8 build (#21): ops of the lesson's net, a Relu and the Add dtypes."""

from __future__ import annotations

import numpy as np

from npu_gate.calibrate.sweeps.builders import Family, X, dims, quantized, single
from npu_gate.calibrate.sweeps.conv import conv_point
from npu_gate.calibrate.sweeps.elementwise import binary_point


def add_dtypes_int8() -> Family:
    """``add-dtypes`` with the int8 builds of a float Add. uint8 is the activation type of
    onnxruntime's QDQ form, measured only so: a float Add the compiler quantizes itself, placed
    as its QDQ unit."""
    dtypes = [{"id": "add-input-dtype", "input": 0, "dtype": ["float32", "float16", "int8", "int32", "uint8"],
               "message": "uint8 was measured only as a quantized (QDQ) Add, in the compiler's int8 build"}]
    return Family("add-dtypes", "Add", [binary_point("Add", "tensor", d) for d in ("float16", "int8", "int32", "int64")]
                  + [quantized(binary_point("Add", kind)) for kind in ("tensor", "scalar")],
                  dtypes, note="input dtypes; the int8 build of a float Add (its QDQ unit reads uint8)")


def quantized_families() -> list[Family]:
    """Ops of the lesson's net (Conv + HardSwish as Add, Clip, Mul, Div) and a Relu in the compiler's
    int8 build (``quantized``); the quantized Add points are in ``add_dtypes_int8``."""
    return [
        Family("conv-int8", "Conv", [quantized(conv_point("conv-k3"))], note="int8 build"),
        Family("clip-int8", "Clip", [quantized(single("clip-0-6", "Clip", None,
                                                      {"lo": np.float32(0), "hi": np.float32(6)}, ["lo", "hi"]))],
               note="int8 build"),
        Family("mul-int8", "Mul", [quantized(binary_point("Mul", "tensor"))], note="int8 build"),
        Family("div-int8", "Div", [quantized(binary_point("Div", "scalar"))], note="int8 build"),
        Family("relu-int8", "Relu", [quantized(single(f"relu-{dims(X)}", "Relu"))], note="int8 build"),
    ]
