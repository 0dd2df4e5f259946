"""`npu-gate profile calibrate`: a profile measured with a real compiler over deliberate sweeps.

Two steps, kept apart so the second can be replayed without the compiler:

1. ``measure``: every point of the sweep (the sweeps/ package) is built and probed with the compiler
   plug-in (npu_gate/probe/), in one long-lived child process when the plug-in's driver has
   a batch mode (probe/batch.py; a crash or a timeout costs that point and a restart), one
   child process per point otherwise. The result is the calibration record
   (schemas/calibration.schema.json): per point the status, where the measured node ran,
   what every node became and the ops the compiler added.
2. ``infer.derive``: the profile, from the record and the sweep's hypotheses only (see
   infer.py). The checked-in built-in profile is re-derived from its checked-in record by
   the test suite, so the two cannot drift apart.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.calibrate import sweeps
from npu_gate.calibrate.qdq_sweeps import qdq
from npu_gate.calibrate.sweeps import (
    ADAPTER,
    ELIMINATE,
    LOWER,
    OP,
    PATTERN,
    SPLIT,
    TORCH_X,
    Family,
    Point,
    export_torch_point,
    quant_request,
)

if TYPE_CHECKING:
    from npu_gate.calibrate.infer import Derived
    from npu_gate.probe.base import Compiler
    from npu_gate.profile.spec import Profile
    from npu_gate.result.probe import ProbeResult

__all__ = ["ADAPTER", "ELIMINATE", "LOWER", "OP", "PATTERN", "SPLIT", "SWEEPS",
           "Family", "Point", "load_record", "measure",
           "measured_point"]

SWEEPS = {**sweeps.SWEEPS, "qdq": qdq}  # qdq: QNN's QDQ points (qdq_sweeps.py)
# 1.1: eliminate and lower points and verdicts (issue 20); 1.2: an op verdict's eliminated points (folded by
# the compiler, eliminated by the derived clean-up); 1.3: the splits sweep's points (``pieces``) and
# ``splits OP ID`` verdicts
RECORD_VERSION = "calibration-1.3"
LOG_TAIL = 8  # lines of the compiler's log kept in the record for a point that did not build


def measured_point(family: Family, point: Point, result: ProbeResult) -> dict[str, Any]:
    """What the record keeps of one probe result."""
    nodes = {n.name: [n.actual, n.runs_on, n.became] for n in result.nodes}
    out: dict[str, Any] = {"point": point.id, "family": family.id, "status": result.status}
    if point.quantize:
        out["quantize"] = point.quantize
    if family.kind in (OP, SPLIT):
        actual, runs_on, became = nodes.get(family.node_of(point), [None, None, None])
        out["device"] = runs_on or actual
        if became:
            out["became"] = became
        if family.kind == SPLIT:  # the measured node's compiler ops in table order: [op type, device]
            rows = next((n.rows for n in result.nodes if n.name == family.node_of(point)), None) or []
            by_id = {r.id: r for r in result.ops}
            out["pieces"] = [[by_id[r].op_type, by_id[r].target] for r in rows if r in by_id]
    else:  # pattern and adapter points: every node, and (patterns) the compiler ops holding each
        out["nodes"] = nodes
    if family.kind == PATTERN:
        out["rows"] = {n.name: n.rows for n in result.nodes if n.rows}
    added = [[r.op_type, r.target] for r in result.ops if not r.io and not r.sources]
    if added:
        out["added"] = added
    if result.error:
        out["error"] = result.error
        out["log_tail"] = [line for line in result.log if line.strip()][-LOG_TAIL:]
    out["seconds"] = round(sum(a.seconds for a in result.attempts), 3)
    return out


def measure(compiler: Compiler, target: str, python: Path, families: list[Family], *, batch: bool = True,
            options: dict[str, Any] | None = None, timeout: float | None = None, keep: Path | None = None,
            progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Probe every point; the record's ``compiler``, ``points`` and ``timings``."""
    from npu_gate.pipeline import probe_model
    from npu_gate.probe.batch import BatchChild
    from npu_gate.profile.spec import load_profile

    reference = load_profile("demo")  # the probe maps rows to nodes through a prediction; any profile does
    work = keep if keep is not None else Path(tempfile.mkdtemp(prefix="npu-gate-calibrate-"))
    (work / "models").mkdir(parents=True, exist_ok=True)
    use_batch = batch and compiler.batch
    child = BatchChild(compiler, python, work / "child", timeout) if use_batch else None
    points: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    start = time.perf_counter()
    try:
        for family in families:
            for point in family.points:
                path = work / "models" / f"{point.id}.onnx"
                point_options, inputs = options, None
                if point.factory is not None:  # a torch point: the driver lowers the module, tied to this export
                    export_torch_point(point.factory, work / "factories", path)
                    point_options = {**(options or {}), "factory": point.factory,
                                     "folder": str(work / "factories"), "seed": 0, "calibration": 4}
                    inputs = {"x": TORCH_X}
                else:
                    path.write_bytes(point.build().SerializeToString())
                result = probe_model(path, compiler, target, python, profile=reference, options=point_options,
                                     inputs=inputs, timeout=timeout, keep=work / "points" / point.id, child=child,
                                     quantization=quant_request(path, point.quantize) if point.quantize else None)
                info = result.compiler
                points.append(measured_point(family, point, result))
                if progress is not None:
                    progress(points[-1])
    finally:
        if child is not None:
            child.close()
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    seconds = [p["seconds"] for p in points]
    timings = {"mode": "batch" if use_batch else "process per point", "points": len(points),
               "total_s": round(time.perf_counter() - start, 1),
               "median_point_s": round(statistics.median(seconds), 3) if seconds else None,
               "processes": child.starts if child is not None else len(points)}
    return {"compiler": {k: info.get(k) for k in ("name", "version", "target")}, "points": points,
            "timings": timings}


