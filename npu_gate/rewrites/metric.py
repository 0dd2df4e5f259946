"""The contract's task metric: ``fn(reference_outputs, candidate_outputs, samples) -> {name: value}``.

``reference_outputs`` and ``candidate_outputs`` are lists (one per sample) of dicts mapping
output name to numpy array, from the original and the rewritten model; ``samples`` the
inputs. Each value is judged against ``threshold[name]`` = ``{"min": a, "max": b}``.
"""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from npu_gate.contract import Metric


def evaluate(
    metric: Metric, folder: Path, reference: list[dict[str, np.ndarray]],
    candidate: list[dict[str, np.ndarray]], samples: list[dict[str, np.ndarray]],
) -> dict[str, Any]:
    """{callable, values, checks, passed, error?}; never raises for the user's code."""
    out: dict[str, Any] = {"callable": metric.callable, "values": {}, "checks": [], "passed": False}
    module_name, attr = metric.callable.split(":")
    added = str(folder.resolve())
    sys.path.insert(0, added)
    try:
        fn = getattr(importlib.import_module(module_name), attr)
        values = fn(reference, candidate, samples)
        if not isinstance(values, dict):
            raise TypeError(f"returned {type(values).__name__}, not a dict of name -> number")
        out["values"] = {str(k): float(v) for k, v in values.items()}
    except Exception as exc:
        first = str(exc).strip().splitlines()
        out["error"] = f"{metric.callable}: {type(exc).__name__}" + (f": {first[0]}" if first else "")
        return out
    finally:
        if added in sys.path:
            sys.path.remove(added)
    passed = True
    for name, bound in metric.threshold.items():
        value = out["values"].get(name)
        ok = value is not None and math.isfinite(value) and (
            ("min" not in bound or value >= bound["min"]) and ("max" not in bound or value <= bound["max"]))
        out["checks"].append({"name": name, "value": value, "min": bound.get("min"), "max": bound.get("max"),
                              "passed": ok})
        passed = passed and ok
    out["passed"] = passed
    return out
