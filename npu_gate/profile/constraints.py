"""Evaluate a profile's per-op constraints on one node.

Constraints are data (see schemas/profile.schema.json), checked by this code; no
expression from a profile is ever evaluated as Python. Every failed test is reported,
not only the first, each with the value seen and the value allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # graph imports onnx: keep profile validation (and cache hits) free of it
    from npu_gate.graph.facts import NodeFacts, TensorInfo

UNKNOWN = "unknown"
VALUE_TESTS = ("in", "not_in", "min", "max", "all_equal", "absent", "matches")
TENSOR_TESTS = (
    "dtype", "rank", "dim", "constant", "static", "max_elements", "max_bytes", "layout", "value",
    "same_non_unit_dims_as",
)
# A constant tensor's value: (rank, elements), or None when it is not known (see shape_values.ConstantValues).
ValueOf = Callable[[str], "tuple[int, list[Any]] | None"]
NOT_KNOWN = "value not known (only scalars and 1-D constants of up to 64 elements are read)"
TESTS = (*VALUE_TESTS, *TENSOR_TESTS, "any_of", "unchecked")


@dataclass(frozen=True)
class Failure:
    constraint: str
    message: str
    actual: Any
    allowed: Any
    doc: str | None = None
    fix: str | None = None  # the constraint's ``fix``: what to change in the PyTorch model


@dataclass(frozen=True)
class _Context:
    node: NodeFacts
    tensors: Mapping[str, TensorInfo]
    constants: set[str] | frozenset[str]
    layouts: Mapping[str, str]  # tensor name -> dimension letters, where known
    values: ValueOf | None = None  # constant tensors' values (None: no value is known)


def evaluate(
    constraints: list[dict[str, Any]],
    node: NodeFacts,
    tensors: Mapping[str, TensorInfo],
    constants: set[str] | frozenset[str],
    layouts: Mapping[str, str] | None = None,
    values: ValueOf | None = None,
) -> list[Failure]:
    ctx = _Context(node, tensors, constants, layouts or {}, values)
    failures: list[Failure] = []
    for constraint in constraints:
        if not constraint.get("unchecked") and applies(constraint.get("when"), ctx):
            failures.extend(_evaluate_one(constraint, ctx))
    return failures


def applies(when: dict[str, Any] | None, ctx: _Context) -> bool:
    """Whether a constraint's ``when`` condition holds (no condition: always).

    A tensor dtype that is not known (absent tensor, no type inferred) applies the
    constraint: a condition may make a node meet stricter limits, never skip them.
    An attribute condition reads the attribute with its ONNX default, as tests do."""
    if when is None:
        return True
    node = ctx.node
    if "attribute" in when:
        value = node.attributes.get(when["attribute"])
        if "in" in when and value not in when["in"]:
            return False
        return not ("not_in" in when and value in when["not_in"])
    index, names = (when["input"], node.inputs) if "input" in when else (when["output"], node.outputs)
    name = names[index] if index < len(names) else ""
    tensor = ctx.tensors.get(name) if name else None
    dtype = tensor.dtype if tensor is not None else None
    return dtype is None or dtype in when["dtype"]


def unchecked(
    constraints: list[dict[str, Any]], node: NodeFacts, tensors: Mapping[str, TensorInfo]
) -> list[Failure]:
    """Conditions the profile's source states but npu_gate cannot check (vague, or about
    tensor values): never a CPU fallback, reported so a reviewer knows what rests on them.
    One with a ``when`` is reported only where its condition holds."""
    ctx = _Context(node, tensors, frozenset(), {})
    return [
        Failure(c["id"], c["message"], UNKNOWN, "not checked", c.get("doc"))
        for c in constraints
        if c.get("unchecked") and applies(c.get("when"), ctx)
    ]


def _evaluate_one(c: dict[str, Any], ctx: _Context) -> list[Failure]:
    if "any_of" in c:
        return _any_of(c, ctx)
    return [
        _failure(c, subject, actual, allowed, text)
        for subject, actual, allowed, text in _tests(c, ctx)
    ]


def _tests(c: dict[str, Any], ctx: _Context) -> list[tuple[str, Any, Any, str]]:
    """(subject, actual, allowed, text) for each failed test of one subject."""
    node = ctx.node
    if "attribute" in c:
        name = c["attribute"]
        if c.get("absent"):
            if name in node.attributes and name not in node.defaulted:
                return [
                    (
                        f"attribute {name}",
                        node.attributes[name],
                        "absent",
                        f"= {_show(node.attributes[name])} is set; it must be left at its default",
                    )
                ]
            return []
        value = node.attributes.get(name)
        return [
            (f"attribute {name}", actual, allowed, text)
            for actual, allowed, text in _value_tests(_resolved(c, ctx), value)
        ]
    if "input" in c:
        index, names, kind = c["input"], node.inputs, "input"
    else:
        index, names, kind = c["output"], node.outputs, "output"
    subject = f"{kind} {index}"
    name = names[index] if index < len(names) else ""
    values = [(subject, *failed) for failed in _tensor_value_tests(c["value"], name, ctx)] if "value" in c else []
    if not name:
        return values  # absent optional tensor: only a value test (without a default) fails on it
    from npu_gate.graph.facts import TensorInfo

    tensor = ctx.tensors.get(name) or TensorInfo(name, None, None)
    if "in" in c.get("dim", {}):  # a dim compared with another tensor's dim: the reference resolved here
        dim_in = [resolve_ref(v, node, ctx.tensors) if is_ref(v) else v for v in c["dim"]["in"]]
        c = {**c, "dim": {**c["dim"], "in": dim_in}}
    out = values + [
        (subject, actual, allowed, text)
        for actual, allowed, text in _tensor_tests(c, tensor, names[index] in ctx.constants)
    ]
    if "same_non_unit_dims_as" in c:
        out.extend((subject, *failed) for failed in _non_unit_dims_test(c["same_non_unit_dims_as"], tensor, ctx))
    if "layout" in c:
        # Unknown layout means the op's own ONNX layout: only a known, different one fails.
        layout = ctx.layouts.get(names[index])
        if layout is not None and layout not in c["layout"]:
            out.append(
                (subject, layout, c["layout"], f"layout {layout} not in {_show(c['layout'])}")
            )
    return out


def _non_unit_dims_test(ref: dict[str, int], t: TensorInfo, ctx: _Context) -> list[tuple[Any, Any, str]]:
    """The tensor's dims without its 1s equal the referenced tensor's without its 1s: a Reshape that
    only adds, drops or moves dims of size 1 ([1,76,34,1] -> [1,1,76,34]). Unknown or symbolic dims fail."""
    kind = "input" if "input" in ref else "output"
    names = ctx.node.inputs if kind == "input" else ctx.node.outputs
    index = ref[kind]
    other = ctx.tensors.get(names[index]) if index < len(names) and names[index] else None
    allowed = {"same_non_unit_dims_as": ref}
    a, b = t.shape, other.shape if other is not None else None
    if a is None or b is None or not all(isinstance(d, int) for d in [*a, *b]):
        shown = _show_shape(other) if other is not None else "?"
        return [(UNKNOWN, allowed, f"dims not static (shape {_show_shape(t)}, {kind} {index} {shown})")]
    mine, theirs = [d for d in a if d != 1], [d for d in b if d != 1]
    if mine == theirs:
        return []
    return [(list(t.shape or []), allowed,
             f"dims {_show_shape(t)} without their 1s are {mine}, {kind} {index}'s are {theirs}: "
             f"it does more than move dims of size 1")]


def _tensor_value_tests(spec: dict[str, Any], name: str, ctx: _Context) -> list[tuple[Any, Any, str]]:
    """(actual, allowed, text) for each failed test on a constant tensor's value.

    A value that cannot be known fails, as other undecidable conditions do, and says why:
    the input is absent (unless the test gives the op's ``default``), not a constant, or
    not read (more than 64 elements, or not evaluable); with ``ratio_to_input``, the dims
    divided by are not known. No value is ever assumed."""
    allowed = _allowed(spec)
    if not name and "default" not in spec:
        return [("absent", allowed, "is absent: its value is not known")]
    if not name:
        got: tuple[int, list[Any]] | None = (1, spec["default"]) if isinstance(spec["default"], list) \
            else (0, [spec["default"]])
    elif name not in ctx.constants:
        return [("not a constant", allowed, "is not a constant: its value is not known")]
    else:
        got = ctx.values(name) if ctx.values is not None else None
    if got is None:
        return [("value not known", allowed, NOT_KNOWN)]
    rank, elements = got
    shown = f"values {_show(elements)}" if name else f"absent: the default {_show(spec['default'])}"
    if "ratio_to_input" in spec:  # Resize sizes divided by the input's dims: the scales it applies
        k = spec["ratio_to_input"]
        dims = _static_dims(k, ctx)
        if isinstance(dims, list) and len(dims) != len(elements):
            dims = f"{len(elements)} element(s) against the {len(dims)} dims of input {k} {_show(dims)}"
        if isinstance(dims, str):
            return [(dims, allowed, f"{shown}: {dims}")]
        # to 7 significant digits, like float32 values: 8 / 24 is 0.3333333
        elements = [float(f"{e / d:.7g}") for e, d in zip(elements, dims, strict=True)]
        shown += f" divided by input {k}'s dims {_show(dims)}"
    if "axes_from_end_of_input" in spec:  # a Slice's axes as counted from the end: -1 is the last
        k = spec["axes_from_end_of_input"]
        tensor = ctx.tensors.get(ctx.node.inputs[k]) if k < len(ctx.node.inputs) and ctx.node.inputs[k] else None
        if tensor is None or tensor.shape is None:
            why = f"the rank of input {k} is not known"
            return [(why, allowed, f"{shown}: {why}")]
        r = len(tensor.shape)
        bad = [e for e in elements if not isinstance(e, int) or not -r <= e < r]
        if bad:
            why = f"{_show(_one_or_list(bad))} is not an axis of input {k} (rank {r})"
            return [(elements, allowed, f"{shown}: {why}")]
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
            return [(elements, {"elements": spec["elements"]},
                     f"{shown} have no element {_show(_one_or_list(missing))}")]
        value = [elements[i] for i in spec["elements"]]
        shown += f" (elements {_show(spec['elements'])})"
    return [(actual, limit, f"{shown}: {text}") for actual, limit, text in _value_tests(spec, value)]


def _static_dims(index: int, ctx: _Context) -> list[int] | str:
    """Input ``index``'s dims when all are known and positive, else why not."""
    names = ctx.node.inputs
    tensor = ctx.tensors.get(names[index]) if index < len(names) and names[index] else None
    shape = tensor.shape if tensor is not None else None
    if shape is None or not all(isinstance(d, int) and d > 0 for d in shape):
        shown = "?" if shape is None else _show(["?" if d is None else d for d in shape])
        return f"the dims of input {index} are not known ({shown})"
    return [d for d in shape if isinstance(d, int)]  # all of them (checked above)


def _any_of(c: dict[str, Any], ctx: _Context) -> list[Failure]:
    """Passes when one alternative passes; otherwise one failure worded by the alternative that
    came closest (``closest``), with every alternative's actual and allowed values."""
    texts, actuals, alloweds, distances = [], [], [], []
    for alternative in c["any_of"]:
        failed = _tests(alternative, ctx)
        if not failed:
            return []
        texts.append("; ".join(f"{subject} {text}" for subject, _, _, text in failed))
        actuals.append(failed[0][1] if len(failed) == 1 else [f[1] for f in failed])
        alloweds.append(failed[0][2] if len(failed) == 1 else [f[2] for f in failed])
        distances.append(closeness(alternative, [actual for _, actual, _, _ in failed]))
    best = min(range(len(texts)), key=lambda i: (distances[i], i))
    others = len(texts) - 1
    text = texts[best] + (f" (the closest of {len(texts)} ways to meet it; the finding's `allowed` and "
                          "`npu-gate explain` list them all)" if others else "")
    return [_failure(c, "", actuals, {"any_of": alloweds}, text)]


def closeness(alternative: dict[str, Any], actuals: list[Any]) -> tuple[int, int]:
    """How far a failed alternative is from holding (``actuals``: the values its failed tests
    saw), smaller is closer: fewer failed tests first; then an attribute that must avoid a few
    values (``not_in``: any other value meets it, the smallest change), then another attribute
    test, then tests on tensors and values, last an optional input the node does not have."""
    if "attribute" in alternative:
        kind = 0 if "not_in" in alternative else 1
    elif all(actual == "absent" for actual in actuals):
        kind = 3
    else:
        kind = 2
    return len(actuals), kind


def _failure(c: dict[str, Any], subject: str, actual: Any, allowed: Any, text: str) -> Failure:
    template = c.get("message")
    message = f"{subject} {text}".strip()
    if template and ("{actual}" in template or "{allowed}" in template):
        # The profile words the failure itself. str.replace, not str.format: a profile must
        # not reach into Python objects.
        message = template.replace("{actual}", _show(actual)).replace("{allowed}", _show(allowed))
    elif template:  # an explanation (a calibrated profile's evidence): after what failed
        message = f"{message}; {template}"
    return Failure(
        constraint=c["id"], message=message, actual=actual, allowed=allowed, doc=c.get("doc"), fix=c.get("fix")
    )


def _resolved(c: dict[str, Any], ctx: _Context) -> dict[str, Any]:
    """``c`` with every ``{"ref": ...}`` in in/not_in/min/max replaced by its value."""
    out = dict(c)
    for key in ("in", "not_in"):
        if key in c:
            out[key] = [resolve_ref(v, ctx.node, ctx.tensors) if is_ref(v) else v for v in c[key]]
    for key in ("min", "max"):
        if key in c and is_ref(c[key]):
            out[key] = resolve_ref(c[key], ctx.node, ctx.tensors)
    return out


def is_ref(value: Any) -> bool:
    return isinstance(value, dict) and "ref" in value


def resolve_ref(value: dict[str, Any], node: NodeFacts, tensors: Mapping[str, TensorInfo]) -> Any:
    """A reference's value: a tensor dim or another attribute, plus ``add``; UNKNOWN if unknown.

    ``{"ref": {"input": 0, "axis": 1}}`` is input 0's dim 1; ``{"ref": {"attribute":
    "kernel_shape"}, "add": -1}`` is kernel_shape minus one, per element for lists.
    """
    ref, add = value["ref"], value.get("add", 0)
    resolved: Any = UNKNOWN
    if "attribute" in ref:
        resolved = node.attributes.get(ref["attribute"], UNKNOWN)
    else:
        kind = "input" if "input" in ref else "output"
        names = node.inputs if kind == "input" else node.outputs
        index = ref[kind]
        tensor = tensors.get(names[index]) if index < len(names) and names[index] else None
        shape = tensor.shape if tensor is not None else None
        axis = ref["axis"]
        if shape is not None and -len(shape) <= axis < len(shape) and isinstance(shape[axis], int):
            resolved = shape[axis]
    if not add or resolved == UNKNOWN:
        return resolved
    if isinstance(resolved, list):
        return [v + add if _is_number(v) else v for v in resolved]
    return resolved + add if _is_number(resolved) else resolved


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, set | frozenset | tuple):
        return "{" + ", ".join(_show(v) for v in value) + "}"
    if isinstance(value, dict):  # an allowed range: {"max": 7} shows as "max 7"
        return ", ".join(f"{k} {_show(v)}" for k, v in value.items())
    return str(value)


