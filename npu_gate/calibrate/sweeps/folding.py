"""Issue 20's second clean-up families: Reshape into Transpose, Add and Mul into a Conv, the
identities of the timm set (Mul by 1, Add of 0, a Slice of the whole tensor)."""

from __future__ import annotations

import numpy as np
import onnx

from npu_gate.calibrate.sweeps.builders import ELIMINATE, Family, Point, f32, i64, model, node
from npu_gate.calibrate.sweeps.cleanup import chain, cleanup_families, eliminates


def folding_families() -> list[Family]:
    """Issue 20's second clean-up families (in ``standard-int8`` only, so ``standard`` keeps its
    372 points): a Reshape merged into the Transpose reading it (``fuse_two_reshape`` after
    ``swap_reshape_transpose_v2``, PP-PicoDet's heads), a Conv's bias written as a separate Add
    (``fuse_add_into_conv``, newer paddle2onnx exports) and the scalar Mul / Add after it
    (PP-LCNet's learnable affine blocks, ``fuse_mul_into_conv``, ``fuse_add_into_conv``), and
    the identities of the timm set (a Mul by 1 with the constant first, an Add of 0, a Slice of the
    whole tensor: ``remove_invalid_mul``, ``remove_invalid_add``, ``remove_invalid_slice``). The
    Mul families replace ``cleanup_families``' eliminate-mul-into-conv and eliminate-mul-identity
    (their points and more)."""
    def transposed(pid: str, shape: list[int], to: list[int], perm: list[int]) -> Point:
        return chain(pid, [node("Reshape", ["a", "s"], ["r"], name="resh"),
                            node("Transpose", ["r"], ["t"], name="swap", perm=perm)], {"s": i64(*to)}, "resh",
                      shape=shape)

    def affine(pid: str, measured: str, head: str = "Conv", bias: bool = True, shared: bool = False,
               identities: bool = False) -> Point:
        """head -> [Add bias [1,16,1,1]] -> Mul 0.618 -> Add 0.188 -> Relu (paddle2onnx's order, the
        scalar first in the Mul), with an Identity after each when ``identities``; ``shared``: the
        head's output is read by the last Add too."""
        def build() -> onnx.ModelProto:
            first = node("Conv", ["x", "cw"], ["a"], name="before", kernel_shape=[3, 3], pads=[1, 1, 1, 1]) \
                if head == "Conv" else node(head, ["x"], ["a"], name="before")
            body: list[onnx.NodeProto] = [first]
            last = "a"

            def step(op: str, inputs: list[str], name: str) -> None:
                nonlocal last
                body.append(node(op, inputs, [f"{name}_out"], name=name))
                last = f"{name}_out"
                if identities:
                    body.append(node("Identity", [last], [f"{name}_id"], name=f"{name}_identity"))
                    last = f"{name}_id"
            if bias:
                step("Add", [last, "b"], "bias")
            step("Mul", ["k", last], "mul")
            step("Add", [last, "c"], "shift")
            tail = [node("Add", [last, "a"], ["s"], name="after_add"), node("Relu", ["s"], ["y"], name="after")] \
                if shared else [node("Relu", [last], ["y"], name="after")]
            return model([*body, *tail], None, {"cw": f32(16, 16, 3, 3, seed=7), "b": f32(1, 16, 1, 1, seed=3),
                                                "k": f32(1, value=0.618), "c": f32(1, value=0.188)})
        return Point(pid, build, measured)

    def add(pid: str, value: np.ndarray, conv: bool = True) -> Point:
        return chain(pid, [node("Add", ["a", "k"], ["t"], name="add")], {"k": value}, "add", conv=conv)

    def by_constant(pid: str, op: str, value: np.ndarray, first: bool = False) -> Point:
        """Relu -> op(a, k) (op(k, a) when ``first``) -> Relu, k the constant ``value``."""
        low = op.lower()
        return chain(pid, [node(op, ["k", "a"] if first else ["a", "k"], ["t"], name=low)], {"k": value}, low)

    def slice_(pid: str, end: int, steps: bool = False) -> Point:
        inputs = ["a", "s0", "e", "ax1"] + (["st1"] if steps else [])
        return chain(pid, [node("Slice", inputs, ["t"], name="slice")],
                      {"s0": i64(0), "e": i64(end), "ax1": i64(1), **({"st1": i64(1)} if steps else {})}, "slice")

    cleanup = {f.id: f for f in cleanup_families()}
    mul, mul_identity = cleanup["eliminate-mul-into-conv"], cleanup["eliminate-mul-identity"]
    six = [1, 16, 6, 6]
    identities = [
        # the constant first too: timm hgnetv2's LearnableAffineBlock writes scale * x + bias
        Family("eliminate-mul-identity", "Mul", [
            *mul_identity.points, by_constant("mul-one-by-tensor", "Mul", f32(1, value=1.0), first=True)],
            kind=ELIMINATE, rule=mul_identity.rule),
        Family("eliminate-add-identity", "Add", [
            by_constant("add-zero", "Add", f32(1, value=0.0)),
            by_constant("add-zero-first", "Add", f32(1, value=0.0), first=True),
            by_constant("add-zero-per-channel", "Add", f32(1, 16, 1, 1, value=0.0)),
            by_constant("add-0.1", "Add", f32(1, value=0.1))], kind=ELIMINATE, rule=eliminates("Add", "identity")),
        # timm ghostnet's x[:, :out_chs] of a Concat that has exactly out_chs channels
        Family("eliminate-slice-identity", "Slice", [
            slice_("slice-all-channels", 16), slice_("slice-all-channels-end-max", 2**63 - 1),
            slice_("slice-all-channels-step-1", 16, steps=True), slice_("slice-first-8-channels", 8)],
            kind=ELIMINATE, rule=eliminates("Slice", "identity"))]
    return [
        Family("eliminate-reshape-into-transpose", "Reshape", [
            transposed("reshape-4d-3d-transposed", six, [1, 16, 36], [0, 2, 1]),
            transposed("reshape-4d-3d-transposed-64", [1, 16, 8, 8], [1, 16, 64], [0, 2, 1]),
            transposed("reshape-4d-2d-transposed", six, [16, 36], [1, 0]),
            transposed("reshape-4d-row-transposed", six, [1, 576], [1, 0]),
            transposed("reshape-4d-4d-transposed-0312", six, [1, 16, 3, 12], [0, 3, 1, 2]),
            transposed("reshape-4d-4d-transposed-0231", six, [1, 16, 3, 12], [0, 2, 3, 1])],
            kind=ELIMINATE, rule=eliminates("Reshape", "into-transpose")),
        Family("eliminate-add-into-conv", "Add", [
            add("add-per-channel-after-conv", f32(1, 16, 1, 1, seed=3)),
            add("add-scalar-after-conv", f32(1, value=0.188)),
            add("add-tensor-after-conv", f32(1, 16, 32, 32, seed=3)),
            add("add-per-channel-after-relu", f32(1, 16, 1, 1, seed=3), conv=False),
            affine("affine-bias-after-conv", "bias"), affine("affine-shift-after-conv", "shift"),
            affine("affine-shift-after-conv-identities", "shift", identities=True),
            affine("affine-shift-after-relu", "shift", head="Relu", bias=False),
            affine("affine-shift-after-conv-output-shared", "shift", shared=True)],
            kind=ELIMINATE, rule=eliminates("Add", "into-conv")),
        Family(mul.id, "Mul", [
            *mul.points, affine("affine-mul-after-conv", "mul"),
            affine("affine-mul-after-conv-identities", "mul", identities=True),
            affine("affine-mul-after-relu", "mul", head="Relu", bias=False)],
            kind=ELIMINATE, rule=mul.rule),
        *identities,
    ]