def record_json(record: dict[str, Any]) -> str:
    """The record as JSON text: indented, one line per verdict and per point (readable, small diffs)."""
    lines = ["{"]
    for i, (key, value) in enumerate(record.items()):
        comma = "," if i < len(record) - 1 else ""
        if key in ("points", "verdicts") and value:
            items = [json.dumps(v) for v in value] if key == "points" else \
                [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()]
            open_, close = ("[", "]") if key == "points" else ("{", "}")
            body = ",\n".join(f"    {item}" for item in items)
            lines.append(f"  {json.dumps(key)}: {open_}\n{body}\n  {close}{comma}")
        else:
            text = json.dumps(value, indent=2).replace("\n", "\n  ")
            lines.append(f"  {json.dumps(key)}: {text}{comma}")
    return "\n".join(lines) + "\n}\n"


def record_document(measured: dict[str, Any], *, name: str, record_name: str, sweep: str, command: str,
                    extends: str | None, patterns_from: str | None, candidates: dict[str, Any]) -> dict[str, Any]:
    """The calibration record before derivation: what was measured, and everything derive() reads."""
    return {"schema_version": RECORD_VERSION, "name": name, "record_name": record_name, "command": command,
            "sweep": sweep, "extends": extends, "patterns_from": patterns_from, "candidates": candidates,
            "compiler": measured["compiler"], "timings": measured["timings"], "points": measured["points"]}


def candidates_from(profile: Profile | None) -> dict[str, Any]:
    """The fusion patterns and rank-adapter rule of ``profile`` that pattern and adapter points check."""
    if profile is None:
        return {"patterns": [], "rank_adapters": None}
    return {"patterns": [dict(p) for p in profile.patterns], "rank_adapters": profile.rank_adapters}


