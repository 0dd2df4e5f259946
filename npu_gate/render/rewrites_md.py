"""Markdown sections for rewrites: applied (with proof), task metric, suggestions, review.

Only reads the result. Measured latencies stay in the final Timings section: these
sections name the timing keys, so everything here is reproducible. Device figures come
from the user's measurement file (an input), never from an estimate.
"""

from __future__ import annotations

from typing import Any

from npu_gate.escape import md, md_code
from npu_gate.render.cells import node_names, number, size, sources, table
from npu_gate.result.types import GateResult


def _figures(before: dict[str, Any], after: dict[str, Any]) -> list[list[str]]:
    labels = [("node_count", "nodes"), ("cpu_nodes", "CPU nodes"), ("npu_partitions", "NPU partitions"),
              ("cpu_partitions", "CPU partitions"), ("boundary_bytes", "boundary bytes")]
    return [[label, _figure(before.get(k), k), _figure(after.get(k), k)] for k, label in labels]


def _figure(value: int | None, key: str) -> str:
    return size(value) if key == "boundary_bytes" or value is None else f"{value:,}"


def _check_rows(checks: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for c in checks:
        where = f"output {md_code(c['where'])}" if c["kind"] == "output" else \
            f"region {md_code(c.get('node'))} → {md_code(c['where'])}"
        verdict = "pass" if c["passed"] else "**fail**"
        if c.get("problem"):
            verdict += f" ({md(c['problem'])})"
        rows.append([where, number(c["max_abs_err"]), number(c["max_rel_err"]), f"{c['atol']:g}", f"{c['rtol']:g}",
                     verdict])
    return rows


CHECK_HEADERS = ["where", "max abs err", "max rel err", "atol", "rtol", "result"]


def applied(result: GateResult) -> str:
    if not result.rewrites:
        return ""
    check = result.rewrite_check or {}
    samples = check.get("samples", {})
    sources = []
    if samples.get("seeded", 0):
        sources.append(f"{samples['seeded']} seeded samples (seed {samples.get('seed')})")
    if samples.get("file"):
        sources.append(f"{samples['file_samples']} rows of {md_code(samples['file'])}")
    intro = "The contract's `rewrites` were applied and the gate checked the rewritten graph."
    if sources:  # with no samples, the "Not verified" line below says why nothing ran
        intro += (f" Original vs rewritten with onnxruntime (CPU, graph optimizations off) on "
                  f"{' and '.join(sources)}; each replaced region is also compared at its output tensor "
                  "(layer-wise: its emitted nodes alone, on the region's inputs from the original model).")
    parts = ["### Rewrites applied", "", intro]
    if not check.get("verified", False):
        stage = result.stages.get("rewrites", {})
        why = (stage.get("reason") if stage.get("status") == "failed"
               else "no samples (numerics.samples is 0 and no samples_file)")
        parts += ["", f"**Not verified**: {md(why)}."]
    for entry in result.rewrites:
        kind = "exact" if entry["exact"] else "approximate: its error is measured below"
        before = ", ".join(f"{md_code(p['node'])} {p['placement'] or '(emitted by an earlier rewrite)'}"
                           for p in entry["placement_before"])
        after = ", ".join(f"{md_code(p['node'])} {p['placement'] or '(replaced by a later rewrite)'}"
                          for p in entry["placement_after"])
        parts += ["", f"**`{entry['name']}`** ({kind}): replaced {before}; emitted {after}."]
        if entry["verification"]:
            parts += ["", table(CHECK_HEADERS, _check_rows(entry["verification"]))]
    parts += ["", "Before and after under the profile:", "",
              table(["", "before", "after"], _figures(check.get("before", {}), check.get("after", {})))]
    return "\n".join(parts)


def replacement(result: GateResult) -> str:
    r = result.replacement
    if r is None:
        return ""
    m = r["model"]
    what = md_code(m.get("path")) if m.get("source") == "onnx" else f"PyTorch {md_code(m.get('factory'))}"
    parts = [f"### Replacement model\n\nYour replacement {what} against the model, on the same samples "
             "(outputs paired by position; no layer-wise check)."]
    stage = result.stages.get("replacement", {})
    if stage.get("reason"):
        parts += ["", f"{stage['status']}: {md(stage['reason'])}."]
    if r["verification"]:
        parts += ["", table(CHECK_HEADERS, _check_rows(r["verification"]))]
    if "before" in r:
        parts += ["", table(["", "model", "replacement"], _figures(r["before"], r["after"]))]
    return "\n".join(parts)


def metric(result: GateResult) -> str:
    m = result.metric
    if m is None:
        return ""
    head = f"### Task metric\n\n{md_code(m['callable'])}(reference, candidate, samples): "
    if "error" in m:
        return head + f"**could not be computed**: {md(m['error'])}"
    rows = [[md_code(name), number(value)] for name, value in m["values"].items()]
    text = head + ("passed." if m["passed"] else "**failed**.") + "\n\n" + table(["metric", "value"], rows)
    if m["checks"]:
        crows = [[md_code(c["name"]), number(c["value"]), "" if c["min"] is None else f"{c['min']:g}",
                  "" if c["max"] is None else f"{c['max']:g}", "pass" if c["passed"] else "**fail**"]
                 for c in m["checks"]]
        text += "\n\n" + table(["threshold", "value", "min", "max", "result"], crows)
    return text


def suggestions(result: GateResult) -> str:
    stage = result.stages.get("suggestions")
    if stage is None:
        return ""
    head = "### Suggested rewrites\n\n"
    if stage["status"] != "ok":
        return head + f"Not tried: {md(stage.get('reason', ''))}."
    intro = (f"Catalog rewrites tried on CPU-fallback nodes: {stage['tried']}. Listed only when the "
             "replaced nodes become supported, CPU nodes or partitions go down, and numerics pass.")
    if stage.get("reason"):
        intro += f" {md(stage['reason'])}."
    parts = [head + intro]
    for s in result.suggestions:
        worst = max(s["verification"], key=lambda v: v["max_abs_err"] or 0.0)
        parts += ["", f"**`{s['rewrite']}`** at {md_code(s['node'])} ({'exact' if s['exact'] else 'approximate'}; "
                      f"max abs error {number(worst['max_abs_err'])} at {md_code(worst['where'])}, atol "
                      f"{worst['atol']:g}): add `\"rewrites\": [\"{s['rewrite']}\"]` to the contract. CPU "
                      f"reference latency: Timings `{s['timing']}`.",
                  "", table(["", "now", "with the rewrite"], _figures(s["before"], s["after"]))]
    if stage.get("rejected"):
        rows = [[md_code(r["rewrite"]), md_code(r["node"]), md(r["reason"])] for r in stage["rejected"]]
        parts += ["", "Tried and not suggested:", "", table(["rewrite", "node", "why not"], rows)]
    if not result.suggestions and not stage.get("rejected"):
        parts += ["", "No catalog rewrite matches a CPU-fallback node."]
    return "\n".join(parts)


def review(result: GateResult) -> str:
    if not result.review:
        return ""
    groups: dict[tuple[str, ...], list[str]] = {}  # nodes alike in every other column share a row
    for r in result.review:
        reason = md(r["reason"])
        if r.get("constraints"):
            reason = ", ".join(md_code(c) for c in r["constraints"]) + ": " + reason
        v = r["verification"]
        if v is None:
            verification = "not verified"
        else:
            verification = (f"{number(v['max_abs_err'])} vs atol {v['atol']:g} / rtol {v['rtol']:g}: "
                            + ("pass" if v["passed"] else "**fail**"))
        lat = r["latency"]
        cpu = ("CPU reference: Timings " + ", ".join(f"`{k}`" for k in lat["cpu_reference"])
               if lat["cpu_reference"] else "CPU reference: not measured")
        dev = lat["device"]
        device = ("device: not measured" if dev is None
                  else f"device: {dev['ms']:g} ms ({dev['scope']} {md_code(dev['key'])})")
        key = (md(r["op_type"]), md(r["placement"]), reason, md(r["strategy"]), verification, f"{cpu}; {device}")
        groups.setdefault(key, []).append(r["node"])
    where = sources(result.nodes)
    rows = [[node_names(nodes, where), *key] for key, nodes in groups.items()]
    headers = ["node", "op", "placement", "failed constraint / reason", "strategy", "numerical verification",
               "latency"]
    latencies = {row[-1] for row in rows}
    shared = latencies.pop() if len(latencies) == 1 else None
    if shared is not None:  # the same latency text on every row: said once, under the table
        rows = [row[:-1] for row in rows]
        headers = headers[:-1]
    text = ("### Review\n\nEach CPU-fallback or rewritten node; nodes alike in every other column "
            "share a row.\n\n") + table(headers, rows)
    if shared is not None:
        text += f"\n\nLatency, every row: {shared}."
    if result.device_timings is not None:
        d = result.device_timings
        text += (f"\n\nDevice figures from {md_code(d['path'])}" + (f" ({md(d['source'])})" if d.get("source") else "")
                 + ": measured by the user on the board.")
    return text