def _value_tests(c: dict[str, Any], value: Any) -> list[tuple[Any, Any, str]]:
    """(actual, allowed, text) for each failed value test of an attribute constraint."""
    out: list[tuple[Any, Any, str]] = []
    if value is None:
        # Absent with no default (or not defined at this opset): it cannot be in an allowed
        # set or a range, and it is none of the forbidden values.
        if any(k in c for k in ("in", "min", "max", "matches")):
            return [(UNKNOWN, _allowed(c), "is absent and has no default")]
        return []
    if c.get("all_equal") and isinstance(value, list) and len(set(map(_hashable, value))) > 1:
        out.append((value, "all elements equal", f"{_show(value)} has unequal elements"))
    if "matches" in c and not matches(c["matches"], value):
        out.append((value, {"matches": c["matches"]}, f"{_show(value)} matches none of the forms allowed"))
    if c.get("each") and isinstance(value, list):
        for key, bad, limit in _each_failures(c, value):
            out.append(
                (bad, _allowed_for(c, key, limit), f"{_show(bad)} {_explain(key, c, limit)}")
            )
        return out
    for key in ("in", "not_in", "min", "max"):
        if key in c and not _passes(key, c[key], value):
            out.append((value, _allowed_for(c, key), f"{_show(value)} {_explain(key, c)}"))
    return out


