"""The compiler's clean-up: what it eliminates before placement (Identity, Dropout, Casts, reshape
chains, inverse Transposes, BatchNormalization and Mul into a Conv...) and Sum lowered to Add."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from npu_gate.calibrate.sweeps.builders import ELIMINATE, LOWER, Family, Point, X, f32, i64, model, node


def chain(pid: str, body: list[onnx.NodeProto], inits: dict[str, Any] | None = None, node_: str | None = None,
           shape: list[int] | None = None, opset: int = 17, conv: bool = False) -> Point:
    """x -> Relu (or a 3x3 Conv when ``conv``) named before writing a -> ``body`` (reading a,
    writing t) -> Relu named after -> y: the measured node sits inside the graph, as in networks."""
    def build() -> onnx.ModelProto:
        c = (shape or X)[1]
        head = node("Conv", ["x", "cw"], ["a"], name="before", kernel_shape=[3, 3], pads=[1, 1, 1, 1]) if conv \
            else node("Relu", ["x"], ["a"], name="before")
        weights = {"cw": f32(c, c, 3, 3, seed=7)} if conv else {}
        return model([head, *body, node("Relu", ["t"], ["y"], name="after")], {"x": ("float32", shape or X)},
                     {**weights, **(inits or {})}, opset=opset)
    return Point(pid, build, node_)


def _bn_inits(scale: float | None = None, bias: float = 0.0, mean: float = 0.0, var: float = 1.0) -> dict[str, Any]:
    """A BatchNormalization's parameters over 16 channels: the values given, or random (None)."""
    if scale is None:
        return {"s": f32(16, seed=1), "b": f32(16, seed=2), "m": f32(16, seed=3), "v": f32(16, seed=4)}
    return {"s": f32(16, value=scale), "b": f32(16, value=bias), "m": f32(16, value=mean), "v": f32(16, value=var)}


def _bn(epsilon: float = 1e-5) -> onnx.NodeProto:
    return node("BatchNormalization", ["a", "s", "b", "m", "v"], ["t"], name="bn", epsilon=epsilon)


def eliminates(op: str, when: str) -> dict[str, Any]:
    """A candidate ``eliminates`` entry: ``op`` is removed under the condition ``when``."""
    return {"op": op, "when": when}


