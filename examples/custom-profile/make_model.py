"""Build model.onnx for this example: x -> Conv -> Relu -> Resize -> Sigmoid.

The Conv breaks three of team-npu's constraints at once (stride 3, a 3x5 kernel,
group 2 of 16 input channels), and Resize is removed by the team profile.
Run ``python examples/custom-profile/make_model.py`` to rewrite model.onnx.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((16, 8, 3, 5)).astype(np.float32)  # group 2: 16 / 2 in-channels
    bias = np.zeros(16, dtype=np.float32)
    scales = np.array([1, 1, 2, 2], dtype=np.float32)
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "w", "b"],
            ["c"],
            name="conv0",
            kernel_shape=[3, 5],
            strides=[3, 3],
            pads=[1, 2, 1, 2],
            group=2,
        ),
        helper.make_node("Relu", ["c"], ["r"], name="relu0"),
        helper.make_node("Resize", ["r", "", "scales"], ["u"], name="resize0", mode="nearest"),
        helper.make_node("Sigmoid", ["u"], ["y"], name="sigmoid0"),
    ]
    graph = helper.make_graph(
        nodes,
        "custom_profile_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 22, 22])],
        initializer=[
            numpy_helper.from_array(weight, "w"),
            numpy_helper.from_array(bias, "b"),
            numpy_helper.from_array(scales, "scales"),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="npu_gate.examples"
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    out = Path(__file__).with_name("model.onnx")
    out.write_bytes(build().SerializeToString())
    print(f"wrote {out}")
