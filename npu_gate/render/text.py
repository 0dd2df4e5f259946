"""The short terminal summary: verdict, counts, the top reasons."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from npu_gate.escape import term
from npu_gate.render.cells import metric_values, number, row_key, row_message, sources
from npu_gate.result.types import Finding, GateResult, Summary

if TYPE_CHECKING:  # `check`'s reports: `inspect` renders one result, with no report or baseline
    from npu_gate.compare.report import ModelReport

MAX_REASONS = 5
MAX_REASON_LINES = 10  # CPU nodes with the compiler's reason shown under the probe line


def _nodes(n: int) -> str:
    return f"{n} node" + ("" if n == 1 else "s")


def render(result: GateResult, headline_note: str = "") -> str:
    """``headline_note``: said after the verdict, e.g. why a FAIL still exits 0."""
    s = result.summary
    note = f" ({headline_note})" if headline_note else ""
    lines = [f"npu-gate: {term(result.name)}: {result.verdict.upper()}{note}"]
    p = result.profile
    lines.append(f"  profile {p['name']} ({p['evidence']}): static prediction, not a device result")
    if result.analysed:
        bb = s["boundary_bytes"]
        lines.append(
            f"  {_nodes(s['node_count'])}: {s['npu_nodes']} npu, {s['cpu_nodes']} cpu, "
            f"{s['folded_nodes']} folded{_eliminated(s)}; {s['npu_partitions']} npu / {s['cpu_partitions']} cpu "
            f"partitions; boundary {'unknown' if bb is None else f'{bb:,} bytes'}"
        )
    if result.analysed and "memory" in s and s["npu_partitions"]:
        lines.append(_memory_line(s))
    for fusion in result.fusions or []:  # profile patterns: what the target fuses
        nodes = ", ".join(term(n) for n in fusion["nodes"])
        lines.append(f"  fused {fusion['op']} ({fusion['pattern']}) on {fusion['device']}: {nodes}")
    if s.get("shape_chains"):
        lines.append(f"  {_nodes(s['node_count'])} before folding, {s['nodes_after_folding']} after; "
                     f"{s['shape_chains']} shape chain(s), {s['shape_chains_staying']} staying")
    comparison = result.exporter_comparison
    if comparison and comparison.get("status") == "ok":
        m = {x["metric"]: x for x in comparison["diff"]["metrics"]}

        def delta(key: str) -> str:
            return "?" if m[key]["delta"] is None else f"{m[key]['delta']:+d}"

        lines.append(f"  {term(comparison['exporter'])} exporter (compared, not gated): "
                     f"{delta('node_count')} nodes, {delta('nodes_after_folding')} after folding, "
                     f"{delta('shape_chains')} shape chains, {delta('cpu_nodes')} cpu nodes")
    elif comparison:
        lines.append(f"  {term(comparison['exporter'])} exporter (compared): export failed")
    probe = result.stages.get("probe")
    if probe is not None and probe.get("status") == "skipped":  # the run's time limit came first
        lines.append(f"  probe: skipped ({term(probe.get('reason') or '')})")
    elif probe is not None:
        basis = "decides" if "measured" in s else "compared, prediction decides"
        # term(): a result JSON read back (merge, --baseline) does not constrain these
        lines.append(f"  probe {term(probe['evidence'])}: {term(probe['probe_status'])} ({basis})")
        from npu_gate.render.probe import adapters_text, compared_partitions, estimates_text

        ps = probe.get("summary") or {}
        if ps.get("agreement_rate") is not None:
            lines.append(f"    {compared_partitions(ps, probe.get('status') == 'ok')}")
        if adapter_line := adapters_text(ps, term):
            lines.append(f"    {adapter_line}")
        cpu_reasons = [n for n in probe.get("nodes") or [] if n.get("reason") and n.get("actual") == "cpu"]
        for n in cpu_reasons[:MAX_REASON_LINES]:  # the compiler's own words
            lines.append(f"    {term(n['name'])} ({term(n['op_type'])}): cpu: {term(n['reason'])}")
        if len(cpu_reasons) > MAX_REASON_LINES:
            lines.append(f"    ... and {len(cpu_reasons) - MAX_REASON_LINES} more CPU nodes with the compiler's reason")
        if probe.get("estimates"):  # 1.9: the compiler's own estimates (Vela's), with their source
            lines.append(f"    {term(estimates_text(probe['estimates']))}")
        if probe.get("quantization"):
            from npu_gate.render.probe import quantization_text

            lines.extend(f"    {line}" for line in quantization_text(probe["quantization"], term))
    for c in result.numerics:
        status = "ok" if c["passed"] else "MISMATCH"
        note = f"; {term(c['problem'])}" if c["passed"] and c.get("problem") else ""  # failures: a finding
        if c.get("uninformative"):
            note += "; not informative: " + ({"zero": "all zero", "constant": "constant"}.get(c["uninformative"])
                                             or f"below atol, judged by scale {number(c.get('scale_rel_err'))}")
        lines.append(f"  numerics (output {term(c['output'])}): {status} (max abs err {number(c['max_abs_err'])}, "
                     f"atol {c['atol']:g}{note})")
    if result.quantization is not None:
        lines.append(_quantization_line(result))
    for r in result.rewrites:  # the checked graph is not the model as given: say so up front
        lines.append(f"  rewrite {r['name']} applied to {len(r['nodes'])} node(s): {_proof(r['verification'])}")
    if result.replacement is not None:
        lines.append(_replacement_line(result))
    for sug in result.suggestions:
        lines.append(f"  suggestion: rewrite {sug['rewrite']} at {term(sug['node'])} (verified; see the report)")
    active = [f for f in result.findings if not f.waived and f.severity in ("error", "warning")]
    reasons = _same_message(active)
    code = sources(result.nodes)
    for same in top_reasons(reasons):
        f = same[0]
        fix = f" Fix: {term(f.fix)}" if f.fix else ""
        lines.append(f"  {f.severity} {f.rule}{_where(same, code)}: {term(row_message(same))}{fix}")
    if len(reasons) > MAX_REASONS:  # the same text whatever the command: the cache replays it
        left = len(reasons) - MAX_REASONS
        findings = len(active) - sum(len(r) for r in top_reasons(reasons))
        count = f"{left} more" if left == findings else f"{left} more reasons ({findings} findings)"
        lines.append(f"  ... {count} (--markdown PATH lists them)")
    waived = sum(1 for f in result.findings if f.waived)
    if waived:
        lines.append(f"  {waived} finding(s) waived")
    return "\n".join(lines) + "\n"


def _quantization_line(result: GateResult) -> str:
    """One line: how the graph was quantized and its worst output, float vs quantized."""
    q = result.quantization
    assert q is not None
    calib = f"{q['calibration']['samples']}{' synthetic' if q['calibration']['synthetic'] else ''}"
    line = (f"  quantization {q['mode']} ({q['format']}, onnxruntime; calibration {calib} samples, "
            f"hold-out {q['holdout']['samples']})")
    placed = q["placement"]
    if placed is not None:
        line += (f"; quantized graph {placed['npu_nodes']} npu, {placed['cpu_nodes']} cpu, "
                 f"{placed['qdq_nodes']} Q/DQ with their ops")
    if not q["outputs"]:
        return line + ": not measured"
    worst = min(q["outputs"], key=lambda o: -math.inf if o.get("nan") else math.inf if o["sqnr_db"] is None
                else o["sqnr_db"])
    if worst.get("nan"):
        line += f": output {term(worst['output'])} holds NaN (no figure)"
    else:
        db = "no noise" if worst["sqnr_db"] is None else f"SQNR {worst['sqnr_db']:.1f} dB"
        line += f": output {term(worst['output'])} {db}, cosine {worst['cosine']:.4f}"
    if "metric" in q:
        line += f"; metric float vs {q['mode']}: {metric_values(q['metric'], term)}"
    return line


def _memory_line(s: Summary) -> str:
    """The static memory estimate in one line: the largest NPU peak, where, and the weights."""
    memory = s["memory"]
    peak, weights = s.get("peak_activation_bytes"), s.get("weight_bytes")
    where = ""
    if peak is not None and memory["peak_partition"] is not None:
        where = f" in partition {memory['peak_partition']}"
        if memory["peak_tensor"] is not None:
            where += f" ({term(memory['peak_tensor'])} from {term(memory['peak_producer'] or 'a graph input')})"
    dtype = f", {memory['runtime_dtype']}" if memory["runtime_dtype"] else ""
    text = (f"  memory (estimated upper bound{dtype}): peak activations "
            f"{'unknown' if peak is None else f'{peak:,} bytes'}{where}; weights "
            f"{'unknown' if weights is None else f'{weights:,} bytes'}")
    return text + (f" ({term(memory['unknown'])})" if memory["unknown"] else "")


def _proof(checks: list[dict[str, Any]]) -> str:
    """``verified, max abs err E`` or ``MISMATCH, max abs err E`` (the problems of failed
    checks that have no error figure, e.g. non-finite values, in parentheses). A rewrite's
    own error (its regions) is told apart from the outputs', which every applied rewrite
    shares: an exact rewrite must not wear an approximate one's error."""
    if not checks:
        return "not verified"
    regions = [v for v in checks if v["kind"] == "region"]
    if regions:
        own, shared = _worst(regions), _worst([v for v in checks if v["kind"] != "region"])
        err = (f", max abs err {own or 'n/a'} at its region{'s' if len(regions) > 1 else ''}"
               + (f", {shared} at the outputs" if shared is not None else ""))
    else:
        worst = _worst(checks)
        err = "" if worst is None else f", max abs err {worst}"
    if all(v["passed"] for v in checks):
        return f"verified{err}"
    problems = sorted({v["problem"] for v in checks if not v["passed"] and v["max_abs_err"] is None
                       and v.get("problem")})
    return f"MISMATCH{err}" + (f" ({'; '.join(problems)})" if problems else "")