def cleanup_families() -> list[Family]:
    """What RKNN-Toolkit2 removes before placement (its remove_invalid_*, fuse_*_into_conv,
    bypass_* rewrites), each condition with near misses where it does not hold."""
    cast = {t: getattr(TensorProto, t) for t in ("FLOAT", "FLOAT16", "INT32")}
    reshape_back = [node("Reshape", ["a", "s1"], ["r1"], name="resh1"),
                    node("Reshape", ["r1", "s2"], ["t"], name="resh2")]
    shapes = {"s1": i64(1, 16, 1024), "s2": i64(*X)}
    flat = [node("Flatten", ["a"], ["f"], name="flat", axis=1), node("Reshape", ["f", "s2"], ["t"], name="resh2")]
    unsq = [node("Unsqueeze", ["a", "ax"], ["u"], name="unsq"), node("Squeeze", ["u", "ax"], ["t"], name="sq")]
    pair = [node("Transpose", ["a"], ["t1"], name="t1", perm=[0, 2, 3, 1]),
            node("Transpose", ["t1"], ["t"], name="t2", perm=[0, 3, 1, 2])]
    shuffle = [node("Reshape", ["a", "g"], ["r1"], name="split"), node("Transpose", ["r1"], ["p"], name="swap",
                                                                       perm=[0, 2, 1, 3, 4]),
               node("Reshape", ["p", "s2"], ["t"], name="merge")]

    def gemm_head() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"), node("GlobalAveragePool", ["a"], ["g"], name="gap"),
                      node("Flatten", ["g"], ["f"], name="flat", axis=1),
                      node("Gemm", ["f", "w", "b"], ["y"], name="fc", transB=1)],
                     None, {"w": f32(10, 16), "b": f32(10)})

    def mul(pid: str, value: np.ndarray, conv: bool = True, shared: bool = False) -> Point:
        if not shared:
            return chain(pid, [node("Mul", ["a", "k"], ["t"], name="mul")], {"k": value}, "mul", conv=conv)

        def build() -> onnx.ModelProto:
            return model([node("Conv", ["x", "cw"], ["a"], name="before", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                          node("Mul", ["a", "k"], ["t"], name="mul"), node("Add", ["t", "a"], ["y"], name="after")],
                         None, {"cw": f32(16, 16, 3, 3, seed=7), "k": value})
        return Point(pid, build, "mul")

    def bn_shared() -> onnx.ModelProto:
        return model([node("Conv", ["x", "cw"], ["a"], name="before", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), _bn(),
                      node("Add", ["t", "a"], ["y"], name="after")], None,
                     {"cw": f32(16, 16, 3, 3, seed=7), **_bn_inits()})

    def sum3() -> onnx.ModelProto:
        convs = [node("Conv", ["x", f"w{i}"], [f"c{i}"], name=f"conv{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
                 for i in range(3)]
        return model([*convs, node("Sum", ["c0", "c1", "c2"], ["s"], name="sum"),
                      node("Relu", ["s"], ["y"], name="after")], None,
                     {f"w{i}": f32(16, 16, 3, 3, seed=i) for i in range(3)})

    def sum2() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"),
                      node("Conv", ["x", "w0"], ["c0"], name="conv0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                      node("Sum", ["c0", "a"], ["s"], name="sum"), node("Relu", ["s"], ["y"], name="after")],
                     None, {"w0": f32(16, 16, 3, 3)})

    cleanup = [
        ("identity", eliminates("Identity", "always"), [chain("identity-between-relus",
                                                                  [node("Identity", ["a"], ["t"])])]),
        ("dropout", eliminates("Dropout", "always"), [
            chain("dropout-opset17", [node("Dropout", ["a"], ["t"])]),
            chain("dropout-opset9", [node("Dropout", ["a"], ["t"])], opset=9)]),
        ("cast-same-dtype", eliminates("Cast", "same-dtype"), [
            chain("cast-float32-to-float32", [node("Cast", ["a"], ["t"], to=cast["FLOAT"])])]),
        ("cast-float-to-float", eliminates("Cast", "float-to-float"), [
            chain("cast-float32-to-float16", [node("Cast", ["a"], ["t"], to=cast["FLOAT16"])]),
            chain("cast-float32-to-float16-after-conv", [node("Cast", ["a"], ["t"], to=cast["FLOAT16"])], conv=True),
            chain("cast-float16-to-float32",
                   [node("Cast", ["a"], ["h"], name="to_half", to=cast["FLOAT16"]),
                    node("Cast", ["h"], ["t"], to=cast["FLOAT"])]),
            chain("cast-float32-to-int32-and-back", [node("Cast", ["a"], ["i"], to=cast["INT32"]),
                                                      node("Cast", ["i"], ["t"], name="to_float", to=cast["FLOAT"])])]),
        ("reshape-chain", eliminates("Reshape", "reshape-chain"), [
            chain("reshape-chain-back-first", reshape_back, shapes, "resh1"),
            chain("reshape-chain-back-last", reshape_back, shapes, "resh2")]),
        ("flatten-reshape-chain", eliminates("Flatten", "reshape-chain"), [
            chain("flatten-reshape-back", flat, shapes, "flat")]),
        ("unsqueeze-reshape-chain", eliminates("Unsqueeze", "reshape-chain"), [
            chain("unsqueeze-squeeze-first", unsq, {"ax": i64(0)}, "unsq")]),
        ("squeeze-reshape-chain", eliminates("Squeeze", "reshape-chain"), [
            chain("unsqueeze-squeeze-last", unsq, {"ax": i64(0)}, "sq")]),
        ("transpose-inverse-pair", eliminates("Transpose", "inverse-transpose-pair"), [
            chain("transpose-pair-first", pair, None, "t1"), chain("transpose-pair-second", pair, None, "t2")]),
        ("reshape-around-transpose", eliminates("Reshape", "around-transpose"), [
            chain("shuffle-after-conv-first", shuffle, {"g": i64(1, 2, 8, 32, 32), **shapes}, "split", conv=True),
            chain("shuffle-after-conv-last", shuffle, {"g": i64(1, 2, 8, 32, 32), **shapes}, "merge", conv=True)]),
        ("flatten-into-gemm", eliminates("Flatten", "into-gemm"), [Point("flatten-before-gemm", gemm_head, "flat")]),
        ("batchnormalization-into-conv", eliminates("BatchNormalization", "into-conv"), [
            chain("batchnormalization-after-conv", [_bn()], _bn_inits(), "bn", conv=True),
            Point("batchnormalization-after-conv-output-shared", bn_shared, "bn"),
            chain("batchnormalization-after-relu", [_bn()], _bn_inits(), "bn")]),
        ("batchnormalization-identity", eliminates("BatchNormalization", "identity"), [
            chain("batchnormalization-identity", [_bn()], _bn_inits(1, 0, 0, 1), "bn"),
            chain("batchnormalization-identity-epsilon-0.1", [_bn(0.1)], _bn_inits(1, 0, 0, 1), "bn"),
            chain("batchnormalization-bias-0.1", [_bn()], _bn_inits(1, 0.1, 0, 1), "bn"),
            chain("batchnormalization-variance-2", [_bn()], _bn_inits(1, 0, 0, 2), "bn")]),
        ("mul-into-conv", eliminates("Mul", "into-conv"), [
            mul("mul-scalar-after-conv", f32(1, value=1.38)), mul("mul-per-channel-after-conv", f32(1, 16, 1, 1)),
            mul("mul-tensor-after-conv", f32(1, 16, 32, 32)),
            mul("mul-scalar-after-conv-output-shared", f32(1, value=1.38), shared=True)]),
        ("mul-identity", eliminates("Mul", "identity"), [
            mul("mul-by-one", f32(1, value=1.0), conv=False), mul("mul-by-1.38", f32(1, value=1.38), conv=False)]),
        ("concat-identity", eliminates("Concat", "identity"), [
            chain("concat-one-input", [node("Concat", ["a"], ["t"], axis=1)]),
            chain("concat-two-inputs", [node("Concat", ["a", "a"], ["t"], axis=1)])]),
    ]
    out = [Family(f"eliminate-{name}", rule["op"], points, kind=ELIMINATE, rule=rule) for name, rule, points in cleanup]
    out.append(Family("lower-sum-to-add", "Sum", [Point("sum-three-convs", sum3, "sum"),
                                                  Point("sum-two-inputs", sum2, "sum")],
                      kind=LOWER, rule={"op": "Sum", "to": "Add"}))
    return out
