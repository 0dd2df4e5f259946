"""MatMul and Gemm with constant weights or two tensors; LSTM and GRU."""

from __future__ import annotations

from npu_gate.calibrate.sweeps.builders import Family, f32, single


def matmul_families() -> list[Family]:
    return [
        Family("matmul-operands", "MatMul", [
            single("matmul-rank4-const-weight", "MatMul", None, {"w": f32(32, 16)}, ["w"]),
            single("matmul-rank3-const-weight", "MatMul", {"x": ("float32", [1, 32, 64])}, {"w": f32(64, 32)}, ["w"]),
            single("matmul-rank4-two-tensors", "MatMul", {"x": ("float32", [1, 2, 16, 32]),
                                                          "x2": ("float32", [1, 2, 32, 16])}, None, ["x2"])]),
        Family("gemm-const-weight", "Gemm", [
            single("gemm-1x64-by-64x32", "Gemm", {"x": ("float32", [1, 64])}, {"w": f32(32, 64), "b": f32(32)},
                   ["w", "b"], transB=1)]),
    ]


def recurrent_families() -> list[Family]:
    h, i = 16, 16
    xs = {"x": ("float32", [4, 1, i])}
    return [Family("lstm", "LSTM", [single("lstm-seq4-h16", "LSTM", xs, {"w": f32(1, 4 * h, i), "r": f32(1, 4 * h, h)},
                                           ["w", "r"], hidden_size=h)]),
            Family("gru", "GRU", [single("gru-seq4-h16", "GRU", xs, {"w": f32(1, 3 * h, i), "r": f32(1, 3 * h, h)},
                                         ["w", "r"], hidden_size=h)])]
