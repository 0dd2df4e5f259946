"""The budget of folding evaluation: folded values are computed node by node, each node's
output size (and a Loop's or Scan's iterations) counted from its input values *before* it
runs, and the wall clock checked between nodes. A node over budget is not evaluated (nor
the folded nodes reading it): its value stays unknown and a ``FoldSkip`` says why.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import NodeProto

from npu_gate.graph.facts import attr_graphs

ITERATIONS = 10_000  # a Loop's trip count, a Scan's length
ELEMENTS = 10_000_000  # one folded tensor
TOTAL_ELEMENTS = 50_000_000  # every value one folding evaluation holds
SECONDS = 10.0  # every folding evaluation of one analysis, together


@dataclass(frozen=True)
class FoldSkip:
    """A folded node whose value was not computed: ``index`` into the graph's nodes, the
    budget it exceeded (``limit``: iterations, elements, total elements, seconds, or deadline:
    the run's time limit came first), the count and the budget, and how many folded nodes
    reading it were not computed either."""

    index: int
    limit: str
    actual: float
    allowed: float
    why: str
    dependents: int = 0


@dataclass
class FoldBudget:
    """Limits for the values folding computes, shared by every evaluation of one analysis
    (``spent`` seconds add up); ``deadline``: a ``time.monotonic()`` the run must end by."""

    iterations: int = ITERATIONS
    elements: int = ELEMENTS
    total_elements: int = TOTAL_ELEMENTS
    seconds: float = SECONDS
    deadline: float | None = None
    spent: float = 0.0
    skips: list[FoldSkip] = field(default_factory=list)

    def end(self) -> float:
        end = time.monotonic() + max(self.seconds - self.spent, 0.0)
        return end if self.deadline is None else min(end, self.deadline)

    def record(self, skip: FoldSkip) -> None:
        if all(s.index != skip.index for s in self.skips):
            self.skips.append(skip)


def _size(value: Any) -> int:
    return int(getattr(value, "size", 1))


def _ints(value: Any) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1).tolist()]


def _body_loops(node: NodeProto) -> bool:
    stack = [g for a in node.attribute for g in attr_graphs(a)]
    while stack:
        graph = stack.pop()
        for inner in graph.node:
            if inner.op_type in ("Loop", "Scan"):
                return True
            stack.extend(g for a in inner.attribute for g in attr_graphs(a))
    return False


def estimate(node: NodeProto, args: list[Any], budget: FoldBudget) -> FoldSkip | None:
    """Why ``node`` must not run on ``args`` (its input values), or None: its largest output
    counted before it runs, a Loop's trip count, a Scan's length."""
    op = node.op_type
    if op in ("Loop", "Scan") and _body_loops(node):
        return FoldSkip(0, "iterations", math.inf, budget.iterations,
                        "a Loop or Scan inside its body: its iterations cannot be counted before it runs")
    big = max((_size(a) for a in args if a is not None), default=1)
    elements = big
    if op == "Loop":
        trip = args[0] if args and args[0] is not None else None
        cond = args[1] if len(args) > 1 and args[1] is not None else None
        if trip is None and (cond is None or bool(np.asarray(cond).reshape(-1)[0])):
            return FoldSkip(0, "iterations", math.inf, budget.iterations, "no trip count: it may never end")
        count = _ints(trip)[0] if trip is not None else 0
        if count > budget.iterations:
            return FoldSkip(0, "iterations", count, budget.iterations,
                            f"trip count {count} exceeds the budget of {budget.iterations} iterations")
        elements = max(count, 1) * big
    elif op == "Scan" and len(args) > 0:
        count = max((np.asarray(a).shape[0] if np.asarray(a).ndim else 1) for a in args if a is not None)
        if count > budget.iterations:
            return FoldSkip(0, "iterations", count, budget.iterations,
                            f"{count} scan iterations exceed the budget of {budget.iterations}")
        elements = count * big
    elif op == "ConstantOfShape" and args:
        elements = math.prod(_ints(args[0]))
    elif op == "Expand" and len(args) > 1:
        shape = list(np.asarray(args[0]).shape)
        target = _ints(args[1])
        rank = max(len(shape), len(target))
        a = [1] * (rank - len(shape)) + shape
        b = [1] * (rank - len(target)) + target
        elements = math.prod(max(x, y) for x, y in zip(a, b, strict=True))
    elif op == "Tile" and len(args) > 1:
        elements = _size(args[0]) * math.prod(max(r, 0) for r in _ints(args[1]))
    elif op == "Range" and len(args) == 3:
        start, limit, delta = (float(np.asarray(a).reshape(-1)[0]) for a in args)
        elements = max(math.ceil((limit - start) / delta), 0) if delta else 0
    elif op == "Pad" and len(args) > 1 and args[1] is not None:
        shape = list(np.asarray(args[0]).shape)
        pads = _ints(args[1])
        half = len(pads) // 2
        if half == len(shape):
            elements = math.prod(max(d + pads[i] + pads[i + half], 0) for i, d in enumerate(shape))
    elif op in ("Resize", "Upsample") and len(args) > 1:
        shape = list(np.asarray(args[0]).shape)
        sizes = args[3] if len(args) > 3 and args[3] is not None and _size(args[3]) else None
        scales = args[-1] if op == "Upsample" else (args[2] if len(args) > 2 else None)
        if sizes is not None:
            elements = math.prod(_ints(sizes))
        elif scales is not None and _size(scales) == len(shape):
            factors = np.asarray(scales, dtype=float).reshape(-1).tolist()
            elements = math.prod(math.floor(d * f) for d, f in zip(shape, factors, strict=True))
    elif op == "OneHot" and len(args) > 1:
        elements = _size(args[0]) * max(_ints(args[1])[0], 0)
    else:
        shapes = [np.asarray(a).shape for a in args if a is not None and hasattr(a, "shape")]
        try:
            elements = max(math.prod(np.broadcast_shapes(*shapes)), big) if shapes else big
        except ValueError:
            elements = big  # not broadcast together (Concat, MatMul...)
        if op in ("Concat", "MatMul", "Gemm", "Einsum"):
            elements = max(elements, sum(_size(a) for a in args if a is not None),
                           math.prod(_size(a) for a in args[:2] if a is not None))
    if elements > budget.elements:
        return FoldSkip(0, "elements", elements, budget.elements,
                        f"its output would hold {elements} elements, above the budget of {budget.elements}")
    return None
