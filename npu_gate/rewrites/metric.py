"""The contract's task metric: ``fn(reference_outputs, candidate_outputs, samples) -> {name: value}``.

``reference_outputs`` and ``candidate_outputs`` are lists (one per sample) of dicts mapping
output name to numpy array, from the original and the rewritten model; ``samples`` the
inputs. Each value is judged against ``threshold[name]`` = ``{"min": a, "max": b}``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from npu_gate.contract.spec import Metric
from npu_gate.errors import one_line
from npu_gate.model.user_code import import_callable


def evaluate(
    metric: Metric, folder: Path, reference: list[dict[str, np.ndarray]],
    candidate: list[dict[str, np.ndarray]], samples: list[dict[str, np.ndarray]],
) -> dict[str, Any]:
    """{callable, values, checks, passed, error?}. What the metric raises or returns wrong is
    ``error``; a metric that cannot be imported is bad input (checked before any model work,
    see ``Rewriting``) and raises ModelError."""
    out: dict[str, Any] = {"callable": metric.callable, "values": {}, "checks": [], "passed": False}
    fn = import_callable(metric.callable, folder, "metric.callable")
    added = str(folder.resolve())
    sys.path.insert(0, added)  # the metric may import its folder's modules when it runs
    try:
        values = fn(reference, candidate, samples)
        if not isinstance(values, dict):
            raise TypeError(f"returned {type(values).__name__}, not a dict of name -> number")
        out["values"] = {str(k): float(v) for k, v in values.items()}
    except (Exception, SystemExit) as exc:  # the metric may call sys.exit()
        out["error"] = f"{metric.callable}: {one_line(exc)}"
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
