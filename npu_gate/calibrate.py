"""`npu-gate profile calibrate`: a profile measured with a real compiler over a small sweep.

A sweep is data: families of single-op models, each family an op and, optionally, one
hypothesis constraint (profile JSON). Every point is probed with the compiler plug-in
(npu_gate/probe/), one child process per point; then, per family:

- every point on the NPU: the op is listed, without constraints;
- every point on CPU: the op is left out (``null`` when the profile extends a base that lists it);
- mixed: the hypothesis is kept when it predicts every point (passes exactly where the
  compiler ran the op on the NPU), otherwise the family is recorded as unexplained and the op
  is not written: nothing is claimed beyond what the points show.

Each constraint's ``doc`` and each op's ``note`` cite the sweep points; the calibration record
(``PROFILE.calibration.json``) keeps every point with its measured placement.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto, helper

NPU, CPU = "npu", "cpu"


@dataclass(frozen=True)
class Point:
    id: str
    build: Callable[[], onnx.ModelProto]


@dataclass(frozen=True)
class Family:
    op: str
    points: list[Point]
    constraint: dict[str, Any] | None = None  # the hypothesis, profile-constraint JSON


@dataclass
class Measured:
    point: str
    op: str
    device: str | None  # where the op's node ran: npu | cpu | split | None (not built)
    became: str | None = None
    error: str | None = None
    predicted: str | None = None  # the hypothesis' placement, for mixed families

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Calibration:
    compiler: dict[str, Any] = field(default_factory=dict)
    points: list[Measured] = field(default_factory=list)
    ops: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    unexplained: list[str] = field(default_factory=list)


def _single(op: str, shape: list[int], out_shape: list[int], inits: list[TensorProto] | None = None,
            extra_inputs: list[str] | None = None, **attrs: Any) -> onnx.ModelProto:
    node = helper.make_node(op, ["x", *(extra_inputs or [])], ["y"], name=op.lower(), **attrs)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              initializer=inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="npu_gate.calibrate")
    model.ir_version = 8
    return model


def _transpose(dims: list[int]) -> Point:
    """Relu → Transpose(last two dims) → Relu: a Transpose at the graph input is absorbed into
    the input operator by RKNN-Toolkit2 2.5.0, so the swept op sits between two others."""
    out = [dims[0], dims[1], dims[3], dims[2]]

    def build() -> onnx.ModelProto:
        nodes = [helper.make_node("Relu", ["x"], ["a"], name="before"),
                 helper.make_node("Transpose", ["a"], ["t"], name="transpose", perm=[0, 1, 3, 2]),
                 helper.make_node("Relu", ["t"], ["y"], name="after")]
        graph = helper.make_graph(nodes, "transpose", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  producer_name="npu_gate.calibrate")
        model.ir_version = 8
        return model

    return Point(f"transpose-{'x'.join(map(str, dims))}", build)


def _avgpool(pad: int, include: int) -> Point:
    return Point(f"averagepool-k3-pad{pad}-include{include}",
                 lambda: _single("AveragePool", [1, 16, 32, 32], [1, 16, 32 - 2 + 2 * pad, 32 - 2 + 2 * pad],
                                 kernel_shape=[3, 3], pads=[pad] * 4, count_include_pad=include))


def _unary(op: str) -> Point:
    return Point(f"{op.lower()}-1x16x32x32", lambda: _single(op, [1, 16, 32, 32], [1, 16, 32, 32]))


# The tiny sweep: boundaries chosen on purpose (a dim around 8192, pads x count_include_pad).
# Only what the points show is claimed: the Transpose rule is swept on axis 2 alone.
TINY: list[Family] = [
    Family("Transpose", [_transpose([1, 2, 8192, 4]), _transpose([1, 2, 8200, 4])],
           {"id": "transpose-dim2-max-8192", "input": 0, "dim": {"axis": 2, "max": 8192}}),
    Family("AveragePool", [_avgpool(1, 0), _avgpool(1, 1), _avgpool(0, 0)],
           {"id": "averagepool-pads-count-include-pad", "any_of": [
               {"attribute": "count_include_pad", "in": [1]}, {"attribute": "pads", "each": True, "max": 0}]}),
    Family("Relu", [_unary("Relu")]),
    Family("Erf", [_unary("Erf")]),
]
SWEEPS = {"tiny": TINY}


def hypothesis_placements(family: Family, models: dict[str, onnx.ModelProto]) -> dict[str, str]:
    """Where a profile holding only the family's op with its hypothesis places each point's node."""
    from npu_gate.pipeline import inspect_model
    from npu_gate.profile import load_profile

    doc = {"name": "hypothesis", "description": "calibration hypothesis", "source": "calibrate",
           "evidence": "illustrative", "ops": {family.op: {"constraints": [family.constraint] if family.constraint
                                                          else []}}}
    placed = {}
    with tempfile.TemporaryDirectory(prefix="npu-gate-calibrate-") as tmp:
        profile_path = Path(tmp) / "hypothesis.json"
        profile_path.write_text(json.dumps(doc), encoding="utf-8")
        profile = load_profile(str(profile_path))
        for point, model in models.items():
            path = Path(tmp) / f"{point}.onnx"
            path.write_bytes(model.SerializeToString())
            result = inspect_model(path, profile)
            placed[point] = next(n.placement for n in result.nodes if n.op_type == family.op)
    return placed


def infer(family: Family, measured: list[Measured], predicted: dict[str, str]) -> tuple[dict[str, Any] | None, bool]:
    """(the op's profile entry or None for "not on the NPU", explained?) from the measurements."""
    devices = {m.device for m in measured}
    cited = ", ".join(f"{m.point} ({m.device})" for m in measured)
    if devices == {NPU}:
        return {"constraints": [], "note": f"measured on the NPU at every sweep point: {cited}"}, True
    if devices <= {CPU, "split"}:
        return None, True
    if family.constraint is None:
        return None, False
    for m in measured:
        m.predicted = predicted.get(m.point)
    if all((m.device == NPU) == (m.predicted == NPU) for m in measured):
        constraint = {**family.constraint, "message": f"{family.op} on CPU here; calibrated on: {cited}"}
        return {"constraints": [constraint], "note": f"calibration sweep points: {cited}"}, True
    return None, False


def calibrate(compiler: Any, target: str, python: Path, *, sweep: list[Family] | None = None,
              options: dict[str, Any] | None = None, timeout: float | None = None) -> Calibration:
    """Probe every point of ``sweep`` and infer the profile's ops (see the module doc)."""
    from npu_gate.probe.runner import probe
    from npu_gate.profile import load_profile

    reference = load_profile("demo")  # the probe maps rows to nodes through a prediction; any profile does
    out = Calibration()
    for family in sweep if sweep is not None else TINY:
        models = {p.id: p.build() for p in family.points}
        measured = []
        with tempfile.TemporaryDirectory(prefix="npu-gate-calibrate-") as tmp:
            for point, model in models.items():
                path = Path(tmp) / f"{point}.onnx"
                path.write_bytes(model.SerializeToString())
                result = probe(path, compiler, target, python, profile=reference, options=options, timeout=timeout)
                out.compiler = result.compiler
                node = next((n for n in result.nodes if n.op_type == family.op), None)
                measured.append(Measured(point, family.op, node.runs_on if node else None,
                                         node.became if node else None, result.error))
        out.points.extend(measured)
        if any(m.device is None for m in measured):
            out.unexplained.append(f"{family.op}: the compiler did not build every point")
            continue
        mixed = len({m.device for m in measured}) > 1
        predicted = hypothesis_placements(family, models) if mixed and family.constraint else {}
        entry, explained = infer(family, measured, predicted)
        if not explained:
            out.unexplained.append(f"{family.op}: placements not explained by "
                                   f"{'its hypothesis' if family.constraint else 'op support alone'}")
            continue
        out.ops[family.op] = entry
    return out


def profile_document(cal: Calibration, name: str, record: str, extends: str | None = None,
                     base_ops: set[str] | None = None) -> dict[str, Any]:
    """The calibrated profile: measured ops only, each constraint's doc naming the record."""
    c = cal.compiler
    evidence = f"{c.get('name')} {c.get('version')} {c.get('target')}"
    ops: dict[str, Any] = {}
    for op, entry in sorted(cal.ops.items()):
        if entry is None:
            if base_ops is not None and op in base_ops:
                ops[op] = None  # measured on CPU: the base's claim is removed
            continue
        for constraint in entry["constraints"]:
            constraint["doc"] = f"{record}#{constraint['id']}"
        ops[op] = entry
    doc: dict[str, Any] = {
        "name": name,
        "description": f"Calibrated with npu-gate profile calibrate on {evidence}: single-op sweep models, "
                       f"each op's placement measured by the compiler. Only the swept ops and conditions are "
                       f"measured" + (f"; the rest is {extends}'s." if extends else "."),
        "source": f"npu-gate profile calibrate ({evidence}); sweep points and placements in {record}",
        "evidence": "measured",
    }
    if extends:
        doc["extends"] = extends
    doc["ops"] = ops
    return doc


def record_document(cal: Calibration) -> dict[str, Any]:
    return {"compiler": cal.compiler, "points": [m.to_dict() for m in cal.points],
            "ops": {op: (None if e is None else [c["id"] for c in e["constraints"]]) for op, e in cal.ops.items()},
            "unexplained": cal.unexplained}
