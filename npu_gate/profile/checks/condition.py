"""A constraint's ``when``: it applies only where a tensor's dtype or an attribute's value holds.

A tensor dtype that is not known (absent tensor, no type inferred) applies the constraint:
a condition may make a node meet stricter limits, never skip them. An attribute condition
reads the attribute with its ONNX default, as tests do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_gate.profile.checks.base import Context, is_ref
from npu_gate.profile.checks.subject import Test


@dataclass(frozen=True)
class Condition:
    raw: Mapping[str, Any]
    test: Test  # the condition as a test, for its words

    def holds(self, ctx: Context) -> bool:
        when, node = self.raw, ctx.node
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

    def describe(self) -> str:
        """``input 0 dtype in {int8, uint8} (or not known)``, ``attribute group in {1}``."""
        text = self.test.describe().replace(":", "", 1)
        return text if "attribute" in self.raw else text + " (or not known)"

    def problems(self, where: str) -> list[str]:
        """An attribute with in/not_in (plain values), or a tensor with dtype only."""
        when = self.raw
        if "attribute" in when:
            if "dtype" in when:
                return [f"{where}: dtype is a tensor test; an attribute condition takes in/not_in"]
            if "in" not in when and "not_in" not in when:
                return [f"{where}: an attribute condition needs in or not_in"]
            if any(is_ref(v) for k in ("in", "not_in") for v in when.get(k, [])):
                return [f"{where}: a condition takes plain values, not references"]
            return []
        extra = [k for k in ("in", "not_in") if k in when]
        if extra:
            return [f"{where}: a tensor condition tests dtype only; remove {', '.join(extra)}"]
        return []
