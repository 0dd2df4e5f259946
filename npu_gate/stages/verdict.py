"""The verdict stage: gates, waivers, and the verdict of one result."""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections import Counter
from typing import Any

from npu_gate.contract.parts import Waiver
from npu_gate.findings.gates import estimate_exceeded, estimate_unchecked, gate_finding
from npu_gate.findings.waivers import waiver_expired, waiver_unused
from npu_gate.result.types import Finding, GateCheck, GateResult, NodeResult
from npu_gate.result.verdict import derive_verdict
from npu_gate.stages import timeout
from npu_gate.stages.context import Settings
from npu_gate.stages.quantize import gate_findings
from npu_gate.stages.run import Run, Stage


class Verdict(Stage):
    """The run's ``gate-timeout`` finding if its deadline passed, then gates, waivers and the verdict."""

    name = "verdict"
    limited = False

    def run(self, run: Run) -> None:
        timeout.finish(run.deadline, run.result)
        decide(run.result, run.settings)


def decide(result: GateResult, settings: Settings) -> None:
    """Gates, waivers and the verdict, into ``result``."""
    summary = result.summary
    measured = summary.get("measured", {})  # target.probe.decide = measured, and the compiler built it
    checks = [
        ("max_cpu_nodes", settings.gates.max_cpu_nodes, measured.get("cpu_nodes", summary.get("cpu_nodes"))),
        ("max_npu_partitions", settings.gates.max_npu_partitions,
         measured.get("npu_partitions", summary.get("npu_partitions"))),
        ("max_boundary_bytes", settings.gates.max_boundary_bytes, summary.get("boundary_bytes")),
        ("max_peak_activation_bytes", settings.gates.max_peak_activation_bytes,
         summary.get("peak_activation_bytes")),
        ("max_weight_bytes", settings.gates.max_weight_bytes, summary.get("weight_bytes")),
    ]
    for name, limit, actual in checks:
        if limit is None or not result.analysed:
            result.gates.append(GateCheck(name, limit, actual, True))
            continue
        passed = actual is not None and actual <= limit
        result.gates.append(GateCheck(name, limit, actual, passed))
        if not passed:
            result.findings.append(gate_finding(result, name, limit, actual))

    result.gates.extend(GateCheck(*check) for check in gate_findings(result, settings.gates))
    result.gates.extend(estimate_gates(result, settings.gates.max_sram_bytes, settings.gates.max_estimated_ms))
    used: set[int] = set()  # every waiver matching a finding, also one an earlier waiver shadows
    if settings.waivers:  # without one, nothing to match (a 50k-node graph has 20k findings)
        nodes = {n.name: n for n in result.nodes}
        for finding in result.findings:
            node = nodes.get(finding.node) if finding.node else None
            matching = [i for i, waiver in enumerate(settings.waivers) if _matches(waiver, finding, node)]
            used.update(matching)
            live = [i for i in matching if not _expired(settings.waivers[i], settings.today)]
            if live:
                finding.waived = True
                finding.waiver_reason = settings.waivers[live[0]].reason
    for i, waiver in enumerate(settings.waivers):
        where = ", ".join(f"{k}={v}" for k, v in waiver.to_dict().items()
                          if k in ("rule", "node", "op_type", "module", "source"))
        if _expired(waiver, settings.today):
            result.findings.append(waiver_expired(i, where, waiver))
        elif i not in used:
            result.findings.append(waiver_unused(i, where, waiver, result.nodes))

    result.verdict = derive_verdict(result.findings, result.gates)
    counts = Counter(f.severity for f in result.findings if not f.waived)
    result.summary["findings"] = {"error": counts["error"], "warning": counts["warning"],
                                  "info": counts["info"], "waived": sum(f.waived for f in result.findings)}


def estimate_gates(result: GateResult, max_sram_bytes: int | None, max_estimated_ms: float | None) -> list[GateCheck]:
    """``gates.max_sram_bytes`` / ``gates.max_estimated_ms``: the compiler's own estimates (Vela's,
    ``stages.probe.estimates``), never the static bound. Each finding names the estimate's source;
    a gate whose figure is absent (no probe, a failed build, a compiler without estimates) fails
    closed with a finding saying it could not be checked."""
    probe = result.stages.get("probe") or {}
    estimates = probe.get("estimates") if probe.get("status") == "ok" else None
    checks = []
    for name, limit, key, unit in (("max_sram_bytes", max_sram_bytes, "sram_bytes", "bytes"),
                                   ("max_estimated_ms", max_estimated_ms, "estimated_ms", "ms")):
        if limit is None:
            continue
        actual = estimates.get(key) if estimates else None
        passed = actual is not None and actual <= limit
        checks.append(GateCheck(name, limit, actual, passed))
        if actual is None or estimates is None:
            result.findings.append(estimate_unchecked(name, _why_no_estimate(probe, estimates, key), limit, unit))
        elif not passed:
            result.findings.append(estimate_exceeded(name, actual, limit, unit, estimates["evidence"]))
    return checks


def _why_no_estimate(probe: dict[str, Any], estimates: dict[str, Any] | None, key: str) -> str:
    if not probe:
        return "no compiler estimate: the contract has no target.probe (a compiler that estimates it: ethos-u)"
    if probe.get("status") == "skipped":
        return f"the probe did not run: {probe.get('reason')}"
    if probe.get("status") != "ok":
        return f"the compiler did not build the model: {probe.get('reason')}"
    if estimates is None:
        return f"{probe.get('compiler', {}).get('name', 'the compiler')} gives no such estimate"
    return f"{estimates['evidence']} gives no {key}"


def _expired(waiver: Waiver, today: dt.date) -> bool:
    return waiver.expires is not None and waiver.expires < today


def _matches(waiver: Waiver, finding: Finding, node: NodeResult | None) -> bool:
    """``node``: the finding's node, for a waiver by stable key, module path or source line."""
    source = node.source if node is not None else None
    return (
        waiver.rule == finding.rule
        and (waiver.node is None or waiver.node == finding.node
             or (node is not None and waiver.node == node.stable_key))
        and (waiver.op_type is None or waiver.op_type == finding.op_type)
        and (waiver.module is None or (source is not None and source["module_path"] is not None
                                       and fnmatch.fnmatchcase(source["module_path"], waiver.module)))
        and (waiver.source is None or (source is not None and _at_line(source, waiver.source)))
    )


def _at_line(source: dict[str, Any], wanted: str) -> bool:
    file, _, line = wanted.rpartition(":")
    return (source["file"] is not None and source["line"] == int(line)
            and fnmatch.fnmatchcase(source["file"], file))