def matches(patterns: list[str], value: Any) -> bool:
    """Whether ``value``, a string with every whitespace character removed, fully matches one of
    ``patterns`` (regular expressions; the profile loader checks that they compile)."""
    if not isinstance(value, str):
        return False
    text = "".join(value.split())
    return any(re.fullmatch(p, text) is not None for p in patterns)


def _each_failures(c: dict[str, Any], values: list[Any]) -> list[tuple[str, Any, Any]]:
    """(test, bad elements, limit) per failed test. A list-valued min/max (a reference to
    another list attribute) applies element-wise, repeating: pads [b1, b2, e1, e2] against
    kernel [k1, k2] compares b1 and e1 with k1."""
    out: list[tuple[str, Any, Any]] = []
    for key in ("in", "not_in", "min", "max"):
        if key not in c:
            continue
        limit = c[key]
        if key in ("min", "max") and isinstance(limit, list) and limit:
            pairs = [(v, limit[i % len(limit)]) for i, v in enumerate(values)]
            failed = [(v, lim) for v, lim in pairs if not _passes(key, lim, v)]
            if failed:
                bad = [v for v, _ in failed]
                limits = [lim for _, lim in failed]
                out.append((key, _one_or_list(bad), _one_or_list(limits)))
            continue
        bad = [v for v in values if not _passes(key, limit, v)]
        if bad:
            out.append((key, _one_or_list(bad), limit))
    return out