def _worst(checks: list[dict[str, Any]]) -> str | None:
    worst = max((v["max_abs_err"] for v in checks if v["max_abs_err"] is not None), default=None)
    return None if worst is None else f"{worst:.3g}"


def _replacement_line(result: GateResult) -> str:
    r = result.replacement or {}
    model = r.get("model", {})
    name = term(model.get("path") if model.get("source") == "onnx" else model.get("factory"))
    stage = result.stages.get("replacement", {})
    if stage.get("status") == "failed":
        return f"  replacement {name}: FAILED ({term(stage.get('reason'))})"
    proof = _proof(r.get("verification", [])) if r.get("verification") else stage.get("reason", "not verified")
    line = f"  replacement {name}: {proof}"
    before, after = r.get("before"), r.get("after")
    if before and after:
        line += (f"; cpu nodes {_count(before['cpu_nodes'])} → {_count(after['cpu_nodes'])}, npu partitions "
                 f"{_count(before['npu_partitions'])} → {_count(after['npu_partitions'])} (model → replacement)")
    return line


def _count(value: int | None) -> str:
    return "unknown" if value is None else str(value)


MAX_NODES = 3  # node names on one line of findings that share a message


def _same_message(findings: list[Finding]) -> list[list[Finding]]:
    """Findings grouped by severity, rule and message, in order of first appearance: 300 CPU
    Relus are one line, not 300 that push a `gate-exceeded` error out of sight."""
    groups: dict[tuple[Any, ...], list[Finding]] = {}
    for f in findings:  # a dynamic-shape finding: by its root cause
        groups.setdefault((f.severity, f.rule, row_key(f)), []).append(f)
    return list(groups.values())


