"""HardSwish ↔ x * Clip(x + 3, 0, 6) / 6, in both directions."""

from __future__ import annotations

from npu_gate.rewrites.base import Builder, Emitted, GraphView, Match, Rewrite


def _find_hardswish(view: GraphView) -> list[Match]:
    if view.opset < 14:  # HardSwish exists from opset 14
        return []
    return [Match((i,), view.node_name(i), n.output[0], {"x": n.input[0]})
            for i, n in enumerate(view.nodes) if view.is_op(i, "HardSwish")]


def _decompose(view: GraphView, m: Match) -> Emitted:
    x = m.params["x"]
    b = Builder(view, m.anchor, "decomposed", view.np_dtype(x))
    shifted = b.op("Add", [x, b.const("three", 3.0)])
    gate = b.clip(shifted, 0.0, 6.0)
    scaled = b.op("Mul", [x, gate])
    b.op("Div", [scaled, b.const("six", 6.0)], m.output)
    return b.done()


DECOMPOSE = Rewrite(
    name="decompose-hardswish",
    matches="HardSwish (opset 14+)",
    emits="Add(x, 3) → Clip(0, 6) → Mul(x, ·) → Div(·, 6)",
    exact=True,
    doc="HardSwish(x) = x · max(0, min(1, x/6 + 1/2)) = x · Clip(x + 3, 0, 6) / 6. For targets "
        "that run Add, Clip, Mul and Div but not HardSwish.",
    find=_find_hardswish,
    build=_decompose,
)


def _find_fusable(view: GraphView) -> list[Match]:
    """x*Clip(x+3,0,6)/6 in the orders exporters write it, and x*HardSigmoid(1/6, 1/2)(x)."""
    if view.opset < 14:
        return []
    found: list[Match] = []
    for i in range(len(view.nodes)):
        if view.is_op(i, "Add"):
            m = _match_clip_form(view, i)
        elif view.is_op(i, "HardSigmoid"):
            m = _match_hardsigmoid_form(view, i)
        else:
            continue
        if m is not None:
            found.append(m)
    return found


def _scale_by_sixth(view: GraphView, i: int, tensor: str) -> bool:
    """Node i computes tensor / 6 or tensor * (1/6)."""
    other = view.other_input(i, tensor)
    if other is None:
        return False
    if view.is_op(i, "Div"):
        return list(view.nodes[i].input) == [tensor, other] and view.is_scalar(other, 6.0)
    return view.is_op(i, "Mul") and view.is_scalar(other, 1 / 6)


def _match_clip_form(view: GraphView, add: int) -> Match | None:
    ins = list(view.nodes[add].input)
    x = next((a for a, c in ((ins[0], ins[1]), (ins[1], ins[0])) if view.is_scalar(c, 3.0)), None)
    if x is None or view.const(x) is not None:
        return None
    clip = view.only_consumer(view.nodes[add].output[0], "Clip")
    if clip is None or view.nodes[clip].input[0] != view.nodes[add].output[0]:
        return None
    if not _clips_to(view, clip, 0.0, 6.0):
        return None
    gate = view.nodes[clip].output[0]
    users = view.consumers.get(gate, [])
    if len(users) != 1 or gate in view.outputs:
        return None
    nxt = users[0]
    if view.is_op(nxt, "Mul") and view.other_input(nxt, gate) == x:  # (x * clip) / 6
        last = _single_user(view, view.nodes[nxt].output[0])
        if last is None or not _scale_by_sixth(view, last, view.nodes[nxt].output[0]):
            return None
    elif _scale_by_sixth(view, nxt, gate):  # x * (clip / 6)
        last = _single_user(view, view.nodes[nxt].output[0])
        if last is None or not view.is_op(last, "Mul") or view.other_input(last, view.nodes[nxt].output[0]) != x:
            return None
    else:
        return None
    if not view.keeps_shape((add, clip, nxt, last), x):  # HardSwish(x) has x's shape
        return None
    return Match((add, clip, nxt, last), view.node_name(clip), view.nodes[last].output[0], {"x": x})


def _clips_to(view: GraphView, clip: int, lo: float, hi: float) -> bool:
    node = view.nodes[clip]
    if view.opset < 11:
        return bool(view.attr(clip, "min") == lo and view.attr(clip, "max") == hi)
    ins = [*node.input, "", ""]
    return view.is_scalar(ins[1], lo) and view.is_scalar(ins[2], hi)


def _single_user(view: GraphView, tensor: str) -> int | None:
    users = view.consumers.get(tensor, [])
    return users[0] if len(users) == 1 and tensor not in view.outputs else None


def _match_hardsigmoid_form(view: GraphView, hs: int) -> Match | None:
    alpha = view.attr(hs, "alpha", 0.2)
    beta = view.attr(hs, "beta", 0.5)
    if abs(alpha - 1 / 6) > 1e-6 or abs(beta - 0.5) > 1e-6:
        return None
    x = view.nodes[hs].input[0]
    mul = _single_user(view, view.nodes[hs].output[0])
    if mul is None or not view.is_op(mul, "Mul") or view.other_input(mul, view.nodes[hs].output[0]) != x:
        return None
    return Match((hs, mul), view.node_name(hs), view.nodes[mul].output[0], {"x": x})


def _fuse(view: GraphView, m: Match) -> Emitted:
    b = Builder(view, m.anchor, "fused", view.np_dtype(m.params["x"]))
    b.op("HardSwish", [m.params["x"]], m.output)
    return b.done()


FUSE = Rewrite(
    name="fuse-hardswish",
    matches="x · Clip(x + 3, 0, 6) / 6 (also · 1/6, either multiplication order) and "
            "x · HardSigmoid(x, alpha=1/6, beta=1/2); opset 14+",
    emits="HardSwish(x)",
    exact=True,
    doc="The reverse of decompose-hardswish, as compilers fuse the pattern. For targets that run "
        "HardSwish but not Clip. Intermediate tensors must have no other consumer, and no constant "
        "may raise x's rank (a [1, 1] constant broadcasting a [4] tensor to [1, 4]).",
    find=_find_fusable,
    build=_fuse,
)
