"""Pad mode=reflect with constant pads → Slice + Concat per padded axis."""

from __future__ import annotations

import numpy as np

from npu_gate.rewrites.base import Builder, Emitted, GraphView, Match, Rewrite


def _find(view: GraphView) -> list[Match]:
    if view.opset < 10:  # Slice takes starts/ends/axes/steps as inputs (and steps at all) from opset 10
        return []
    found = []
    for i, n in enumerate(view.nodes):
        if not view.is_op(i, "Pad") or view.attr(i, "mode", "constant") != "reflect":
            continue
        shape = view.shapes().get(n.input[0])
        if shape is None:
            continue
        if view.opset < 11:
            pads = view.attr(i, "pads")
        else:
            value = view.const(n.input[1]) if len(n.input) > 1 else None
            pads = None if value is None else [int(v) for v in value.reshape(-1)]
        if pads is None:
            continue
        rank = len(shape)
        axes = list(range(rank))
        if len(n.input) > 3 and n.input[3]:
            given = view.const(n.input[3])
            if given is None:
                continue
            axes = [int(a) % rank for a in given.reshape(-1)]
        if len(pads) != 2 * len(axes):
            continue
        per_axis: list[tuple[int, int, int]] = []
        for k, axis in enumerate(axes):
            before, after = pads[k], pads[k + len(axes)]
            dim = shape[axis]
            # Reflection needs before/after < dim; negative pads (crops) are not handled.
            if before < 0 or after < 0 or dim is None or max(before, after) >= dim:
                per_axis = []
                break
            if before or after:
                per_axis.append((axis, before, after))
        else:
            found.append(Match((i,), view.node_name(i), n.output[0], {"x": n.input[0], "pads": per_axis}))
    return found


def _build(view: GraphView, m: Match) -> Emitted:
    b = Builder(view, m.anchor, "slice_concat", view.np_dtype(m.params["x"]))
    current = m.params["x"]
    steps = m.params["pads"]
    if not steps:  # all pads zero: Pad is the identity
        b.op("Identity", [current], m.output)
        return b.done()

    def ints(label: str, v: int) -> str:
        return b.const(label, [v], np.int64)

    for k, (axis, before, after) in enumerate(steps):
        parts = []
        if before:  # x[before], x[before-1], ..., x[1]
            parts.append(b.op("Slice", [current, ints("starts", before), ints("ends", 0), ints("axes", axis),
                                        ints("steps", -1)]))
        parts.append(current)
        if after:  # x[n-2], x[n-3], ..., x[n-1-after]
            parts.append(b.op("Slice", [current, ints("starts", -2), ints("ends", -2 - after), ints("axes", axis),
                                        ints("steps", -1)]))
        last = k == len(steps) - 1
        current = b.op("Concat", parts, m.output if last else None, axis=axis)
    return b.done()


REFLECT = Rewrite(
    name="pad-reflect-to-slice-concat",
    matches="Pad mode=reflect with constant non-negative pads (and constant axes) smaller than the "
            "padded dims, static input shape; opset 10+",
    emits="per padded axis: Slice (reversed, step −1) before and after, Concat",
    exact=True,
    doc="Reflection padding is a copy of reversed edge slices: per axis, "
        "Concat(x[p..1], x, x[n−2..n−1−q]). Axes are padded one after another, as np.pad does.",
    find=_find,
    build=_build,
)
