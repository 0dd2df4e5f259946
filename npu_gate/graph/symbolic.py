"""Fill what ONNX shape inference leaves unknown with onnxruntime's symbolic shape inference.

ONNX writes ``unk__0`` (or nothing) for dims it cannot infer, e.g. a Resize whose sizes
come from ``Shape(x)[2:]`` with symbolic H, W; onnxruntime's symbolic inference tracks
such dims as expressions of the input symbols (``H``, ``2*N``). Loading it (and sympy)
takes about half a second, so it runs only when ONNX left an unknown dim, never for a known graph.

onnxruntime's module is loaded from its file, not through the ``onnxruntime.tools`` package:
that package's ``__init__`` imports torch whenever torch is installed, and ``inspect``
promises never to import torch. The module itself needs only onnx, numpy, sympy and
packaging, so neither torch nor onnxruntime's runtime gets imported.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import tempfile
import warnings
from collections.abc import Collection, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import onnx
from onnx import ModelProto

from npu_gate.errors import one_line
from npu_gate.graph import shape_values
from npu_gate.graph.facts import Dim, GraphFacts, TensorInfo, tensor_info_from_type
from npu_gate.graph.fold_budget import FoldBudget
from npu_gate.graph.symbols import origin_of


def _unknown(dim: Dim, symbols: dict[str, list[str]]) -> bool:
    return dim is None or (isinstance(dim, str) and dim not in symbols)


def unknown_tensors(
    facts: GraphFacts, symbols: dict[str, list[str]], skip: Collection[int] = ()
) -> list[str]:
    """Node outputs whose rank is unknown or that have a dim that is neither static nor an
    input's symbolic dim; the outputs of nodes in ``skip`` (indices) aside."""
    out = []
    for node in facts.nodes:
        if node.index in skip:
            continue
        for name in node.outputs:
            info = facts.tensors.get(name) if name else None
            if name and (info is None or not info.static) and (
                info is None or info.shape is None or any(_unknown(d, symbols) for d in info.shape)
            ):  # static first: most tensors are, and the check is cheap
                out.append(name)
    return out


def refine(
    model: ModelProto, facts: GraphFacts, names: list[str], symbols: dict[str, list[str]]
) -> tuple[list[str], str | None]:
    """Run symbolic inference on ``model`` and merge its shapes for ``names`` into
    ``facts.tensors``; returns the tensors it made better known, and why it failed or
    stopped early (None when it ran to the end)."""
    try:
        inferred, stopped = _symbolic_inference(model)
    except Exception as exc:  # unknown ops, odd models: keep ONNX's shapes
        return [], one_line(exc)
    if inferred is None:
        return [], "symbolic shape inference returned no model"
    return _merge_known(inferred, facts, names, symbols), stopped


def _merge_known(
    inferred: ModelProto, facts: GraphFacts, names: list[str], symbols: dict[str, list[str]]
) -> list[str]:
    """Merge ``inferred``'s shapes for ``names`` into ``facts.tensors``; the names improved."""
    theirs = {
        v.name: tensor_info_from_type(v.name, v.type)
        for v in (*inferred.graph.value_info, *inferred.graph.output)
    }
    improved = []
    for name in names:
        other = theirs.get(name)
        if other is None or other.shape is None:
            continue
        mine = facts.tensors.get(name)
        merged = _merge(mine, other, symbols)
        if merged is not None:
            facts.tensors[name] = merged
            improved.append(name)
    return improved


def refine_by_folding(
    model: ModelProto, facts: GraphFacts, folded: set[int], symbols: dict[str, list[str]],
    budget: FoldBudget | None = None,
) -> dict[str, Any] | None:
    """ONNX shape inference again, on the graph a compiler sees: folded nodes replaced by their
    values. ONNX's data propagation stops at some ops (``Mod`` in the index arithmetic of every
    torchscript attention block), leaving a Reshape's output unknown although its shape folds.
    The ``folded_shapes`` stage entry, or None when nothing was unknown or nothing folded."""
    unknown = unknown_tensors(facts, symbols)
    shape_like = shape_values.shape_like_folding(facts.nodes, facts.tensors, folded)
    if not unknown or not shape_like:
        return None
    from npu_gate.graph.edit import folded_model

    replaced, note = folded_model(model, shape_like, budget)
    if replaced is model:
        return {"status": "failed", "reason": note, "unknown": len(unknown), "resolved": 0}
    try:
        inferred = onnx.shape_inference.infer_shapes(replaced, data_prop=True)
    except Exception as exc:
        return {"status": "failed", "reason": one_line(exc), "unknown": len(unknown), "resolved": 0}
    improved = _merge_known(inferred, facts, unknown, symbols)
    return {"status": "ok", "unknown": len(unknown), "resolved": len(improved)}


