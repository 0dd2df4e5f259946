"""The contract's task metric: ``fn(reference_outputs, candidate_outputs, samples) -> {name: value}``.

``reference_outputs`` and ``candidate_outputs`` are lists (one per sample) of dicts mapping
output name to numpy array, from the original and the rewritten model; ``samples`` the
inputs. Each value is judged against ``threshold[name]`` = ``{"min": a, "max": b}``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from npu_gate.contract.spec import Metric
from npu_gate.model.worker import UserCode, WorkerFailed


def evaluate(
    metric: Metric, user: UserCode, reference: list[dict[str, np.ndarray]],
    candidate: list[dict[str, np.ndarray]], samples: list[dict[str, np.ndarray]],
) -> dict[str, Any]:
    """{callable, values, checks, passed, error?}. The metric runs in the child process of
    ``user`` (``model.worker``), on these arrays; what it raises or returns wrong, or the
    child's failure, is ``error``. The thresholds are judged here, on the values it returned."""
    out: dict[str, Any] = {"callable": metric.callable, "values": {}, "checks": [], "passed": False}
    try:
        reply = user.metric(reference, candidate, samples)
    except WorkerFailed as exc:
        out["error"] = f"{metric.callable}: {exc}"
        return out
    if reply.error is not None:
        out["error"] = reply.error
        return out
    out["values"] = reply.data["values"]
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