def _one_or_list(values: list[Any]) -> Any:
    return values if len(values) > 1 else values[0]


def _passes(key: str, limit: Any, value: Any) -> bool:
    if key == "in":
        return bool(value in limit)
    if key == "not_in":
        return bool(value not in limit)
    if not _is_number(value) or not _is_number(limit):
        return False  # an unknown reference never passes a range test
    return bool(value >= limit) if key == "min" else bool(value <= limit)


def _explain(key: str, c: dict[str, Any], limit: Any = None) -> str:
    limit = c[key] if limit is None else limit
    if key == "in":
        # A tuple shows as {a, b}; insertion order keeps messages reproducible.
        shown = tuple(dict.fromkeys(map(_hashable, limit))) if _all_scalars(limit) else limit
        return f"not in {_show(shown)}"
    if key == "not_in":
        return f"is one of the forbidden values {_show(limit)}"
    return f"is {'below the minimum' if key == 'min' else 'above the maximum'} {_show(limit)}"


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _all_scalars(values: list[Any]) -> bool:
    return all(not isinstance(v, list | dict) for v in values)


def _allowed_for(c: dict[str, Any], key: str, limit: Any = None) -> Any:
    limit = c[key] if limit is None else limit
    if key == "not_in":
        return {"not_in": limit}
    if key in ("min", "max"):
        return {key: limit}
    return limit


