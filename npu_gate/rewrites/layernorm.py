"""LayerNormalization → reductions and elementwise ops."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from npu_gate.rewrites.base import Builder, Emitted, GraphView, Match, Rewrite


def _find(view: GraphView) -> list[Match]:
    found = []
    for i, n in enumerate(view.nodes):
        if not view.is_op(i, "LayerNormalization"):
            continue
        # Mean and InvStdDev outputs (training) are not emitted: only match when unused.
        if any(name and (view.consumers.get(name) or name in view.outputs) for name in n.output[1:]):
            continue
        axis = int(view.attr(i, "axis", -1))
        if axis >= 0:
            shape = view.shapes().get(n.input[0])
            if shape is None:
                continue  # positive axis needs the rank
            axis -= len(shape)
        found.append(Match((i,), view.node_name(i), n.output[0], {
            "x": n.input[0], "scale": n.input[1], "bias": n.input[2] if len(n.input) > 2 else "",
            "axes": list(range(axis, 0)), "epsilon": float(view.attr(i, "epsilon", 1e-5)),
            # Mean and variance are computed in stash_type (default float32), as ONNX defines it.
            "stash": int(view.attr(i, "stash_type", onnx.TensorProto.FLOAT)),
        }))
    return found


def _build(view: GraphView, m: Match) -> Emitted:
    p = m.params
    x_type, stash = view.elem_type(p["x"]), p["stash"]
    # ONNX's own definition: normalise in stash_type, cast back, then scale and bias in x's type
    # (fp16 LayerNorm computes mean and variance in float32: dropping that is not exact).
    b = Builder(view, m.anchor, "decomposed", helper.tensor_dtype_to_np_dtype(stash))
    x = p["x"] if x_type == stash else b.op("Cast", [p["x"]], to=stash)

    def mean(t: str) -> str:
        if view.opset >= 18:  # axes became an input in opset 18
            return b.op("ReduceMean", [t, b.const("axes", p["axes"], np.int64)], keepdims=1)
        return b.op("ReduceMean", [t], axes=p["axes"], keepdims=1)

    mu = mean(x)
    centred = b.op("Sub", [x, mu])
    var = mean(b.op("Pow", [centred, b.const("two", 2.0)]))
    std = b.op("Sqrt", [b.op("Add", [var, b.const("epsilon", p["epsilon"])])])
    normed = b.op("Div", [centred, std])
    if x_type != stash:
        normed = b.op("Cast", [normed], to=x_type)
    if p["bias"]:
        b.op("Add", [b.op("Mul", [normed, p["scale"]]), p["bias"]], m.output)
    else:
        b.op("Mul", [normed, p["scale"]], m.output)
    return b.done()


DECOMPOSE = Rewrite(
    name="decompose-layernorm",
    matches="LayerNormalization (opset 17+) whose Mean/InvStdDev outputs are unused; any axis "
            "(a non-negative axis needs the input rank), epsilon, optional bias",
    emits="(Cast to stash_type →) ReduceMean → Sub → Pow 2 → ReduceMean → Add ε → Sqrt → Div "
          "(→ Cast back) → Mul scale (→ Add bias)",
    exact=True,
    doc="(x − mean) / √(var + ε) · scale + bias over the axes from `axis` to the last. As ONNX "
        "defines it, the normalisation is computed in `stash_type` (float32 unless set): an "
        "input of another dtype (float16) is cast to it and the result cast back before scale "
        "and bias.",
    find=_find,
    build=_build,
)
