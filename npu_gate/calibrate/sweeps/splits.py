"""Splits: one node the compiler runs as several ops on several devices (wide MatMul and Gemm
heads around 8192 output features, and the Transpose after them alone)."""

from __future__ import annotations

from typing import Any

import onnx

from npu_gate.calibrate.sweeps.builders import SPLIT, Family, Point, between, f32, model, node

SPLIT_N = (4096, 8191, 8192, 8193, 8210, 16384, 18385)  # output features around the 8192 Transpose limit


def _matmul_head(t: int, c: int, n: int, last: bool = False) -> Point:
    """Relu -> MatMul [1, T, C] x [C, N] (a constant weight: nn.Linear without bias) -> Relu (or the
    graph output when ``last``, as a recogniser's CTC head): RKNN makes the MatMul a Conv on
    [1, C, 1, T] and transposes its [1, N, 1, T] output back."""
    def build() -> onnx.ModelProto:
        tail = [] if last else [node("Relu", ["t"], ["y"], name="after")]
        return model([node("Relu", ["x"], ["a"], name="before"),
                      node("MatMul", ["a", "w"], ["y" if last else "t"], name="matmul"), *tail],
                     {"x": ("float32", [1, t, c])}, {"w": f32(c, n)})
    return Point(f"matmul-1x{t}x{c}-by-{c}x{n}" + ("-last" if last else ""), build, "matmul")


def _gemm_head(t: int, c: int, n: int) -> Point:
    """Relu -> Gemm [T, C] x [N, C]^T + bias (nn.Linear) -> Relu."""
    def build() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"),
                      node("Gemm", ["a", "w", "b"], ["t"], name="gemm", transB=1),
                      node("Relu", ["t"], ["y"], name="after")],
                     {"x": ("float32", [t, c])}, {"w": f32(n, c), "b": f32(n)})
    return Point(f"gemm-{t}x{c}-by-{c}x{n}", build, "gemm")


def _split_rule(op: str, where: list[dict[str, Any]]) -> dict[str, Any]:
    """The candidate ``splits`` entry of a wide-head family (no evidence: infer.py adds it when confirmed)."""
    name = op.lower()
    return {"id": f"{name}-wide-output-transpose-on-cpu", "op": op, "where": where,
            "constraints": [{"id": f"{name}-output-features-max-8192",
                             "any_of": [{"output": 0, "dim": {"axis": -1, "max": 8192}},
                                        {"output": 0, "dim": {"axis": -2, "max": 1}}],
                             "message": "RKNN runs it as a Conv, then transposes the [1, N, 1, T] result back on "
                                        "the CPU (a Transpose with a dim above 8192)"}],
            "pieces": [{"op": "Conv", "device": "npu"}, {"op": "Transpose", "device": "cpu"},
                       {"op": "Reshape", "device": "npu"}],
            "fix": "keep the nn.Linear's out_features at or below 8192, or split it into Linears of at most 8192 "
                   "outputs concatenated after them, or run the head on the CPU deliberately"}


def split_families() -> list[Family]:
    """MatMul and Gemm with a constant weight at N output features around 8192 (T and C varied),
    and the Transpose RKNN adds after them alone at the same shapes: which heads the compiler
    splits into an NPU Conv and a CPU Transpose (issue 20's recognisers: N = 6625 and 6906 stay
    whole, 8210 and 18385 are split)."""
    matmul = [_matmul_head(40, 120, n) for n in SPLIT_N]
    matmul += [_matmul_head(t, c, n) for t, c in ((1, 120), (8, 120), (80, 120), (40, 32), (40, 512))
               for n in (8192, 8193)]
    matmul += [_matmul_head(40, 120, n, last=True) for n in (8192, 8193, 18385)]
    gemm = [_gemm_head(32, 64, n) for n in SPLIT_N] + [_gemm_head(t, c, n) for t, c in ((1, 64), (32, 1024))
                                                        for n in (8192, 8193)]
    transpose = [between(f"transpose-1x{n}x1x{t}-perm0321", "Transpose", [1, n, 1, t], perm=[0, 3, 2, 1])
                 for t in (1, 8, 40) for n in (8192, 8193)]
    transpose += [between(f"transpose-1x{n}x1x40-perm0321", "Transpose", [1, n, 1, 40], perm=[0, 3, 2, 1])
                  for n in (4096, 16384, 18385)]
    return [Family("matmul-const-weight-wide-n", "MatMul", matmul, kind=SPLIT, rule=_split_rule(
                "MatMul", [{"id": "matmul-constant-weight", "input": 1, "constant": True, "rank": {"min": 2, "max": 2}},
                           {"id": "matmul-output-rank-2-or-3", "output": 0, "rank": {"min": 2, "max": 3}}]),
                   note="[1, T, C] x [C, N] at N around 8192, T and C varied; the last three as the graph output"),
            Family("gemm-const-weight-wide-n", "Gemm", gemm, kind=SPLIT, rule=_split_rule(
                "Gemm", [{"id": "gemm-constant-weight", "input": 1, "constant": True}]),
                   note="[T, C] x [N, C]^T + bias at N around 8192"),
            Family("transpose-wide-dim1-to-last", "Transpose", transpose, kind=SPLIT,
                   note="the Transpose the compiler adds after a wide head, [1, N, 1, T] -> [1, T, 1, N], alone")]