def _allowed(c: dict[str, Any]) -> Any:
    return {k: c[k] for k in ("in", "not_in", "min", "max", "matches") if k in c}


def _tensor_tests(
    c: dict[str, Any], t: TensorInfo, is_constant: bool
) -> list[tuple[Any, Any, str]]:
    out: list[tuple[Any, Any, str]] = []
    if "dtype" in c and t.dtype not in c["dtype"]:
        out.append(
            (
                t.dtype or UNKNOWN,
                c["dtype"],
                f"dtype {t.dtype or UNKNOWN} not in {_show(c['dtype'])}",
            )
        )
    if "rank" in c:
        rank = None if t.shape is None else len(t.shape)
        lo, hi = c["rank"].get("min"), c["rank"].get("max")
        if rank is None:
            out.append((UNKNOWN, c["rank"], "rank unknown (shape not inferred)"))
        elif (lo is not None and rank < lo) or (hi is not None and rank > hi):
            out.append((rank, c["rank"], f"rank {rank} outside {_range(lo, hi)}"))
    if "dim" in c:
        out.extend(_dim_test(c["dim"], t))
    if c.get("constant") and not is_constant:
        out.append(("runtime tensor", "constant", "must be a constant (initializer or folded)"))
    if c.get("static") and not t.static:
        out.append(
            (
                t.shape if t.shape is not None else UNKNOWN,
                "static",
                f"shape {_show_shape(t)} is not static",
            )
        )
    if "max_elements" in c:
        n = t.elements
        if n is None:
            out.append((UNKNOWN, c["max_elements"], "element count unknown (shape not static)"))
        elif n > c["max_elements"]:
            out.append(
                (n, c["max_elements"], f"has {n} elements, above the maximum {c['max_elements']}")
            )
    if "max_bytes" in c:
        b = t.nbytes
        if b is None:
            out.append((UNKNOWN, c["max_bytes"], "byte size unknown (shape or dtype not static)"))
        elif b > c["max_bytes"]:
            out.append((b, c["max_bytes"], f"has {b} bytes, above the maximum {c['max_bytes']}"))
    return out


