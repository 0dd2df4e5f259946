"""The calibrated profile, derived from a calibration record without the compiler.

Per op (every op family of the sweep for that op taken together; a point the compiler
could not build, crashed or failed, counts as "not on the NPU"):

- on the NPU at every point: the op is written; the base profile's constraints for it are
  kept when every point passes them (the vendor's claim, not contradicted), else dropped;
- on the NPU at no point: ``null`` when the base lists the op, else left out;
- mixed: the hypotheses of the families that are not all on the NPU are written when,
  together, they predict every point of the op (pass exactly where the compiler ran it on
  the NPU); otherwise the op is ``unexplained`` and not written, so the base's claim stands.
  A written constraint's message (which a finding shows after what failed) says that the op
  was off the NPU wherever the constraint fails and at how many points, then the hypothesis's
  own message if it has one (what the sweep did not measure).

A candidate fusion pattern (from the profile named by ``--patterns-from``) is carried when
every point it matches was fused by the compiler (one compiler op holds the work of every
pattern node, on the NPU) and it matches at least one; a candidate ``rank_adapters`` rule
when it predicts the adapters the compiler added at every adapter point. Every written
constraint, pattern and rule cites its family in the record; the record lists each family's
points with what the compiler did.

The compiler's clean-up (profile ``eliminates`` and ``lowers``, docs/target-profiles.md): an
eliminate family's candidate entry (op and condition) is carried when, at every point, npu_gate
eliminates the measured node under it exactly where the compiler kept no op of its own for it
(folded, or fused into a neighbour: the probe's strict rule), and it eliminates at least one; a
lower family's entry when the compiler ran the node on the NPU at every point, never as an op of
its own type (as the op the entry names, or merged further, e.g. an Add into a ConvRelu).
Measured entries replace the base's entries for the same op and condition (a contradicted one
removes it); the base's other entries are kept with their own evidence.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.calibrate.sweeps import (
    ADAPTER,
    CONTEXT,
    ELIMINATE,
    LOWER,
    OP,
    PATTERN,
    SPLIT,
    Family,
    Point,
    quant_request,
)

if TYPE_CHECKING:
    from npu_gate.profile.spec import Profile
    from npu_gate.result.types import GateResult

NPU = "npu"
ELIMINATED = "eliminated"


@dataclass
class Derived:
    ops: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # the profile's ops
    patterns: list[dict[str, Any]] = field(default_factory=list)
    rank_adapters: dict[str, Any] | None = None
    # the compiler's clean-up: None when the sweep has no eliminate (lower) family (the base's stands)
    eliminates: list[dict[str, Any]] | None = None
    lowers: list[dict[str, Any]] | None = None
    splits: list[dict[str, Any]] | None = None  # None: the sweep has no split family with a rule
    verdicts: dict[str, Any] = field(default_factory=dict)  # per op / pattern / adapter rule, for the record


class _Checker:
    """npu_gate's own placement of sweep points under a trial profile (one inspect per point)."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="npu-gate-calibrate-")
        self.root = Path(self._tmp.name)
        self._n = 0

    def close(self) -> None:
        self._tmp.cleanup()

    def inspect(self, point: Point, doc: dict[str, Any]) -> GateResult:
        from npu_gate.pipeline import inspect_model
        from npu_gate.profile.spec import load_profile

        self._n += 1
        profile_path = self.root / f"trial-{self._n}.json"
        profile_path.write_text(json.dumps({"name": "calibration-trial", "description": "calibration trial",
                                            "source": "npu-gate profile calibrate", "evidence": "illustrative",
                                            **doc}), encoding="utf-8")
        model_path = self.root / f"{point.id}.onnx"
        if not model_path.exists():
            model_path.write_bytes(point.build().SerializeToString())
            if point.quantize:
                quantize_point(model_path, point.quantize)
        return inspect_model(model_path, load_profile(str(profile_path)))

    def failed(self, point: Point, op: str, node: str, constraints: list[dict[str, Any]]) -> set[str]:
        """Ids of ``constraints`` that fail on ``node`` of the point."""
        result = self.inspect(point, {"ops": {op: {"constraints": constraints}}})
        return {f.constraint for f in result.findings if f.node == node and f.constraint}


