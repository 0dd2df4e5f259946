"""Several results as one: the merged document, loading results back, the applied verdict.

A merged document is ``{"kind": "npu-gate-merged", "verdict", "results": [result...],
"errors": [{"contract", "problems"}], "baseline"?: [comparison...]}``
(schemas/merged.schema.json); every entry of ``results`` is a plain result
(schemas/result.schema.json). ``npu-gate merge`` and the action's many-model runs write it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npu_gate.compare.baseline import Comparison, absent, compare_all
from npu_gate.compare.report import ModelReport, combined_verdict
from npu_gate.errors import GateError
from npu_gate.result.read import MERGED_KIND, load_results, result_from_dict

MERGED_SCHEMA_VERSION = "1.0"
FAIL_ON = ("errors", "regressions", "never")


def merged_document(models: Sequence[ModelReport],
                    comparisons: Sequence[Comparison | None] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": MERGED_SCHEMA_VERSION,
        "kind": MERGED_KIND,
        "verdict": combined_verdict(list(models)),
        "results": [m.result.to_dict() for m in models if m.result is not None],
        "errors": [{"contract": m.label, "problems": m.problems}
                   for m in models if m.result is None],
    }
    if comparisons is not None and any(c is not None for c in comparisons):
        doc["baseline"] = [c.to_dict() for c in comparisons if c is not None]
    return doc


def load_reports(paths: Sequence[Path], report: Path | None = None) -> list[ModelReport]:
    """Results from result JSONs and merged documents, in order (errors entries kept). Two
    results of the same name are refused: the baseline and the report tell models apart by name.

    ``report``: the Markdown report to be written. A result whose minimal models sit beside
    its JSON (a bundle's own result.json) gets links into that bundle from the report's folder;
    other results name the models' paths as text (``ModelReport.bundle_dir`` None).
    """
    models: list[ModelReport] = []
    seen: dict[str, tuple[int, Path]] = {}  # result name -> (argument index, file)
    duplicates = []
    for index, path in enumerate(paths):
        if path in paths[:index]:
            duplicates.append(f"{path}: given twice")
            continue
        for doc in load_results(path):
            name = str(doc["name"])
            if name in seen:
                first, other = seen[name]
                where = "twice in this file" if first == index else f"also in {other}"
                duplicates.append(f"{path}: result {name!r} is {where}: merge each model once (results are "
                                  "matched by name, as the baseline does)")
            seen.setdefault(name, (index, path))
            label = (doc.get("contract") or {}).get("path") or doc["name"]
            model = ModelReport(label, result=result_from_dict(doc))
            if report is not None and _holds_minimal_models(path.parent, doc):
                relative = Path(os.path.relpath(path.parent.resolve(), report.resolve().parent)).as_posix()
                model.bundle_dir = "" if relative == "." else relative
            models.append(model)
        models += _errors(path)
    if duplicates:
        raise GateError(*duplicates)
    return models


def _holds_minimal_models(folder: Path, doc: dict[str, Any]) -> bool:
    """Whether every minimal model the result names is a file in ``folder`` (its bundle)."""
    minimal = doc.get("minimal")
    models = minimal.get("models") if isinstance(minimal, dict) else None
    return isinstance(models, list) and bool(models) and all(
        isinstance(m, dict) and isinstance(m.get("path"), str) and (folder / m["path"]).is_file() for m in models)


def _errors(path: Path) -> list[ModelReport]:
    if not path.is_file():
        return []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(doc, dict) or doc.get("kind") != MERGED_KIND:
        return []
    out = []
    for i, e in enumerate(doc.get("errors") or []):
        if not isinstance(e, dict):
            raise GateError(f"{path}: errors[{i}]: expected an object")
        out.append(ModelReport(str(e.get("contract", "?")),
                               problems=[str(p) for p in e.get("problems") or []]))
    return out


def attach_baseline(models: Sequence[ModelReport], baseline: Path | list[dict[str, Any]]) -> list[str]:
    """Set each gated model's comparison against the results in the baseline (its file, or the
    results read from it before any model code ran); the names of the baseline's models that
    are not among them."""
    before = load_results(baseline) if isinstance(baseline, Path) else baseline
    gated = [m for m in models if m.result is not None]
    for m, c in zip(gated, compare_all([m.result.to_dict() for m in gated if m.result], before),
                    strict=True):
        m.comparison = c
    return absent([m.name for m in gated], before)



