"""GELU (the Gelu op or the Erf pattern exporters write) → its tanh approximation."""

from __future__ import annotations

import math

from npu_gate.rewrites.base import Builder, Emitted, GraphView, Match, Rewrite

SQRT2 = math.sqrt(2.0)


def _find(view: GraphView) -> list[Match]:
    found = []
    for i, n in enumerate(view.nodes):
        if view.is_op(i, "Gelu") and view.attr(i, "approximate", "none") == "none":
            found.append(Match((i,), view.node_name(i), n.output[0], {"x": n.input[0]}))
        elif view.is_op(i, "Erf"):
            m = _match_erf(view, i)
            if m is not None:
                found.append(m)
    return found


def _match_erf(view: GraphView, erf: int) -> Match | None:
    """0.5 · x · (1 + Erf(x / √2)): the Erf input is x/√2 or x·(1/√2), then Add 1, then two
    Muls by x and 0.5 in any order (or x·0.5 computed first)."""
    scale = view.producer.get(view.nodes[erf].input[0])
    if scale is None or len(view.consumers.get(view.nodes[erf].input[0], [])) != 1:
        return None
    s_in = list(view.nodes[scale].input)
    if view.is_op(scale, "Div") and view.is_scalar(s_in[1], SQRT2, 1e-4):
        x = s_in[0]
    elif view.is_op(scale, "Mul"):
        x = next((a for a, c in ((s_in[0], s_in[1]), (s_in[1], s_in[0])) if view.is_scalar(c, 1 / SQRT2, 1e-4)), "")
        if not x:
            return None
    else:
        return None
    add = _only_user(view, view.nodes[erf].output[0])
    if add is None or not view.is_op(add, "Add") or not view.is_scalar(view.other_input(add, view.nodes[erf].output[0])
                                                                        or "", 1.0):
        return None
    one_plus = view.nodes[add].output[0]
    m1 = _only_user(view, one_plus)
    if m1 is None or not view.is_op(m1, "Mul"):
        return None
    other = view.other_input(m1, one_plus) or ""
    nodes = [scale, erf, add, m1]
    if other == x or view.is_scalar(other, 0.5):  # (x or 0.5) * (1 + erf), then the other factor
        m2 = _only_user(view, view.nodes[m1].output[0])
        want_x = other != x
        if m2 is None or not view.is_op(m2, "Mul"):
            return None
        last_other = view.other_input(m2, view.nodes[m1].output[0]) or ""
        if (last_other != x) if want_x else not view.is_scalar(last_other, 0.5):
            return None
        nodes.append(m2)
        out = view.nodes[m2].output[0]
    else:  # (x * 0.5) * (1 + erf)
        half = view.producer.get(other)
        if half is None or not view.is_op(half, "Mul") or _only_user(view, other) != m1:
            return None
        if view.other_input(half, x) is None or not view.is_scalar(view.other_input(half, x) or "", 0.5):
            return None
        nodes.insert(0, half)
        out = view.nodes[m1].output[0]
    if not view.keeps_shape(nodes, x):  # the tanh form's constants are 0-d: it keeps x's shape
        return None
    return Match(tuple(sorted(nodes)), view.node_name(erf), out, {"x": x})


def _only_user(view: GraphView, tensor: str) -> int | None:
    users = view.consumers.get(tensor, [])
    return users[0] if len(users) == 1 and tensor not in view.outputs else None


def _build(view: GraphView, m: Match) -> Emitted:
    x = m.params["x"]
    b = Builder(view, m.anchor, "gelu_tanh", view.np_dtype(x))
    x2 = b.op("Mul", [x, x])
    x3 = b.op("Mul", [x2, x])
    cubic = b.op("Mul", [x3, b.const("c", 0.044715)])
    inner = b.op("Add", [x, cubic])
    arg = b.op("Mul", [inner, b.const("sqrt_2_over_pi", math.sqrt(2.0 / math.pi))])
    t = b.op("Tanh", [arg])
    one_plus = b.op("Add", [t, b.const("one", 1.0)])
    half_x = b.op("Mul", [x, b.const("half", 0.5)])
    b.op("Mul", [half_x, one_plus], m.output)
    return b.done()


GELU_TANH = Rewrite(
    name="gelu-tanh",
    matches="Gelu (approximate=none, opset 20+) and 0.5·x·(1 + Erf(x/√2)) as exporters write it",
    emits="0.5·x·(1 + Tanh(√(2/π)·(x + 0.044715·x³))) with Mul, Add, Tanh",
    exact=False,
    doc="An approximation: the tanh form differs from exact GELU by up to about 5e-4 in absolute "
        "terms (largest near |x| ≈ 2), so its error is measured and reported against the "
        "tolerance, never assumed away. The Erf pattern's constants may not raise x's rank.",
    find=_find,
    build=_build,
)