def quantize_point(path: Path, mode: str) -> None:
    """A quantized point as npu_gate places it: the float model at ``path`` replaced by its QDQ form
    (onnxruntime's quantize_static with the contract defaults, on the rows the compiler calibrated on)."""
    from npu_gate.contract.spec import QUANT_DTYPES, Quantization
    from npu_gate.quantize.run import quantize

    activations, weights = QUANT_DTYPES[mode]
    float_path = path.with_suffix(".float.onnx")
    path.rename(float_path)
    quantize(float_path, path, quant_request(float_path, mode).calibration,
             Quantization(mode=mode, activations=activations, weights=weights))


def derive(record: dict[str, Any], families: list[Family], base: Profile | None = None) -> Derived:
    """The profile's ops, patterns and rank adapters from ``record`` (see the module doc)."""
    measured = {p["point"]: p for p in record["points"]}
    missing = unmeasured(record, families)
    if missing:
        raise ValueError(f"the record has no measurement for {len(missing)} sweep point(s), e.g. {missing[0]}: "
                         f"it was made with another sweep")
    out = Derived()
    checker = _Checker()
    try:
        by_op: dict[str, list[Family]] = {}
        for family in families:
            if family.kind == OP:
                by_op.setdefault(family.op, []).append(family)
        base_ops = base.ops if base is not None else {}
        # the clean-up first: an op point the derived entries eliminate, and the compiler folded, is no placement
        cleanup = Derived()
        _derive_cleanup(cleanup, families, measured, checker, record, base)
        for op in sorted(by_op):
            entry, verdict = _derive_op(op, by_op[op], measured, base_ops, checker, record.get("record_name", ""),
                                        cleanup.eliminates or [])
            out.verdicts[op] = verdict
            if entry is not None or (verdict["verdict"] in ("cpu", "not built") and op in base_ops):
                out.ops[op] = entry
        candidates = record.get("candidates") or {}
        patterns = {p["name"]: p for p in candidates.get("patterns", [])}
        for family in (f for f in families if f.kind == PATTERN):
            pattern, verdict = _derive_pattern(family, patterns.get(family.pattern or ""), measured, checker,
                                               record.get("record_name", ""))
            out.verdicts[f"pattern {family.pattern}"] = verdict
            if pattern is not None:
                out.patterns.append(pattern)
        for family in (f for f in families if f.kind == ADAPTER):
            rule, verdict = _derive_adapters(family, candidates.get("rank_adapters"), measured, checker,
                                             record.get("record_name", ""))
            out.verdicts["rank_adapters"] = verdict
            out.rank_adapters = rule
        out.verdicts.update(cleanup.verdicts)
        out.eliminates, out.lowers = cleanup.eliminates, cleanup.lowers
        _derive_splits(out, families, measured, checker, record)
    finally:
        checker.close()
    return out


def unmeasured(record: dict[str, Any], families: list[Family]) -> list[str]:
    """Ids of the sweep points ``record`` has no measurement for (it was made with another sweep)."""
    measured = {p["point"] for p in record["points"]}
    return [p.id for f in families for p in f.points if p.id not in measured]


def on_npu(m: dict[str, Any]) -> bool:
    return m["status"] == "ok" and m.get("device") == NPU


def _outcome(m: dict[str, Any]) -> str:
    return (m.get("device") or "not built") if m["status"] == "ok" else str(m["status"])


def _cite(points: list[tuple[Point, dict[str, Any]]]) -> list[list[str]]:
    return [[p.id, _outcome(m)] for p, m in points]