_INTEGER_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})


def _dim_test(spec: dict[str, Any], t: TensorInfo) -> list[tuple[Any, Any, str]]:
    """``min``, ``max``, ``multiple_of`` and ``in`` on one dim (``axis``) or on the product of several
    (``axes``: [-2, -1] is H x W of a 4-D tensor); ``in`` holds numbers and resolved references
    (UNKNOWN, never equal to a dim, when the referenced dim is not known)."""
    if "axes" in spec:
        return _dims_product_test(spec, t)
    axis = spec["axis"]
    if spec.get("batch") and t.shape is not None and len(t.shape) == 1 and t.dtype in _INTEGER_DTYPES:
        return []  # a shape vector (e.g. Shape's output) has no batch: its one dim is its length
    if t.shape is None or not -len(t.shape) <= axis < len(t.shape):
        return [(UNKNOWN, spec, f"dim {axis} unknown (shape {_show_shape(t)})")]
    d = t.shape[axis]
    if not isinstance(d, int):
        return [(d if d is not None else UNKNOWN, spec, f"dim {axis} is not static ({d or '?'})")]
    return _dim_value_tests(spec, d, f"dim {axis}")


def _dims_product_test(spec: dict[str, Any], t: TensorInfo) -> list[tuple[Any, Any, str]]:
    axes = spec["axes"]
    label = "dims " + " x ".join(map(str, axes))
    if t.shape is None or not all(-len(t.shape) <= a < len(t.shape) for a in axes):
        return [(UNKNOWN, spec, f"{label} unknown (shape {_show_shape(t)})")]
    dims = [t.shape[a] for a in axes]
    known = [d for d in dims if isinstance(d, int)]
    if len(known) != len(dims):
        return [(UNKNOWN, spec, f"{label} not static ({' x '.join('?' if d is None else str(d) for d in dims)})")]
    return _dim_value_tests(spec, math.prod(known), f"{label} = {' x '.join(map(str, known))}")


def _dim_value_tests(spec: dict[str, Any], d: int, label: str) -> list[tuple[Any, Any, str]]:
    """The tests of a dim spec on a known value ``d`` (``label``: the dim, or the dims multiplied)."""
    name = f"{label} = {d}"
    out = []
    if "min" in spec and d < spec["min"]:
        out.append((d, {"min": spec["min"]}, f"{name} is below the minimum {spec['min']}"))
    if "max" in spec and d > spec["max"]:
        out.append((d, {"max": spec["max"]}, f"{name} is above the maximum {spec['max']}"))
    if "multiple_of" in spec and d % spec["multiple_of"]:
        m = spec["multiple_of"]
        out.append((d, {"multiple_of": m}, f"{name} is not a multiple of {m}"))
    if "in" in spec and d not in [v for v in spec["in"] if _is_number(v)]:
        out.append((d, {"in": spec["in"]}, f"{name} not in {_show(tuple(spec['in']))}"))
    return out


def _range(lo: Any, hi: Any) -> str:
    return f"{'' if lo is None else lo}..{'' if hi is None else hi}"


def _show_shape(t: TensorInfo) -> str:
    if t.shape is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in t.shape) + "]"
