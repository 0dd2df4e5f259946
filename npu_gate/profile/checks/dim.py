"""``dim``: ``min``, ``max``, ``multiple_of`` and ``in`` on one dim (``axis``) or on the product of
several (``axes``: [-2, -1] is H x W of a 4-D tensor). ``in`` holds numbers and references to
another tensor's dim (UNKNOWN, never equal to a dim, when the referenced dim is not known).
``batch``: the test does not apply to a shape vector (a 1-D integer tensor, e.g. Shape's output)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from npu_gate.profile.checks.base import (
    UNKNOWN,
    Context,
    Failed,
    Parser,
    Tensor,
    TensorCheck,
    is_number,
    is_ref,
    resolve_ref,
    show,
    show_shape,
    words_set,
)

if TYPE_CHECKING:
    from npu_gate.graph.facts import TensorInfo

_INTEGER_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})


@dataclass(frozen=True)
class Dim(TensorCheck):
    keys = ("dim",)
    spec: Mapping[str, Any]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Dim:
        return cls(raw["dim"])

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        spec = dict(self.spec)
        if "in" in spec:  # a dim compared with another tensor's dim: the reference resolved here
            spec["in"] = [resolve_ref(v, ctx.node, ctx.tensors) if is_ref(v) else v for v in spec["in"]]
        t = tensor.info
        if "axes" in spec:
            return _product_test(spec, t)
        axis = spec["axis"]
        if spec.get("batch") and t.shape is not None and len(t.shape) == 1 and t.dtype in _INTEGER_DTYPES:
            return []  # a shape vector (e.g. Shape's output) has no batch: its one dim is its length
        if t.shape is None or not -len(t.shape) <= axis < len(t.shape):
            return [Failed(UNKNOWN, spec, f"dim {axis} unknown (shape {show_shape(t)})")]
        d = t.shape[axis]
        if not isinstance(d, int):
            return [Failed(d if d is not None else UNKNOWN, spec, f"dim {axis} is not static ({d or '?'})")]
        return _value_tests(spec, d, f"dim {axis}")

    def phrases(self) -> list[str]:
        d = self.spec
        bits = []
        if "min" in d:
            bits.append(f"≥ {d['min']}")
        if "max" in d:
            bits.append(f"≤ {d['max']}")
        if "multiple_of" in d:
            bits.append(f"a multiple of {d['multiple_of']}")
        if "in" in d:
            bits.append(f"in {words_set(d['in'])}")
        batch = "batch " if d.get("batch") else ""
        which = f"dims {' × '.join(map(str, d['axes']))} multiplied" if "axes" in d else f"dim {d['axis']}"
        return [f"{batch}{which} " + " and ".join(bits)]

    def _dim_in(self) -> list[Any]:
        return self.spec.get("in", []) if isinstance(self.spec, dict) else []

    def problems(self, where: str, subjects: tuple[tuple[str, Any], ...]) -> list[str]:
        return [f"{where}.dim.in[{i}].ref: a dim is compared with a tensor's dim "
                "(input or output with an axis), not an attribute"
                for i, v in enumerate(self._dim_in())
                if isinstance(v, dict) and "ref" in v and "attribute" in v.get("ref", {})]

    def references(self, where: str) -> list[tuple[str, Any]]:
        return [(f"{where}.dim.in[{i}]", v) for i, v in enumerate(self._dim_in()) if isinstance(v, dict) and "ref" in v]


def _product_test(spec: dict[str, Any], t: TensorInfo) -> list[Failed]:
    axes = spec["axes"]
    label = "dims " + " x ".join(map(str, axes))
    if t.shape is None or not all(-len(t.shape) <= a < len(t.shape) for a in axes):
        return [Failed(UNKNOWN, spec, f"{label} unknown (shape {show_shape(t)})")]
    dims = [t.shape[a] for a in axes]
    known = [d for d in dims if isinstance(d, int)]
    if len(known) != len(dims):
        return [Failed(UNKNOWN, spec, f"{label} not static ({' x '.join('?' if d is None else str(d) for d in dims)})")]
    return _value_tests(spec, math.prod(known), f"{label} = {' x '.join(map(str, known))}")


def _value_tests(spec: dict[str, Any], d: int, label: str) -> list[Failed]:
    """The tests of a dim spec on a known value ``d`` (``label``: the dim, or the dims multiplied)."""
    name = f"{label} = {d}"
    out = []
    if "min" in spec and d < spec["min"]:
        out.append(Failed(d, {"min": spec["min"]}, f"{name} is below the minimum {spec['min']}"))
    if "max" in spec and d > spec["max"]:
        out.append(Failed(d, {"max": spec["max"]}, f"{name} is above the maximum {spec['max']}"))
    if "multiple_of" in spec and d % spec["multiple_of"]:
        m = spec["multiple_of"]
        out.append(Failed(d, {"multiple_of": m}, f"{name} is not a multiple of {m}"))
    if "in" in spec and d not in [v for v in spec["in"] if is_number(v)]:
        out.append(Failed(d, {"in": spec["in"]}, f"{name} not in {show(tuple(spec['in']))}"))
    return out