def eliminated_by(point: Point, node: str, m: dict[str, Any], eliminates: list[dict[str, Any]],
                  checker: _Checker) -> bool:
    """The compiler folded the point's measured node, and the derived clean-up entries eliminate it
    (the channel-shuffle triplet's Reshapes): a point of no placement, left out of the op's test."""
    if not eliminates or m["status"] != "ok" or m.get("device") != "folded":
        return False
    result = checker.inspect(point, {"ops": {}, "eliminates": eliminates})
    return any(n.name == node and n.placement == ELIMINATED for n in result.nodes)


def _derive_op(op: str, families: list[Family], measured: dict[str, Any], base_ops: dict[str, Any], checker: _Checker,
               record_name: str, eliminates: list[dict[str, Any]] | None = None) \
        -> tuple[dict[str, Any] | None, dict[str, Any]]:
    everything = [(f, p, measured[p.id]) for f in families for p in f.points]
    gone = [p.id for f, p, m in everything if eliminated_by(p, f.node_of(p), m, eliminates or [], checker)]
    points = [(f, p, m) for f, p, m in everything if p.id not in gone]
    npu = [on_npu(m) for _, _, m in points]
    verdict: dict[str, Any] = {"families": [f.id for f in families], "points": len(everything), "on_npu": sum(npu),
                               "measured": _cite([(p, m) for _, p, m in everything])}
    if gone:
        verdict["eliminated"] = gone
    needed: list[dict[str, Any]] = []  # families of one op may share a hypothesis: each constraint once
    for f in families:
        if not all(on_npu(measured[p.id]) for p in f.points):
            needed += [c for c in f.constraints if c not in needed]
    base_entry = base_ops.get(op)
    base_constraints = [c for c in (base_entry or {}).get("constraints", []) if not c.get("unchecked")]
    # a hypothesis may restate a base constraint under its id (the vendor's rule, measured): it is tried once
    trial = [*needed, *(c for c in base_constraints if c["id"] not in {n["id"] for n in needed})]
    failed = {p.id: checker.failed(p, op, f.node_of(p), trial) if trial else set() for f, p, _ in points}
    kept = [c for c in (base_entry or {}).get("constraints", [])
            if c.get("unchecked") or not any(c["id"] in failed[p.id] for _, p, _ in points)]
    dropped = [c["id"] for c in base_constraints if c not in kept]
    families_text = ", ".join(f.id for f in families)
    if gone:
        families_text += f"; {len(gone)} more eliminated by the clean-up, as the compiler folded them: " \
                         f"{', '.join(gone)}"
    doc = f"{record_name}#{op}"
    if all(npu):
        verdict["verdict"] = NPU
        where = "at the one sweep point" if len(points) == 1 else f"at all {len(points)} sweep points"
        note = f"measured on the NPU {where} ({families_text}; {doc})"
        if kept:
            note += f"; kept from the base, not contradicted by the points (the vendor's claim): " \
                    f"{', '.join(c['id'] for c in kept)}"
        if dropped:
            note += f"; dropped from the base, contradicted by the points: {', '.join(dropped)}"
            verdict["dropped_from_base"] = dropped
        return {"constraints": kept, "note": note}, verdict
    if not any(npu):
        built = any(m["status"] == "ok" for _, _, m in points)
        verdict["verdict"] = "cpu" if built else "not built"
        return None, verdict
    ids = {c["id"] for c in needed}
    predicted = [not (failed[p.id] & ids) for _, p, _ in points]
    if not needed or predicted != npu:
        verdict["verdict"] = "unexplained"
        verdict["hypotheses"] = sorted(ids)
        verdict["contradicted_by"] = [p.id for (_, p, m), yes, want in zip(points, predicted, npu, strict=True)
                                      if yes != want]
        verdict["notes"] = [f.note for f in families if f.note]
        return None, verdict
    verdict["verdict"] = "constrained"
    verdict["constraints"] = sorted(ids)
    counted = f"in calibration {op} ran on CPU (or was not built) at every sweep point failing this constraint " \
              f"({sum(1 for y in npu if not y)} of {len(points)} points off the NPU; {doc})"
    # a hypothesis's own message says what it does not cover (what was not measured)
    written = [{**c, "message": f"{counted}; {c['message']}" if c.get("message") else counted, "doc": doc}
               for c in needed]
    note = f"calibrated on {len(points)} sweep points, {sum(npu)} on the NPU ({families_text}; {doc})"
    if kept:
        note += f"; kept from the base, not contradicted by the points (the vendor's claim): " \
                f"{', '.join(c['id'] for c in kept)}"
    if dropped:
        verdict["dropped_from_base"] = dropped
    return {"constraints": written + kept, "note": note}, verdict


