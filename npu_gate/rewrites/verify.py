"""Proof for a rewrite: original vs rewritten model under onnxruntime (CPU), on samples.

End to end per graph output, and layer-wise at the output tensor of every replaced region
(exposed as an extra graph output in both models: the tensor keeps its name). Numerics run
with graph optimizations off, so onnxruntime's own fusions cannot hide a difference. CPU
latency runs with onnxruntime's defaults and is a CPU reference, never device latency.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from npu_gate.numerics import _compare_output
from npu_gate.rewrites import Applied
from npu_gate.rewrites.base import GraphView

Outputs = list[dict[str, np.ndarray]]  # per sample: output name -> array


@dataclass
class Check:
    where: str  # an output name, or the replaced region's output tensor
    kind: str  # output | region
    node: str | None  # the region's original node (kind region)
    rewrite: str | None
    max_abs_err: float | None
    max_rel_err: float | None
    atol: float
    rtol: float
    passed: bool
    samples: int
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"where": self.where, "kind": self.kind}
        if self.node is not None:
            out["node"] = self.node
        out.update({"max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err, "atol": self.atol,
                    "rtol": self.rtol, "passed": self.passed, "samples": self.samples})
        if self.problem:
            out["problem"] = self.problem
        return out


@dataclass
class Verification:
    checks: list[Check]
    reference: Outputs  # original model, graph outputs only
    candidate: Outputs  # rewritten model, graph outputs only


def with_outputs(model: onnx.ModelProto, tensors: list[str]) -> onnx.ModelProto:
    """A copy of ``model`` that also outputs ``tensors`` (typed from shape inference)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    existing = {o.name for o in out.graph.output}
    view = GraphView(model)
    for name in tensors:
        if name not in existing:
            out.graph.output.append(helper.make_tensor_value_info(name, view.elem_type(name), None))
            existing.add(name)
    return out


def session(model: onnx.ModelProto, optimize: bool = False) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1  # deterministic and fair on a shared CI runner
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def run(model: onnx.ModelProto, samples: list[dict[str, np.ndarray]]) -> tuple[list[str], list[list[np.ndarray]]]:
    sess = session(model)
    wanted = [i.name for i in sess.get_inputs()]
    names = [o.name for o in sess.get_outputs()]
    results = []
    for sample in samples:
        missing = [n for n in wanted if n not in sample]
        if missing:
            raise ValueError(f"model input(s) {missing} have no sample values")
        results.append([np.asarray(v) for v in sess.run(names, {n: sample[n] for n in wanted})])
    return names, results


def verify(
    original: onnx.ModelProto,
    rewritten: onnx.ModelProto,
    applied: list[Applied],
    samples: list[dict[str, np.ndarray]],
    tolerances: dict[str, tuple[float, float]],
    default: tuple[float, float],
) -> Verification:
    """Checks per graph output (``default`` tolerance; the loosest of the applied rewrites' when
    they declare their own) and per replaced region (its rewrite's tolerance)."""
    outputs = [o.name for o in original.graph.output]
    regions = list(dict.fromkeys(a.output for a in applied))
    extra = [r for r in regions if r not in outputs]
    ref_names, ref = run(with_outputs(original, extra), samples)
    cand_names, cand = run(with_outputs(rewritten, extra), samples)
    e2e = default
    for a in applied:
        t = tolerances.get(a.rewrite, default)
        e2e = (max(e2e[0], t[0]), max(e2e[1], t[1]))

    def check(name: str, kind: str, a: Applied | None, tol: tuple[float, float]) -> Check:
        pairs = [(c[cand_names.index(name)], r[ref_names.index(name)]) for c, r in zip(cand, ref, strict=True)]
        c = _compare_output(name, pairs, tol[0], tol[1])  # type: ignore[arg-type]
        return Check(name, kind, a.anchor if a else None, a.rewrite if a else None,
                     c.max_abs_err, c.max_rel_err, tol[0], tol[1], c.passed, c.samples, c.problem)

    checks = [check(name, "output", None, e2e) for name in outputs]
    for name in regions:
        a = next(a for a in applied if a.output == name)
        checks.append(check(name, "region", a, tolerances.get(a.rewrite, default)))
    reference = [{n: r[ref_names.index(n)] for n in outputs} for r in ref]
    candidate = [{n: c[cand_names.index(n)] for n in outputs} for c in cand]
    return Verification(checks, reference, candidate)


def cpu_latency(model: onnx.ModelProto, sample: dict[str, np.ndarray], runs: int = 20, warmup: int = 3) -> float:
    """Median seconds of ``runs`` onnxruntime CPU runs (default optimizations, 1 thread):
    a CPU reference, not device latency."""
    sess = session(model, optimize=True)
    feed = {i.name: sample[i.name] for i in sess.get_inputs()}
    for _ in range(warmup):
        sess.run(None, feed)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