_PARTIAL_MODEL = "sym_shape_infer_temp.onnx"  # where onnxruntime saves what it had when it stops early


def _symbolic_inference(model: ModelProto) -> tuple[ModelProto | None, str | None]:
    """onnxruntime's symbolic inference, and the reason it stopped early (None: it finished).

    When it cannot finish, onnxruntime saves its partial model (and an external data file)
    in the *current* folder, which would be the user's repository. So it runs in a scratch
    folder, and the shapes it did infer before stopping are still used.
    """
    inference = _ort_symbolic_module().SymbolicShapeInference
    with (tempfile.TemporaryDirectory(prefix="npu-gate-symbolic-") as scratch, _working_folder(scratch),
          warnings.catch_warnings()):
        warnings.simplefilter("ignore")  # numpy overflow on dims near 2**63: noise in the user's terminal
        try:
            return inference.infer_shapes(model, auto_merge=True), None
        except Exception as exc:
            partial = Path(scratch) / _PARTIAL_MODEL
            if not partial.is_file():
                raise
            reason = f"stopped early: {one_line(exc)}"
            return onnx.load_model(str(partial), load_external_data=False), reason


_ORT_MODULE = "_npu_gate_ort_symbolic_shape_infer"  # private name: never onnxruntime.tools.*


def _ort_symbolic_module() -> ModuleType:
    """onnxruntime's ``tools/symbolic_shape_infer.py``, loaded once under a private name
    without running ``onnxruntime/__init__.py`` or ``onnxruntime/tools/__init__.py``."""
    loaded = sys.modules.get(_ORT_MODULE)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("onnxruntime")  # finds the package without importing it
    if package is None or not package.submodule_search_locations:
        raise ModuleNotFoundError("onnxruntime is not installed")
    path = Path(next(iter(package.submodule_search_locations))) / "tools" / "symbolic_shape_infer.py"
    spec = importlib.util.spec_from_file_location(_ORT_MODULE, path)
    if not path.is_file() or spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"onnxruntime has no {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_ORT_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_ORT_MODULE]
        raise
    return module


@contextlib.contextmanager
def _working_folder(folder: str) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def _merge(
    mine: TensorInfo | None, other: TensorInfo, symbols: dict[str, list[str]]
) -> TensorInfo | None:
    """``other``'s dims where ``mine`` has unknown ones; None when nothing improves."""
    assert other.shape is not None
    if mine is None or mine.shape is None:
        return TensorInfo(
            other.name, mine.dtype if mine and mine.dtype else other.dtype, list(other.shape)
        )
    if len(mine.shape) != len(other.shape):
        return None
    shape: list[Dim] = []
    changed = False
    for a, b in zip(mine.shape, other.shape, strict=True):
        if _unknown(a, symbols) and b != a and (isinstance(b, int) or origin_of(b, symbols)):
            shape.append(b)
            changed = True
        else:
            shape.append(a)
    return TensorInfo(mine.name, mine.dtype or other.dtype, shape) if changed else None


def refine_stage(
    model: ModelProto, facts: GraphFacts, symbols: dict[str, list[str]], folded: Collection[int] = (),
    budget: FoldBudget | None = None,
) -> dict[str, Any] | None:
    """Refine ``facts`` only where ONNX left unknown dims; the ``symbolic_shapes`` stage
    entry, or None when nothing was unknown (onnxruntime not even imported); skipped when folding
    refused a value over ``budget`` (onnxruntime computes constant values without a bound). Outputs of
    ``folded`` nodes are not looked for: they never reach a compiler, and their values are known."""
    unknown = unknown_tensors(facts, symbols, folded)
    if not unknown:
        return None
    if budget is not None and budget.skips:  # it would compute, unbounded, what folding refused
        return {"status": "skipped", "reason": "folded values over the fold budget (fold-budget findings)",
                "unknown": len(unknown), "resolved": 0}
    improved, reason = refine(model, facts, unknown, symbols)
    if reason is not None and not improved:
        return {"status": "failed", "reason": reason, "unknown": len(unknown), "resolved": 0}
    stage: dict[str, Any] = {"status": "ok", "unknown": len(unknown), "resolved": len(improved)}
    if reason is not None:
        stage["reason"] = reason  # it stopped early; what it had inferred is used
    return stage
