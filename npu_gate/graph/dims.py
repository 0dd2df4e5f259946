"""Dynamic input dims: which the model keeps symbolic, and what fixing them folds.

A contract can fix a dim (batch 1) that the model keeps symbolic; the compiler still
receives the symbolic model unless it is exported with static shapes or the dim is fixed.
Each such dim is traced to the shape chains it keeps (or that the contract's value folds).
"""

from __future__ import annotations

from npu_gate.graph.facts import GraphFacts, TensorInfo
from npu_gate.graph.shape_chains import ShapeChain
from npu_gate.result.types import DynamicDim


def dynamic_dims(
    model_inputs: list[TensorInfo], declared: dict[str, list[int]], chains: list[ShapeChain]
) -> list[DynamicDim]:
    """Every non-static input dim: its symbol, the contract's value (``declared``: the
    contract's shape of each input it declares), and the shape chains
    fixing it folds (under a contract: those that fold because it does; without one: the
    staying chains that depend on it and only on input dims)."""
    out = []
    for info in model_inputs:
        shape = declared.get(info.name)
        for d, dim in enumerate(info.shape or []):
            if isinstance(dim, int):
                continue
            where = f"{info.name}[{d}]"
            fixed = shape[d] if shape is not None and d < len(shape) else None
            if fixed is not None:
                folds = [c.key for c in chains if where in c.fixed_by_contract]
            else:
                folds = [
                    c.key
                    for c in chains
                    if not c.folds
                    and c.blocking
                    and any(where in b.origin for b in c.blocking)
                    and all(b.origin for b in c.blocking)
                ]
            out.append(DynamicDim(input=info.name, dim=d, symbol=dim, contract=fixed, chains_folded_by_fixing=folds))
    return out


def fix_effect(info: TensorInfo, chains: list[ShapeChain]) -> str:
    """What fixing a dynamic input's dims folds, as the tail of its dynamic-input finding
    ("; fixing it folds 2 shape chains (...)"), or "" when it folds none: under a contract
    the chains it already folds, without one those it would."""
    dims = {f"{info.name}[{d}]" for d, v in enumerate(info.shape or []) if not isinstance(v, int)}
    if not dims:
        return ""
    folded_now = [c for c in chains if c.folds and dims & set(c.fixed_by_contract)]
    if folded_now:
        return f"; fixing it folds {chains_text(folded_now)}"
    would_fold = [
        c
        for c in chains
        if not c.folds and c.blocking and all(b.origin and set(b.origin) <= dims for b in c.blocking)
    ]
    if would_fold:
        return f"; fixing {', '.join(sorted(dims))} would fold {chains_text(would_fold)}"
    return ""


def chains_text(chains: list[ShapeChain]) -> str:
    """'2 shape chains (/Resize, /Reshape: 25 nodes)': the chains and their distinct nodes."""
    nodes = {(c.graph, n) for c in chains for n in c.nodes}
    keys = ", ".join(c.key for c in chains)
    return f"{_count(len(chains), 'shape chain')} ({keys}: {_count(len(nodes), 'node')})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def dynamic_causes(facts: GraphFacts, order: list[int], model_inputs: list[TensorInfo]) -> dict[int, list[str]]:
    """Each node (by index) with an output whose shape is not static: the root cause it follows
    from: the dynamic dims of the inputs upstream of it (``x[0]``; an input of unknown rank by
    its name); with none upstream (a data-dependent shape such as NonZero's, a vendor op ONNX
    cannot infer) the first such output's name, which the nodes below it inherit."""
    roots: dict[str, frozenset[str]] = {}
    for info in model_inputs:
        if info.shape is None:
            roots[info.name] = frozenset({info.name})
            continue
        refs = set()
        for d, v in enumerate(info.shape):
            if not isinstance(v, int) or v < 0:
                refs.add(f"{info.name}[{d}]")
        if refs:
            roots[info.name] = frozenset(refs)
    causes: dict[int, list[str]] = {}
    empty: frozenset[str] = frozenset()
    for i in order:
        node = facts.nodes[i]
        upstream = empty.union(*(roots.get(n, empty) for n in (*node.inputs, *node.implicit_inputs) if n))
        dynamic = [n for n in node.outputs if n and not _static(facts.tensors.get(n))]
        if dynamic:
            cause = upstream or frozenset(dynamic[:1])
            causes[i] = sorted(cause)
            upstream = upstream or cause
        if upstream:
            for n in node.outputs:
                if n:
                    roots[n] = upstream
    return causes


def _static(info: TensorInfo | None) -> bool:
    return info is not None and info.static

