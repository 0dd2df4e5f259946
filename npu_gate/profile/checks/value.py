"""``value``: tests on a constant tensor's value (Resize scales, Slice steps, Pad pads): the
value checks (``in``, ``min``, ``all_equal``...) on its elements, or on what they mean
(``elements`` picked, ``padded_axes``, ``ratio_to_input``, ``axes_from_end_of_input``).

A value that cannot be known fails, as other undecidable conditions do, and says why: the
input is absent (unless the test gives the op's ``default``), not a constant, or not read
(more than 64 elements, or not evaluable); with ``ratio_to_input``, the dims divided by are
not known. No value is ever assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import (
    CONTENT,
    Context,
    Failed,
    Parser,
    Tensor,
    TensorCheck,
    ValueCheck,
    allowed_of,
    one_or_list,
    run_values,
    show,
    tensor_index,
    words,
)

NOT_KNOWN = "value not known (only scalars and 1-D constants of up to 64 elements are read)"
SPEC_KEYS = ("elements", "padded_axes", "ratio_to_input", "axes_from_end_of_input", "default")


@dataclass(frozen=True)
class Value(TensorCheck):
    keys = ("value",)
    group = CONTENT
    first = True
    on_absent = True
    spec_keys = SPEC_KEYS  # what a value test holds besides its value checks
    spec: Mapping[str, Any]
    tests: tuple[ValueCheck, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Value:
        spec = raw["value"]
        return cls(spec, parser.value_checks(spec) if isinstance(spec, Mapping) else ())

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        spec, name = self.spec, tensor.name
        allowed = allowed_of(self.tests)
        if not name and "default" not in spec:
            return [Failed("absent", allowed, "is absent: its value is not known")]
        if not name:
            got: tuple[int, list[Any]] | None = (1, spec["default"]) if isinstance(spec["default"], list) \
                else (0, [spec["default"]])
        elif name not in ctx.constants:
            return [Failed("not a constant", allowed, "is not a constant: its value is not known")]
        else:
            got = ctx.values(name) if ctx.values is not None else None
        if got is None:
            return [Failed("value not known", allowed, NOT_KNOWN)]
        rank, elements = got
        shown = f"values {show(elements)}" if name else f"absent: the default {show(spec['default'])}"
        if "ratio_to_input" in spec:  # Resize sizes divided by the input's dims: the scales it applies
            k = spec["ratio_to_input"]
            dims = _static_dims(k, ctx)
            if isinstance(dims, list) and len(dims) != len(elements):
                dims = f"{len(elements)} element(s) against the {len(dims)} dims of input {k} {show(dims)}"
            if isinstance(dims, str):
                return [Failed(dims, allowed, f"{shown}: {dims}")]
            # to 7 significant digits, like float32 values: 8 / 24 is 0.3333333
            elements = [float(f"{e / d:.7g}") for e, d in zip(elements, dims, strict=True)]
            shown += f" divided by input {k}'s dims {show(dims)}"
        if "axes_from_end_of_input" in spec:  # a Slice's axes as counted from the end: -1 is the last
            k = spec["axes_from_end_of_input"]
            inputs = ctx.node.inputs
            other = ctx.tensors.get(inputs[k]) if k < len(inputs) and inputs[k] else None
            if other is None or other.shape is None:
                why = f"the rank of input {k} is not known"
                return [Failed(why, allowed, f"{shown}: {why}")]
            r = len(other.shape)
            bad = [e for e in elements if not isinstance(e, int) or not -r <= e < r]
            if bad:
                why = f"{show(one_or_list(bad))} is not an axis of input {k} (rank {r})"
                return [Failed(elements, allowed, f"{shown}: {why}")]
            elements = [e - r if e >= 0 else e for e in elements]
            shown += f" (axes from the end of input {k}'s rank {r})"
        value: Any = elements if rank else elements[0]
        if spec.get("padded_axes"):
            half = len(elements) // 2
            value = [i for i in range(half) if elements[i] or elements[i + half]]
            shown += " (padded axes)"
        elif "elements" in spec:
            size = len(elements)
            missing = [i for i in spec["elements"] if not -size <= i < size]
            if missing:
                return [Failed(elements, {"elements": spec["elements"]},
                               f"{shown} have no element {show(one_or_list(missing))}")]
            value = [elements[i] for i in spec["elements"]]
            shown += f" (elements {show(spec['elements'])})"
        return [Failed(f.actual, f.allowed, f"{shown}: {f.text}") for f in run_values(self.tests, value)]

    def phrases(self) -> list[str]:
        """``constant value, elements [2, 3]: each element in {0.5, 2, 3}``."""
        v = self.spec
        what = "constant value"
        if "ratio_to_input" in v:
            what += f" divided by input {v['ratio_to_input']}'s dims"
        if "axes_from_end_of_input" in v:
            what += f", as axes counted from the end of input {v['axes_from_end_of_input']} (-1: the last)"
        if v.get("padded_axes"):
            what += ", the axes it pads (begin or end ≠ 0)"
        elif "elements" in v:
            what += f", elements {words(v['elements'])}"
        text = f"{what}: {' and '.join(p for test in self.tests for p in test.phrases())}"
        if "default" in v:
            text += f" (when absent: {words(v['default'])}, the op's default)"
        return [text]

    def problems(self, where: str, subjects: tuple[tuple[str, Any], ...]) -> list[str]:
        for kind, name in subjects:
            if kind == "attribute":
                return [f"{where}.value: a value test is on an input or output tensor; "
                        f"test attribute {name} with in/not_in/min/max"]
        return []

    @classmethod
    def onnx_inputs(cls, raw: Mapping[str, Any]) -> list[tuple[str, int]]:
        value = raw.get("value")
        out = []
        for key in ("ratio_to_input", "axes_from_end_of_input"):
            index = tensor_index(value.get(key)) if isinstance(value, dict) else None
            if index is not None:
                out.append((f".value.{key}", index))
        return out


def _static_dims(index: int, ctx: Context) -> list[int] | str:
    """Input ``index``'s dims when all are known and positive, else why not."""
    names = ctx.node.inputs
    tensor = ctx.tensors.get(names[index]) if index < len(names) and names[index] else None
    shape = tensor.shape if tensor is not None else None
    if shape is None or not all(isinstance(d, int) and d > 0 for d in shape):
        shown = "?" if shape is None else show(["?" if d is None else d for d in shape])
        return f"the dims of input {index} are not known ({shown})"
    return [d for d in shape if isinstance(d, int)]  # all of them (checked above)
