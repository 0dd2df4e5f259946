"""Evaluate a profile's per-op constraints on one node.

Constraints are data (see schemas/profile.schema.json), checked by this code; no
expression from a profile is ever evaluated as Python. Every failed test is reported,
not only the first, each with the value seen and the value allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.graph import NodeFacts, TensorInfo

UNKNOWN = "unknown"


@dataclass(frozen=True)
class Failure:
    constraint: str
    message: str
    actual: Any
    allowed: Any


def evaluate(
    constraints: list[dict[str, Any]],
    node: NodeFacts,
    tensors: Mapping[str, TensorInfo],
    constants: set[str],
) -> list[Failure]:
    failures: list[Failure] = []
    for constraint in constraints:
        failures.extend(_evaluate_one(constraint, node, tensors, constants))
    return failures


def _evaluate_one(
    c: dict[str, Any], node: NodeFacts, tensors: Mapping[str, TensorInfo], constants: set[str]
) -> list[Failure]:
    if "attribute" in c:
        name = c["attribute"]
        value = node.attributes.get(name)
        return [
            _failure(c, f"attribute {name}", actual, allowed, text)
            for actual, allowed, text in _value_tests(c, value)
        ]
    if "input" in c:
        index, names, kind = c["input"], node.inputs, "input"
    else:
        index, names, kind = c["output"], node.outputs, "output"
    if index >= len(names) or not names[index]:
        return []  # absent optional tensor: nothing to violate
    tensor = tensors.get(names[index]) or TensorInfo(names[index], None, None)
    subject = f"{kind} {index}"
    return [
        _failure(c, subject, actual, allowed, text)
        for actual, allowed, text in _tensor_tests(c, tensor, names[index] in constants)
    ]


def _failure(c: dict[str, Any], subject: str, actual: Any, allowed: Any, text: str) -> Failure:
    template = c.get("message")
    if template:
        # str.replace, not str.format: a profile must not reach into Python objects.
        message = template.replace("{actual}", _show(actual)).replace("{allowed}", _show(allowed))
    else:
        message = f"{subject} {text}"
    return Failure(constraint=c["id"], message=message, actual=actual, allowed=allowed)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, set | frozenset | tuple):
        return "{" + ", ".join(_show(v) for v in value) + "}"
    return str(value)


def _value_tests(c: dict[str, Any], value: Any) -> list[tuple[Any, Any, str]]:
    """(actual, allowed, text) for each failed value test of an attribute constraint."""
    out: list[tuple[Any, Any, str]] = []
    if value is None:
        return [(UNKNOWN, _allowed(c), "is absent and has no default")]
    if c.get("each") and isinstance(value, list):
        for key, bad in _each_failures(c, value):
            out.append((bad, _allowed_for(c, key), f"{_show(bad)} {_explain(key, c)}"))
        return out
    for key in ("in", "not_in", "min", "max"):
        if key in c and not _passes(key, c[key], value):
            out.append((value, _allowed_for(c, key), f"{_show(value)} {_explain(key, c)}"))
    return out


def _each_failures(c: dict[str, Any], values: list[Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key in ("in", "not_in", "min", "max"):
        if key in c:
            bad = [v for v in values if not _passes(key, c[key], v)]
            if bad:
                out.append((key, bad if len(bad) > 1 else bad[0]))
    return out


def _passes(key: str, limit: Any, value: Any) -> bool:
    if key == "in":
        return bool(value in limit)
    if key == "not_in":
        return bool(value not in limit)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return bool(value >= limit) if key == "min" else bool(value <= limit)


def _explain(key: str, c: dict[str, Any]) -> str:
    limit = c[key]
    if key == "in":
        allowed = set(map(_hashable, limit)) if _all_scalars(limit) else limit
        return f"not in {_show(allowed)}"
    if key == "not_in":
        return f"is one of the forbidden values {_show(limit)}"
    return f"is below the minimum {limit}" if key == "min" else f"is above the maximum {limit}"


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _all_scalars(values: list[Any]) -> bool:
    return all(not isinstance(v, list | dict) for v in values)


def _allowed_for(c: dict[str, Any], key: str) -> Any:
    if key == "not_in":
        return {"not_in": c[key]}
    if key in ("min", "max"):
        return {key: c[key]}
    return c[key]


def _allowed(c: dict[str, Any]) -> Any:
    return {k: c[k] for k in ("in", "not_in", "min", "max") if k in c}


def _tensor_tests(c: dict[str, Any], t: TensorInfo, is_constant: bool) -> list[tuple[Any, Any, str]]:
    out: list[tuple[Any, Any, str]] = []
    if "dtype" in c and t.dtype not in c["dtype"]:
        out.append((t.dtype or UNKNOWN, c["dtype"], f"dtype {t.dtype or UNKNOWN} not in {_show(c['dtype'])}"))
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
        out.append((t.shape if t.shape is not None else UNKNOWN, "static", f"shape {_show_shape(t)} is not static"))
    if "max_elements" in c:
        n = t.elements
        if n is None:
            out.append((UNKNOWN, c["max_elements"], "element count unknown (shape not static)"))
        elif n > c["max_elements"]:
            out.append((n, c["max_elements"], f"has {n} elements, above the maximum {c['max_elements']}"))
    if "max_bytes" in c:
        b = t.nbytes
        if b is None:
            out.append((UNKNOWN, c["max_bytes"], "byte size unknown (shape or dtype not static)"))
        elif b > c["max_bytes"]:
            out.append((b, c["max_bytes"], f"has {b} bytes, above the maximum {c['max_bytes']}"))
    return out


def _dim_test(spec: dict[str, Any], t: TensorInfo) -> list[tuple[Any, Any, str]]:
    axis = spec["axis"]
    if t.shape is None or not -len(t.shape) <= axis < len(t.shape):
        return [(UNKNOWN, spec, f"dim {axis} unknown (shape {_show_shape(t)})")]
    d = t.shape[axis]
    if not isinstance(d, int):
        return [(d if d is not None else UNKNOWN, spec, f"dim {axis} is not static ({d or '?'})")]
    out = []
    if "max" in spec and d > spec["max"]:
        out.append((d, {"max": spec["max"]}, f"dim {axis} = {d} is above the maximum {spec['max']}"))
    if "multiple_of" in spec and d % spec["multiple_of"]:
        m = spec["multiple_of"]
        out.append((d, {"multiple_of": m}, f"dim {axis} = {d} is not a multiple of {m}"))
    return out


def _range(lo: Any, hi: Any) -> str:
    return f"{'' if lo is None else lo}..{'' if hi is None else hi}"


def _show_shape(t: TensorInfo) -> str:
    if t.shape is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in t.shape) + "]"