def compiler_fused(m: dict[str, Any]) -> bool:
    """One compiler op holds the work of every (non-context) node of the point, on the NPU."""
    if m["status"] != "ok":
        return False
    names = [n for n in m["nodes"] if n not in CONTEXT]
    if not names or any(m["nodes"][n][1] != NPU for n in names):
        return False
    shared = set.intersection(*(set(m["rows"].get(n, [])) for n in names))
    return bool(shared)


def _derive_pattern(family: Family, candidate: dict[str, Any] | None, measured: dict[str, Any], checker: _Checker,
                    record_name: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    verdict: dict[str, Any] = {"family": family.id}
    if candidate is None:
        verdict["verdict"] = "no candidate"
        return None, verdict
    rows = []
    for point in family.points:
        m = measured[point.id]
        result = checker.inspect(point, {"ops": {"Conv": {}}, "patterns": [candidate]})
        names = [n.name for n in result.nodes if n.name not in CONTEXT]
        matched = bool(names) and all(n.fused and n.fused.get("pattern") == candidate["name"]
                                      for n in result.nodes if n.name in names)
        rows.append((point.id, matched, compiler_fused(m)))
    verdict["points"] = [[pid, "matched" if a else "not matched", "fused" if b else "not fused"] for pid, a, b in rows]
    wrong = [pid for pid, matched, fused in rows if matched and not fused]
    wider = [pid for pid, matched, fused in rows if fused and not matched]
    if wider:
        verdict["fused_but_not_matched"] = wider
    if wrong or not any(matched for _, matched, _ in rows):
        verdict["verdict"] = "contradicted" if wrong else "never matched"
        verdict["contradicted_by"] = wrong
        return None, verdict
    verdict["verdict"] = "confirmed"
    fused = [pid for pid, matched, _ in rows if matched]
    others = [pid for pid, matched, _ in rows if not matched]
    evidence = f"calibration ({record_name}#pattern-{candidate['name']}): fused by the compiler at " \
               f"{', '.join(fused)}" + (f"; not matched here: {', '.join(others)}" if others else "")
    return {**candidate, "evidence": evidence}, verdict


def _derive_adapters(family: Family, candidate: dict[str, Any] | None, measured: dict[str, Any], checker: _Checker,
                     record_name: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    verdict: dict[str, Any] = {"family": family.id}
    if candidate is None:
        verdict["verdict"] = "no candidate"
        return None, verdict
    op = candidate.get("op", "Reshape")
    rows = []
    for point in family.points:
        m = measured[point.id]
        result = checker.inspect(point, {"ops": {}, "rank_adapters": candidate})
        predicted = sorted(a["device"] for a in result.rank_adapters or [])
        actual = sorted(t for o, t in m.get("added", []) if o == op) if m["status"] == "ok" else None
        rows.append((point.id, predicted, actual))
    verdict["points"] = [[pid, {"predicted": p, "measured": a}] for pid, p, a in rows]
    wrong = [pid for pid, p, a in rows if p != a]
    if wrong:
        verdict["verdict"] = "contradicted"
        verdict["contradicted_by"] = wrong
        return None, verdict
    verdict["verdict"] = "confirmed"
    evidence = f"calibration ({record_name}#rank_adapters): the adapters the compiler added at " \
               f"{len(rows)} sweep points ({', '.join(pid for pid, _, _ in rows)}) are the ones this rule predicts"
    return {**candidate, "evidence": evidence}, verdict


def compiler_kept_no_op(placement: list[Any], op: str) -> bool:
    """The probe's strict rule for a node predicted eliminated (ProbeNode.agrees): the compiler
    folded it, fused it into a neighbour, or it became only ops of other types.
    ``placement``: [actual, runs_on, became]."""
    actual, _, became = placement
    return actual in ("folded", "fused") or (became is not None and not own_op(op, str(became)))


def own_op(op: str, became: str) -> bool:
    """A compiler op named in ``became`` ("ConvRelu", "Conv+AddRelu") is ``op``'s own: its name
    starts with it (``BatchNormalizationRelu`` is the BatchNormalization with a Relu fused in)."""
    return any(part.startswith(op) for part in became.split("+"))


def _compiler_text(record: dict[str, Any]) -> str:
    c = record["compiler"]
    return " ".join(str(c.get(k)) for k in ("name", "version", "target") if c.get(k))


def _derive_cleanup(out: Derived, families: list[Family], measured: dict[str, Any], checker: _Checker,
                    record: dict[str, Any], base: Profile | None) -> None:
    record_name = record.get("record_name", "")
    for kind, attr, key in ((ELIMINATE, "eliminates", "when"), (LOWER, "lowers", "to")):
        chosen = [f for f in families if f.kind == kind and f.rule is not None]
        if not chosen:
            continue
        entries: list[dict[str, Any]] = []
        covered: set[tuple[str, str]] = set()
        for family in chosen:
            rule = family.rule
            assert rule is not None
            derive_one = _derive_elimination if kind == ELIMINATE else _derive_lowering
            entry, verdict = derive_one(family, rule, measured, checker, record_name, _compiler_text(record),
                                        [f.rule for f in chosen if f.rule is not None])
            out.verdicts[f"{attr} {rule['op']} {rule[key]}"] = verdict
            covered.add((rule["op"], rule[key]))
            if entry is not None:
                entries.append(entry)
        base_entries = (getattr(base, attr) if base is not None else None) or []
        kept = [e for e in base_entries if (e["op"], e[key]) not in covered]
        # nothing measured nor inherited: left out (an empty list only to remove the base's)
        setattr(out, attr, entries + kept if entries or base_entries else None)


def _cleanup_evidence(compiler: str, record_name: str, family: Family, yes: list[str], no: list[str],
                      did: str, did_not: str) -> str:
    text = f"measured by {compiler}: calibration {record_name}#{family.id}, {did} at {', '.join(yes)}"
    return text + (f"; {did_not} at {', '.join(no)}" if no else "")


def _derive_elimination(family: Family, rule: dict[str, Any], measured: dict[str, Any], checker: _Checker,
                        record_name: str, compiler: str, others: list[dict[str, Any]]) \
        -> tuple[dict[str, Any] | None, dict[str, Any]]:
    # A condition may look at neighbours under the same condition (reshape-chain: a Flatten read
    # by a Reshape of the chain) or at nodes removed always (into-conv: Identity links between the
    # Conv and the node): the trial has the other families' entries of the condition and of
    # ``always`` too.
    trial = [rule, *(o for o in others if o["when"] in (rule["when"], "always") and o != rule)]
    rows = []
    for point in family.points:
        m = measured[point.id]
        name = family.node_of(point)
        result = checker.inspect(point, {"ops": {}, "eliminates": [{**r, "evidence": "calibration trial"}
                                                                   for r in trial]})
        predicted = any(n.name == name and n.placement == ELIMINATED for n in result.nodes)
        placement = (m.get("nodes") or {}).get(name) if m["status"] == "ok" else None
        actual = None if placement is None or placement[0] is None else compiler_kept_no_op(placement, rule["op"])
        rows.append((point.id, predicted, actual))
    verdict: dict[str, Any] = {
        "family": family.id,
        "points": [[pid, ELIMINATED if p else "kept", "not built" if a is None else ELIMINATED if a else "kept"]
                   for pid, p, a in rows]}
    wrong = [pid for pid, p, a in rows if a is None or p != a]
    if wrong or not any(p for _, p, _ in rows):
        verdict["verdict"] = "contradicted" if wrong else "never eliminated"
        verdict["contradicted_by"] = wrong
        return None, verdict
    verdict["verdict"] = "confirmed"
    evidence = _cleanup_evidence(compiler, record_name, family, [pid for pid, p, _ in rows if p],
                                 [pid for pid, p, _ in rows if not p], "eliminated",
                                 "kept where the condition does not hold")
    return {**rule, "evidence": evidence, "doc": f"{record_name}#{family.id}"}, verdict


def _derive_lowering(family: Family, rule: dict[str, Any], measured: dict[str, Any], _checker: _Checker,
                     record_name: str, compiler: str, _others: list[dict[str, Any]]) \
        -> tuple[dict[str, Any] | None, dict[str, Any]]:
    rows = []
    for point in family.points:
        m = measured[point.id]
        placement = (m.get("nodes") or {}).get(family.node_of(point)) if m["status"] == "ok" else None
        # on the NPU, and not as an op of its own type (the Add may itself be merged into a ConvRelu)
        lowered = placement is not None and placement[1] == NPU and placement[2] is not None \
            and not own_op(rule["op"], str(placement[2]))
        rows.append((point.id, lowered))
    verdict: dict[str, Any] = {"family": family.id,
                               "points": [[pid, "lowered" if yes else "not lowered"] for pid, yes in rows]}
    wrong = [pid for pid, yes in rows if not yes]
    if wrong:
        verdict["verdict"] = "contradicted"
        verdict["contradicted_by"] = wrong
        return None, verdict
    verdict["verdict"] = "confirmed"
    evidence = _cleanup_evidence(compiler, record_name, family, [pid for pid, _ in rows], [],
                                 f"run on the NPU as other ops than {rule['op']}", "")
    return {**rule, "evidence": evidence, "doc": f"{record_name}#{family.id}"}, verdict


def _derive_splits(out: Derived, families: list[Family], measured: dict[str, Any], checker: _Checker,
                   record: dict[str, Any]) -> None:
    """``splits`` entries of the split families with a candidate ``rule``: written when npu_gate's
    placement under the entry splits the node exactly where the compiler ran it on several devices
    (at one point at least), with evidence citing the points."""
    chosen = [f for f in families if f.kind == SPLIT and f.rule is not None]
    if not chosen:
        return
    record_name, compiler = record.get("record_name", ""), _compiler_text(record)
    entries = []
    for family in chosen:
        rule = family.rule
        assert rule is not None
        rows = []
        for point in family.points:
            m = measured[point.id]
            result = checker.inspect(point, {"ops": {rule["op"]: {"constraints": []}},
                                             "splits": [{**rule, "evidence": "calibration trial"}]})
            node = next((n for n in result.nodes if n.name == family.node_of(point)), None)
            predicted = node is not None and node.split is not None
            actual = None if m["status"] != "ok" else len({d for _, d in m.get("pieces") or []}) > 1
            rows.append((point.id, predicted, actual))
        verdict: dict[str, Any] = {
            "family": family.id,
            "points": [[pid, "split" if p else "whole", "not built" if a is None else "split" if a else "whole"]
                       for pid, p, a in rows]}
        wrong = [pid for pid, p, a in rows if a is None or p != a]
        out.verdicts[f"splits {rule['op']} {rule['id']}"] = verdict
        if wrong or not any(p for _, p, _ in rows):
            verdict["verdict"] = "contradicted" if wrong else "never split"
            verdict["contradicted_by"] = wrong
            continue
        verdict["verdict"] = "confirmed"
        evidence = _cleanup_evidence(compiler, record_name, family, [pid for pid, p, _ in rows if p],
                                     [pid for pid, p, _ in rows if not p], "split", "whole")
        entries.append({**rule, "evidence": evidence, "doc": f"{record_name}#{family.id}"})
    out.splits = entries