def _where(same: list[Finding], code: Mapping[str, str]) -> str:
    """``(count) at models/zoo.py:12 TinyUNet.up (Up) [node_a, node_b, node_c]``: the PyTorch source
    lines first (``code``: node name -> source), distinct ones once each, then the ONNX names."""
    nodes = [term(f.node) for f in same if f.node]
    if not nodes:
        return f" ×{len(same)}" if len(same) > 1 else ""
    shown = ", ".join(nodes[:MAX_NODES])
    more = f" and {len(nodes) - MAX_NODES} more" if len(nodes) > MAX_NODES else ""
    lines = list(dict.fromkeys(code[f.node] for f in same if f.node and f.node in code))
    at = (" at " + "; ".join(term(line) for line in lines[:MAX_NODES])
          + (f" and {len(lines) - MAX_NODES} more places" if len(lines) > MAX_NODES else "")) if lines else ""
    return (f" ×{len(same)}" if len(same) > 1 else "") + at + f" [{shown}{more}]"


def top_reasons(reasons: list[list[Finding]]) -> list[list[Finding]]:
    """At most MAX_REASONS lines (groups of findings that share a message): errors first, then
    warnings, each kind in its own order. When both kinds are there, the warnings keep at least
    one line: a `waiver-expired` warning must not be the one left out."""
    errors = [r for r in reasons if r[0].severity == "error"]
    warnings = [r for r in reasons if r[0].severity != "error"]
    shown_errors = min(len(errors), MAX_REASONS - min(len(warnings), 1))
    return errors[:shown_errors] + warnings[:MAX_REASONS - shown_errors]


def text_lines(models: Sequence[ModelReport], fail_on: str = "errors", missing: Sequence[str] = ()) -> str:
    """The terminal summary: each model's short text, plus its baseline delta. Under
    ``--fail-on regressions|never`` a verdict that does not decide the exit code says so.
    ``missing``: baseline models not in this run (``absent_line``)."""
    from npu_gate.compare.report import applied_note, exit_code

    code = exit_code(models, fail_on)
    out = []
    for m in models:
        if m.result is None:
            out.append(f"npu-gate: {term(m.label)}: COULD NOT RUN\n"
                       + "".join(f"  {term(p)}\n" for p in m.problems))
            continue
        note = applied_note(m, fail_on)
        if note and len(models) == 1:
            note += f": exit {code}"
        out.append(render(m.result, note))
        c = m.comparison
        if c is not None:
            line = (f"  baseline: {len(c.new)} new, {len(c.fixed)} fixed findings"
                    if c.found else f"  baseline: no result named {term(c.name)} (new model)")
            regressions = c.regressions
            line += f"; regressed: {'; '.join(regressions)}" if regressions else "; no regression"
            out.append(line + "\n")
    if missing:
        out.append(absent_line(missing))
    if len(models) > 1 and fail_on != "errors":
        out.append(f"npu-gate: exit {code} (--fail-on {fail_on})\n")
    return "".join(out)


def absent_line(missing: Sequence[str]) -> str:
    return f"npu-gate: in the baseline, not in this run: {', '.join(term(n) for n in missing)}\n"


def _eliminated(s: Summary) -> str:
    """", N eliminated" under a profile with the compiler's clean-up pass, else nothing."""
    return f", {s['eliminated_nodes']} eliminated" if "eliminated_nodes" in s else ""
