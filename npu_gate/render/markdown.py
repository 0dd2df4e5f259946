"""The report a reviewer reads in a pull request: verdict first, then what explains it.

Every name taken from the model goes through ``escape.md``. Measured durations live in
the final Timings section only, so everything above it is reproducible.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tabulate import tabulate

from npu_gate.render.escape import md, md_code
from npu_gate.result import GateResult

MAX_ROWS = 200  # per table; the JSON result always has everything


def render(result: GateResult) -> str:
    parts = [
        _verdict(result),
        _summary(result),
        _findings(result),
        _cpu_fallback(result),
        _partitions(result),
        _numerics(result),
        _gates(result),
        _probe(result),
        _census(result),
        _timings(result),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def _table(headers: list[str], rows: list[list[Any]], total: int | None = None) -> str:
    """A GitHub table of at most MAX_ROWS rows; ``total`` counts rows not even built."""
    shown = rows[:MAX_ROWS]
    text = tabulate(shown, headers=headers, tablefmt="github", disable_numparse=True)
    hidden = (total if total is not None else len(rows)) - len(shown)
    if hidden > 0:
        text += f"\n\n_{hidden} more rows in the JSON result._"
    return text


def _bytes(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _verdict(result: GateResult) -> str:
    icon = "✅" if result.passed else "❌"
    p = result.profile
    counts = result.summary.get("findings", {})
    tail = ", ".join(_count(counts[k], k) for k in ("error", "warning") if counts.get(k))
    if counts.get("waived"):
        tail += (", " if tail else "") + f"{counts['waived']} waived"
    lines = [
        f"## {icon} npu-gate: **{result.verdict.upper()}** · {md(result.name)}",
        "",
        f"Static prediction against profile `{p['name']}` ({p['evidence']}): "
        "not a device compatibility result.",
    ]
    if tail:
        lines += ["", f"Findings: {tail}."]
    return "\n".join(lines)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _summary(result: GateResult) -> str:
    s = result.summary
    m = result.model
    rows: list[list[Any]] = []
    if m.get("source") == "torch":
        source = f"PyTorch {md_code(m.get('factory'))} via {md(m.get('exporter'))} exporter"
    else:
        source = f"ONNX {md_code(m.get('path'))}"
    rows.append(["Model", source])
    if m.get("opset") is not None:
        rows.append(["Opset / IR", f"{m['opset']} / {m.get('ir_version')}"])
    if "node_count" in s:
        rows += [
            ["Nodes", f"{s['node_count']} ({s['npu_nodes']} npu, {s['cpu_nodes']} cpu, "
                      f"{s['folded_nodes']} folded)"],
            ["NPU partitions", str(s["npu_partitions"])],
            ["CPU partitions", str(s["cpu_partitions"])],
            ["Boundary bytes", _bytes(s["boundary_bytes"])],
            ["Dynamic inputs", ", ".join(md_code(n) for n in s["dynamic_inputs"]) or "none"],
        ]
    for stage, info in result.stages.items():
        status = info.get("status", "")
        reason = f": {md(info['reason'])}" if info.get("reason") else ""
        rows.append([f"Stage: {stage}", f"{status}{reason}"])
    return "### Summary\n\n" + _table(["", ""], rows)


def _findings(result: GateResult) -> str:
    if not result.findings:
        return "### Findings\n\nNone."
    order = {"error": 0, "warning": 1, "info": 2}
    rows = []
    ordered = sorted(result.findings, key=lambda f: (f.waived, order.get(f.severity, 3)))
    for f in ordered[:MAX_ROWS]:
        severity = f"~~{f.severity}~~ waived: {md(f.waiver_reason)}" if f.waived else f.severity
        rows.append([severity, f"`{f.rule}`", md_code(f.node) if f.node else "", md(f.message)])
    return "### Findings\n\n" + _table(["severity", "rule", "node", "message"], rows, total=len(ordered))


def _cpu_fallback(result: GateResult) -> str:
    cpu = [n for n in result.nodes if n.placement == "cpu"]
    if not cpu:
        return ""
    # Group by reason; the reason hit by the most nodes (the most costly) first.
    groups: dict[str, list[str]] = {}
    for n in cpu:
        for reason in n.reasons or ["(no reason recorded)"]:
            groups.setdefault(reason, []).append(n.name)
    rows = [[md(reason), str(len(names)), ", ".join(md_code(x) for x in names[:20])
             + (f" and {len(names) - 20} more" if len(names) > 20 else "")]
            for reason, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    return "### CPU fallback\n\n" + _table(["reason", "nodes", "which"], rows)


def _partitions(result: GateResult) -> str:
    if not result.partitions:
        return ""
    rows = []
    for p in result.partitions[:MAX_ROWS]:
        names = ", ".join(md_code(n) for n in p.nodes[:12])
        if len(p.nodes) > 12:
            names += f" and {len(p.nodes) - 12} more"
        rows.append([str(p.id), p.device, str(len(p.nodes)), names])
    text = "### Partitions\n\n" + _table(["id", "device", "nodes", "which"], rows, total=len(result.partitions))
    if result.boundaries:
        brows = [[md_code(b.tensor), _bytes(b.bytes), f"{b.source} → {b.target}"]
                 for b in result.boundaries[:MAX_ROWS]]
        text += "\n\nTensors crossing partitions (each costs a copy and a sync):\n\n"
        text += _table(["tensor", "bytes", "partitions"], brows, total=len(result.boundaries))
    return text


def _numerics(result: GateResult) -> str:
    stage = result.stages.get("numerics", {})
    if not result.numerics:
        if stage.get("status") == "skipped":
            return f"### Numerics\n\nNot run: {md(stage.get('reason', ''))}."
        return ""
    rows = []
    for c in result.numerics:
        verdict = "pass" if c["passed"] else "**fail**"
        if c.get("problem"):
            verdict += f" ({md(c['problem'])})"
        rows.append([md_code(c["output"]), _num(c["max_abs_err"]), _num(c["max_rel_err"]),
                     f"{c['atol']:g}", f"{c['rtol']:g}", str(c["samples"]), verdict])
    head = "### Numerics (onnxruntime CPU vs PyTorch eager)\n\n"
    return head + _table(["output", "max abs err", "max rel err", "atol", "rtol", "samples", "result"], rows)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _gates(result: GateResult) -> str:
    if not result.gates:
        return ""
    rows = []
    for g in result.gates:
        limit = "no limit" if g.limit is None else f"{g.limit:,}"
        actual = "unknown" if g.actual is None else f"{g.actual:,}"
        rows.append([g.name, limit, actual, "pass" if g.passed else "**fail**"])
    return "### Gates\n\n" + _table(["gate", "limit", "actual", "result"], rows)


def _census(result: GateResult) -> str:
    if not result.nodes:
        return ""
    placements: dict[str, Counter[str]] = {}
    for n in result.nodes:
        key = n.op_type if not n.domain else f"{n.domain}::{n.op_type}"
        placements.setdefault(key, Counter())[n.placement] += 1
    ops = [[md_code(op), str(count), ", ".join(f"{k} {v}" for k, v in sorted(placements[op].items()))]
           for op, count in sorted(result.ops.items(), key=lambda kv: (-kv[1], kv[0]))]
    rows = []
    for n in result.nodes[:MAX_ROWS]:  # the rest is in the JSON; don't render what is cut
        ins = "; ".join(_tensor(t) for t in n.inputs if t["name"])
        outs = "; ".join(_tensor(t) for t in n.outputs if t["name"])
        attrs = ", ".join(f"{md(k)}={md(_short(v))}" for k, v in n.attributes.items())
        rows.append([md_code(n.name), md(n.op_type), ins, outs, n.placement, attrs])
    body = _table(["op", "count", "placement"], ops) + "\n\n" + _table(
        ["node", "op", "inputs", "outputs", "placement", "attributes"], rows, total=len(result.nodes))
    return (f"<details><summary>Op census and shapes ({len(result.nodes)} nodes)</summary>\n\n"
            f"{body}\n\n</details>")


def _tensor(t: dict[str, Any]) -> str:
    shape = "?" if t["shape"] is None else "×".join("?" if d is None else str(d) for d in t["shape"])
    return f"{md_code(t['name'])} {md(shape)} {md(t['dtype'] or '?')}"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _timings(result: GateResult) -> str:
    if not result.timings:
        return ""
    rows = [[k, f"{v:.3f}"] for k, v in result.timings.items()]
    return "### Timings\n\nMeasured on the machine that ran the gate; not device latency.\n\n" + _table(
        ["stage", "seconds"], rows)


def _probe(result: GateResult) -> str:
    """target.probe: what the real compiler did, and which evidence the verdict rests on."""
    info = result.stages.get("probe")
    if info is None:
        return ""
    basis = "the compiler's measured placement" if "measured" in result.summary else "the profile's prediction"
    text = (f"### Real compiler: {md(info['evidence'])}\n\nThe verdict rests on {basis} "
            f"(`target.probe.decide`: {md(info['decide'])}). A probe measures what the compiler built; "
            "it is not a device latency result.")
    s = info.get("summary") or {}
    if not s:
        return text + f"\n\nThe compiler did not build the model: {md(info.get('reason'))}"
    rows = [
        ["NPU / CPU segments (compiler)", f"{s['npu_segments']} / {s['cpu_segments']}"],
        ["Nodes where prediction and compiler agree",
         "n/a" if s["agreement_rate"] is None else f"{s['agree']}/{s['compared']} ({s['agreement_rate']:.0%})"],
    ]
    rows += [[f"Disagreements: {md(cause)}", str(n)] for cause, n in s["disagreements_by_cause"].items()]
    return text + "\n\n" + _table(["", ""], rows)
