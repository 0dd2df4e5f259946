"""``in``, ``not_in``, ``min`` and ``max`` on a value; with ``each``, on each element of a list.

A limit may be a ``{"ref": ...}`` (another attribute, a tensor dim), resolved on the node
tested; a list-valued ``min``/``max`` applies element-wise, repeating: pads [b1, b2, e1, e2]
against kernel [k1, k2] compares b1 and e1 with k1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import (
    Context,
    Failed,
    Parser,
    ValueCheck,
    hashable,
    is_number,
    is_ref,
    one_or_list,
    resolve_ref,
    show,
    words,
    words_set,
)

KEYS = ("in", "not_in", "min", "max")


@dataclass(frozen=True)
class Bounds(ValueCheck):
    keys = KEYS
    modifiers = ("each",)
    limits: Mapping[str, Any]  # key -> limit, in KEYS order
    each: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Bounds:
        return cls({key: raw[key] for key in KEYS if key in raw}, bool(raw.get("each")))

    @property
    def needs_value(self) -> bool:
        return any(key in self.limits for key in ("in", "min", "max"))

    def allowed_when_unknown(self) -> dict[str, Any]:
        return dict(self.limits)

    def resolved(self, ctx: Context) -> Bounds:
        if not self.references(""):
            return self
        out = dict(self.limits)
        for key in ("in", "not_in"):
            if key in out:
                out[key] = [resolve_ref(v, ctx.node, ctx.tensors) if is_ref(v) else v for v in out[key]]
        for key in ("min", "max"):
            if key in out and is_ref(out[key]):
                out[key] = resolve_ref(out[key], ctx.node, ctx.tensors)
        return Bounds(out, self.each)

    def evaluate(self, value: Any) -> list[Failed]:
        if self.each and isinstance(value, list):
            return [Failed(bad, _allowed(key, limit), f"{show(bad)} {_explain(key, limit)}")
                    for key, bad, limit in self._each_failures(value)]
        return [Failed(value, _allowed(key, limit), f"{show(value)} {_explain(key, limit)}")
                for key, limit in self.limits.items() if not _passes(key, limit, value)]

    def _each_failures(self, values: list[Any]) -> list[tuple[str, Any, Any]]:
        """(test, bad elements, limit) per failed test."""
        out: list[tuple[str, Any, Any]] = []
        for key, limit in self.limits.items():
            if key in ("min", "max") and isinstance(limit, list) and limit:
                pairs = [(v, limit[i % len(limit)]) for i, v in enumerate(values)]
                failed = [(v, lim) for v, lim in pairs if not _passes(key, lim, v)]
                if failed:
                    out.append((key, one_or_list([v for v, _ in failed]), one_or_list([lim for _, lim in failed])))
                continue
            bad = [v for v in values if not _passes(key, limit, v)]
            if bad:
                out.append((key, one_or_list(bad), limit))
        return out

    def phrases(self) -> list[str]:
        each = "each element " if self.each else ""
        shown = {"in": "in ", "not_in": "not in ", "min": "≥ ", "max": "≤ "}
        return [f"{each}{shown[key]}{words_set(limit) if key in ('in', 'not_in') else words(limit)}"
                for key, limit in self.limits.items()]

    def references(self, where: str) -> list[tuple[str, Any]]:
        refs = [(f"{where}.{k}", self.limits[k]) for k in ("min", "max") if isinstance(self.limits.get(k), dict)]
        refs += [
            (f"{where}.{k}[{i}]", v)
            for k in ("in", "not_in")
            for i, v in enumerate(self.limits.get(k, []))
            if isinstance(v, dict) and "ref" in v
        ]
        return refs

    @classmethod
    def onnx_attributes(cls, raw: Mapping[str, Any]) -> list[tuple[str, str]]:
        names = []
        for key in ("in", "not_in"):
            items = raw.get(key)
            for k, item in enumerate(items if isinstance(items, list) else []):
                name = _attribute_ref(item)
                if name is not None:
                    names.append((f".{key}[{k}].ref.attribute", name))
        for key in ("min", "max"):
            name = _attribute_ref(raw.get(key))
            if name is not None:
                names.append((f".{key}.ref.attribute", name))
        return names


def _attribute_ref(item: Any) -> str | None:
    """The attribute name of a ``{"ref": {"attribute": NAME}}`` value, if it is one."""
    ref = item.get("ref") if isinstance(item, dict) else None
    name = ref.get("attribute") if isinstance(ref, dict) else None
    return name if isinstance(name, str) else None


def _passes(key: str, limit: Any, value: Any) -> bool:
    if key == "in":
        return bool(value in limit)
    if key == "not_in":
        return bool(value not in limit)
    if not is_number(value) or not is_number(limit):
        return False  # an unknown reference never passes a range test
    return bool(value >= limit) if key == "min" else bool(value <= limit)


def _explain(key: str, limit: Any) -> str:
    if key == "in":
        # A tuple shows as {a, b}; insertion order keeps messages reproducible.
        shown = tuple(dict.fromkeys(map(hashable, limit))) if _all_scalars(limit) else limit
        return f"not in {show(shown)}"
    if key == "not_in":
        return f"is one of the forbidden values {show(limit)}"
    return f"is {'below the minimum' if key == 'min' else 'above the maximum'} {show(limit)}"


def _all_scalars(values: list[Any]) -> bool:
    return all(not isinstance(v, list | dict) for v in values)


def _allowed(key: str, limit: Any) -> Any:
    if key == "not_in":
        return {"not_in": limit}
    if key in ("min", "max"):
        return {key: limit}
    return limit
