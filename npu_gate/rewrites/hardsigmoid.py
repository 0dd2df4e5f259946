"""HardSigmoid → Mul/Add/Clip with the node's own alpha and beta."""

from __future__ import annotations

from npu_gate.rewrites.base import Builder, Emitted, GraphView, Match, Rewrite

# ONNX defaults: alpha 0.2, beta 0.5 (PyTorch's hardsigmoid is alpha 1/6). Reading the
# attribute with the wrong default is the classic silent error this catalog guards against.
DEFAULT_ALPHA = 0.2
DEFAULT_BETA = 0.5


def _find(view: GraphView) -> list[Match]:
    return [
        Match((i,), view.node_name(i), n.output[0], {
            "x": n.input[0],
            "alpha": float(view.attr(i, "alpha", DEFAULT_ALPHA)),
            "beta": float(view.attr(i, "beta", DEFAULT_BETA)),
        })
        for i, n in enumerate(view.nodes) if view.is_op(i, "HardSigmoid")
    ]


def _build(view: GraphView, m: Match) -> Emitted:
    x = m.params["x"]
    b = Builder(view, m.anchor, "decomposed", view.np_dtype(x))
    scaled = b.op("Mul", [x, b.const("alpha", m.params["alpha"])])
    shifted = b.op("Add", [scaled, b.const("beta", m.params["beta"])])
    b.clip(shifted, 0.0, 1.0, m.output)
    return b.done()


DECOMPOSE = Rewrite(
    name="decompose-hardsigmoid",
    matches="HardSigmoid (any alpha, beta; ONNX defaults alpha=0.2, beta=0.5)",
    emits="Mul(x, alpha) → Add(·, beta) → Clip(0, 1)",
    exact=True,
    doc="HardSigmoid(x) = max(0, min(1, alpha·x + beta)), with the node's alpha and beta (the "
        "ONNX default alpha is 0.2, not PyTorch's 1/6).",
    find=_find,
    build=_build,
)
