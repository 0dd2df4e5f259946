"""Proof for a rewrite: original vs rewritten model under onnxruntime (CPU), on samples.

End to end per graph output, and layer-wise at the output tensor of every replaced region
(exposed as an extra graph output of the original; the emitted nodes run alone on the
region's original inputs, so each region shows its own error). Numerics run
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

from npu_gate.model.numerics import compare_output, measured_fields, run_limited, session_options, time_limit
from npu_gate.rewrites import Applied
from npu_gate.rewrites.base import GraphView

Outputs = list[dict[str, np.ndarray]]  # per sample: output name -> array
ORIGINAL = "the original"  # the reference side of every comparison here, in messages


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
        return out | measured_fields(self)


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

    options = session_options()
    options.intra_op_num_threads = 1  # deterministic and fair on a shared CI runner
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def run(model: onnx.ModelProto, samples: list[dict[str, np.ndarray]]) -> tuple[list[str], list[list[np.ndarray]]]:
    from npu_gate.model.numerics import run_session

    return run_session(session(model), samples, "have no sample values")


def region_model(original: onnx.ModelProto, a: Applied) -> tuple[onnx.ModelProto, list[str]]:
    """The emitted nodes alone, reading the region's inputs as graph inputs (weights of the
    original model kept as initializers), and the names it must be fed."""
    view = GraphView(original)
    produced = {o for n in a.nodes for o in n.output}
    own = {t.name for t in a.initializers}
    reads = dict.fromkeys(t for n in a.nodes for t in n.input if t and t not in produced and t not in own)
    weights = [view.initializers[t] for t in reads if t in view.initializers]
    feeds = [t for t in reads if t not in view.initializers]
    graph = helper.make_graph(
        list(a.nodes), f"region {a.anchor}",
        [helper.make_tensor_value_info(t, view.elem_type(t), None) for t in feeds],
        [helper.make_tensor_value_info(a.output, view.elem_type(a.output), None)],
        initializer=[*a.initializers, *weights],
    )
    model = helper.make_model(graph, opset_imports=list(original.opset_import))
    model.ir_version = original.ir_version
    return model, feeds


def verify(
    original: onnx.ModelProto,
    rewritten: onnx.ModelProto,
    applied: list[Applied],
    samples: list[dict[str, np.ndarray]],
    tolerances: dict[str, tuple[float, float]],
    default: tuple[float, float],
) -> Verification:
    """End to end: every graph output, original vs rewritten (``default`` tolerance, or the
    loosest tolerance a contract gave the applied rewrites). Layer-wise: every replaced
    region's output tensor, exposed as an extra output of the original model, against the
    emitted nodes run alone on the region's inputs as the original model computes them, so
    each region shows its own error, not what upstream regions passed on (its rewrite's
    tolerance)."""
    outputs = [o.name for o in original.graph.output]
    graph_inputs = {i.name for i in original.graph.input}
    regions = [(a, *region_model(original, a)) for a in applied]
    taps = list(dict.fromkeys(t for a, _, feeds in regions for t in (a.output, *feeds)
                              if t not in outputs and t not in graph_inputs))
    ref_names, ref = run(with_outputs(original, taps), samples)
    cand_names, cand = run(rewritten, samples)
    e2e = default
    for a in applied:
        t = tolerances.get(a.rewrite, default)
        e2e = (max(e2e[0], t[0]), max(e2e[1], t[1]))

    def value(k: int, name: str) -> np.ndarray:
        return samples[k][name] if name in graph_inputs else ref[k][ref_names.index(name)]

    checks = []
    for name in outputs:
        pairs = [(c[cand_names.index(name)], r[ref_names.index(name)]) for c, r in zip(cand, ref, strict=True)]
        c = compare_output(name, pairs, e2e[0], e2e[1], ORIGINAL)
        checks.append(Check(name, "output", None, None, c.max_abs_err, c.max_rel_err, e2e[0], e2e[1],
                            c.passed, c.samples, c.problem))
    for a, model, feeds in regions:
        tol = tolerances.get(a.rewrite, default)
        sess = session(model)
        pairs = [(np.asarray(run_limited(sess, [a.output], {t: value(k, t) for t in feeds})[0]), value(k, a.output))
                 for k in range(len(samples))]
        c = compare_output(a.output, pairs, tol[0], tol[1], ORIGINAL)
        checks.append(Check(a.output, "region", a.anchor, a.rewrite, c.max_abs_err, c.max_rel_err, tol[0], tol[1],
                            c.passed, c.samples, c.problem))
    reference = [{n: r[ref_names.index(n)] for n in outputs} for r in ref]
    candidate = [{n: c[cand_names.index(n)] for n in outputs} for c in cand]
    return Verification(checks, reference, candidate)


def cpu_latency(model: onnx.ModelProto, sample: dict[str, np.ndarray], runs: int = 20, warmup: int = 3) -> float:
    """Median seconds of ``runs`` onnxruntime CPU runs (default optimizations, 1 thread):
    a CPU reference, not device latency."""
    sess = session(model, optimize=True)
    feed = {i.name: sample[i.name] for i in sess.get_inputs()}
    for _ in range(warmup):
        run_limited(sess, None, feed)
    times = []
    for _ in range(runs):
        with time_limit() as options:  # its timer starts outside the timed run
            start = time.perf_counter()
            sess.run(None, feed, options)
            times.append(time.perf_counter() - start)
    return statistics.median(times)
