"""Symbolic input dims: which input dims a symbolic name (or an expression such as ``2*N``) stands for."""

from __future__ import annotations

import re

from npu_gate.graph.facts import TensorInfo

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def input_symbols(inputs: list[TensorInfo]) -> dict[str, list[str]]:
    """Symbolic dim name → the graph input dims that declare it, e.g. {"N": ["x[0]"]}."""
    out: dict[str, list[str]] = {}
    for info in inputs:
        for d, dim in enumerate(info.shape or []):
            if isinstance(dim, str):
                out.setdefault(dim, []).append(f"{info.name}[{d}]")
    return out


def origin_of(value: str | None, symbols: dict[str, list[str]]) -> list[str]:
    """Input dims behind a symbolic dim: the name itself, or the names in an expression
    (symbolic shape inference writes dims such as ``2*N``)."""
    if value is None:
        return []
    if value in symbols:
        return list(symbols[value])
    out: list[str] = []
    for ident in _IDENT.findall(value):
        for where in symbols.get(ident, []):
            if where not in out:
                out.append(where)
    return out