def load_record(path: Path) -> dict[str, Any]:
    """A calibration record given by the user (``--from-record``), checked against
    schemas/calibration.schema.json and its sweep; every problem one line (a RecordError)."""
    from npu_gate.calibrate.infer import unmeasured
    from npu_gate.errors import RecordError
    from npu_gate.validation import read_valid_document

    label = str(path)
    record: dict[str, Any] = read_valid_document(path, "calibration", RecordError)
    missing = unmeasured(record, SWEEPS[record["sweep"]]())
    if missing:
        raise RecordError(f"{label}: points: no measurement for {len(missing)} point(s) of the {record['sweep']} "
                          f"sweep, e.g. {missing[0]}: the record was made with another sweep")
    return record


def derive_profile(record: dict[str, Any], families: list[Family] | None = None,
                   schema: str | None = "../../schemas/profile.schema.json") -> tuple[dict[str, Any], Derived]:
    """(the profile document, the derivation with its verdicts) from a record, without the compiler."""
    from npu_gate.calibrate.infer import derive
    from npu_gate.profile.spec import load_profile

    base = load_profile(record["extends"], where="extends") if record.get("extends") else None
    derived = derive(record, families if families is not None else SWEEPS[record["sweep"]](), base)
    return profile_document(derived, record, base, schema), derived


def schema_reference(out: Path) -> str | None:
    """``$schema`` for a profile written to ``out``: the bundled schema's path relative to ``out``'s
    folder when both are inside the current folder (a checkout, as for the built-in profiles); else
    None (a path into an installed package is no use in a repository)."""
    import os

    from npu_gate.resources import schema_dir

    schema = (schema_dir() / "profile.schema.json").resolve()
    cwd, folder = Path.cwd().resolve(), out.parent.resolve()
    if not (schema.is_relative_to(cwd) and folder.is_relative_to(cwd)):
        return None
    return Path(os.path.relpath(schema, folder)).as_posix()


def profile_document(derived: Derived, record: dict[str, Any], base: Profile | None = None,
                     schema: str | None = "../../schemas/profile.schema.json") -> dict[str, Any]:
    """The profile file's document; ``schema``: its ``$schema`` path (relative to the file), or None
    to leave the key out."""
    from npu_gate.profile.spec import placement_part

    c = record["compiler"]
    evidence = f"{c.get('name')} {c.get('version')} {c.get('target')}"
    extends = record.get("extends")
    verdicts = derived.verdicts
    unexplained = sorted(op for op, v in verdicts.items() if v.get("verdict") == "unexplained")
    measured_parts = "the ops written here with their constraints"
    if derived.patterns:
        measured_parts += ", the fusion patterns"
    if derived.rank_adapters:
        measured_parts += ", the rank-adapter rule"
    if derived.eliminates is not None or derived.lowers is not None:
        measured_parts += ", the compiler's clean-up entries (eliminates, lowers) whose evidence cites the record"
    if derived.splits:
        measured_parts += ", the splits entries whose evidence cites the record"
    text = (f"Calibrated with npu-gate profile calibrate on {evidence}, {record['sweep']} sweep "
            f"({len(record['points'])} points, record {record['record_name']}): {measured_parts} are what the "
            f"compiler did at the sweep points, each citing its family in the record.")
    if extends:
        text += (f" Everything else is {extends}'s claim ({base.evidence if base else 'its evidence'}), not "
                 f"measured: ops the sweep did not cover, constraints an op note says were kept from the base")
        text += (f", and the ops whose points the constraint vocabulary could not explain "
                 f"({', '.join(unexplained)})." if unexplained else ".")
    doc: dict[str, Any] = {} if schema is None else {"$schema": schema}
    doc |= {
        "name": record["name"],
        "description": text,
        "source": f"`{record['command']}`; points, placements and per-op verdicts in {record['record_name']}",
        "evidence": "measured",
    }
    if extends:
        doc["extends"] = extends
    doc |= placement_part(derived.ops, derived.patterns, derived.rank_adapters)
    for key, entries in (("eliminates", derived.eliminates), ("lowers", derived.lowers), ("splits", derived.splits)):
        if entries is not None:
            doc[key] = entries  # replaces the base's list: its entries not measured are carried in it
    return doc
