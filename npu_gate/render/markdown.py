"""The report a reviewer reads in a pull request: verdict first, then what explains it.

Every name taken from the model goes through ``escape.md``. Measured durations live in
the final Timings section only, so everything above it is reproducible.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from typing import Any

from npu_gate.escape import md, md_code
from npu_gate.render import mermaid, rewrites_md
from npu_gate.render.cells import (
    MAX_ROWS,
    metric_values,
    node_names,
    number,
    row_key,
    row_message,
    short,
    size,
    sources,
    table,
    tensor,
)
from npu_gate.result.types import ESTIMATE_LAID_OUT, GateResult, NodeResult, Summary

FOLD_PARTITIONS = 20  # more partitions than this: their tables are folded away


def render(result: GateResult, bundle_dir: str | None = "") -> str:
    """``bundle_dir``: the evidence bundle's folder relative to the report's folder (POSIX), put
    before links into the bundle; "" for the bundle's own report.md; None when the bundle's
    location is not known (a result read back from a copied JSON): bundle paths are text."""
    parts = [
        _verdict(result),
        _summary(result),
        _findings(result),
        _cpu_fallback(result),
        _shape_chains(result),
        _dynamic_dims(result),
        _partitions(result),
        _memory(result),
        _fusions(result),
        _numerics(result),
        _quantization(result),
        _exporter_comparison(result),
        _gates(result),
        rewrites_md.applied(result),
        rewrites_md.replacement(result),
        rewrites_md.metric(result),
        rewrites_md.suggestions(result),
        rewrites_md.review(result),
        _probe(result),
        _census(result),
        _minimal(result, bundle_dir),
        _timings(result),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def _verdict(result: GateResult) -> str:
    icon = "✅" if result.passed else "❌"
    p = result.profile
    counts = result.summary.get("findings", {})
    tail = ", ".join(_count(counts[k], k) + _rules(result, k) for k in ("error", "warning") if counts.get(k))
    if counts.get("waived"):
        tail += (", " if tail else "") + f"{counts['waived']} waived"
    lines = [
        f"## {icon} npu-gate: **{result.verdict.upper()}** · {md(result.name)}",
        "",
        f"Static prediction against profile `{p['name']}` ({p['evidence']}): "
        "not a device compatibility result.",
    ]
    if result.rewrites:  # the verdict is not about the exported graph as it is
        names = ", ".join(f"`{r['name']}`" for r in result.rewrites)
        lines += ["", f"Gated after the contract's rewrites ({names}): see Rewrites applied."]
    if tail:
        lines += ["", f"Findings: {tail}."]
    return "\n".join(lines)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _rules(result: GateResult, severity: str) -> str:
    """The rules behind the active findings of ``severity``, most frequent first: the why at a glance."""
    rules = Counter(f.rule for f in result.findings if f.severity == severity and not f.waived)
    if len(rules) == 1:
        return f" (`{next(iter(rules))}`)"
    return " (" + ", ".join(f"{n} `{rule}`" for rule, n in rules.most_common()) + ")" if rules else ""


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
    if result.analysed:
        rows += [
            ["Nodes", f"{s['node_count']} ({s['npu_nodes']} npu, {s['cpu_nodes']} cpu, "
                      f"{s['folded_nodes']} folded"
                      f"{_eliminated(s)})"],
            *([["Nodes after folding", str(s["nodes_after_folding"])]]
              if "nodes_after_folding" in s else []),
            ["NPU partitions", str(s["npu_partitions"])],
            ["CPU partitions", str(s["cpu_partitions"])],
            ["Boundary bytes", size(s["boundary_bytes"])],
            ["Dynamic inputs", ", ".join(md_code(n) for n in s["dynamic_inputs"]) or "none"],
        ]
    for stage, info in result.stages.items():
        status = info.get("status", "")
        reason = f": {md(info['reason'])}" if info.get("reason") else ""
        if stage == "numerics" and result.numerics:  # "ok" says it ran, not that outputs matched
            failed = sum(1 for c in result.numerics if not c["passed"])
            reason += (f", **{failed} of {len(result.numerics)} outputs outside tolerance**" if failed
                       else f", {_count(len(result.numerics), 'output')} within tolerance")
        rows.append([f"Stage: {stage}", f"{status}{reason}"])
    return "### Summary\n\n" + table(rows[0], rows[1:])  # the first row heads it: no empty header row


def _findings(result: GateResult) -> str:
    if not result.findings:
        return "### Findings\n\nNone."
    order = {"error": 0, "warning": 1, "info": 2}
    ordered = sorted(result.findings, key=lambda f: (f.waived, order.get(f.severity, 3)))
    groups: dict[tuple[Any, ...], list[Any]] = {}  # the same message at many nodes is one row
    for f in ordered:
        groups.setdefault((f.waived, f.waiver_reason, f.severity, f.rule, row_key(f), f.doc), []).append(f)
    rows = []
    where = sources(result.nodes)
    for same in list(groups.values())[:MAX_ROWS]:
        f = same[0]
        severity = f"~~{f.severity}~~ waived: {md(f.waiver_reason)}" if f.waived else f.severity
        message = md(row_message(same))
        if f.fix:
            message += f" **Fix:** {md(f.fix)}"
        if f.doc and f.doc.startswith(("https://", "http://")):
            message += f" ([doc]({_url(f.doc)}))"
        rows.append([severity, f"`{f.rule}`", node_names([g.node for g in same], where), message])
    return "### Findings\n\n" + table(["severity", "rule", "node", "message"], rows, total=len(groups))


def _cpu_fallback(result: GateResult) -> str:
    """CPU-fallback nodes grouped by reason (unsupported op, constraint id, profile limit),
    each with its nodes and the actual values seen; the most costly reason first: the most
    bytes crossing partitions at its nodes, then the most nodes."""
    cpu = [n for n in result.nodes if n.placement == "cpu"]
    if not cpu:
        return ""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    explained: set[str] = set()
    for f in result.findings:
        if f.node is None or f.rule not in ("unsupported-op", "op-constraint", "profile-limit"):
            continue
        if f.rule == "unsupported-op":
            key, label = (f.rule, f.op_type or ""), f"op {md_code(f.op_type)} not in the profile"
        else:
            kind = "limit" if f.rule == "profile-limit" else md_code(f.op_type)
            key = (f.rule, f"{f.op_type if f.rule == 'op-constraint' else ''}:{f.constraint}")
            label = f"{kind} {md_code(f.constraint)}: allowed {md(short(_value(f.allowed)))}"
            if f.fix:
                label += f". **Fix:** {md(f.fix)}"
            if f.doc and f.doc.startswith(("https://", "http://")):
                label += f" ([doc]({_url(f.doc)}))"
        group = groups.setdefault(key, {"label": label, "nodes": {}})
        if f.rule != "unsupported-op":
            group["nodes"].setdefault(f.node, []).append(_value(f.actual))
        else:
            group["nodes"].setdefault(f.node, [])
        explained.add(f.node)
    for n in cpu:  # CPU for another reason (a control-flow node whose body runs on CPU)
        if n.name not in explained:
            for reason in n.reasons or ["(no reason recorded)"]:
                group = groups.setdefault(("other", reason), {"label": md(reason), "nodes": {}})
                group["nodes"][n.name] = []
    cost = _boundary_bytes_by_node(result)
    where = sources(result.nodes)
    rows = []
    for group in groups.values():
        names = list(group["nodes"])
        crossing: dict[str, int] = {}
        for name in names:
            crossing.update(cost.get(name, {}))
        total = sum(crossing.values())
        shown = [md_code(x) + (f": {md(short(', '.join(v)))}" if v else "")
                 for x, v in group["nodes"].items()]
        which = "; ".join(shown[:20]) + (f" and {len(shown) - 20} more" if len(shown) > 20 else "")
        lines = list(dict.fromkeys(where[x] for x in names if x in where))  # its distinct source lines
        if lines:
            which = "; ".join(md(line) for line in lines[:10]) + (
                f" and {len(lines) - 10} more places" if len(lines) > 10 else "") + " — " + which
        rows.append((total, len(names), group["label"], which))
    rows.sort(key=lambda r: (-r[0], -r[1], r[2]))
    text = table(["reason", "nodes", "which (actual value)", "boundary bytes"],
                  [[label, str(n), which, size(total)] for total, n, label, which in rows])
    return ("### CPU fallback\n\nGrouped by reason, most costly first (bytes crossing partitions "
            "at these nodes, then node count).\n\n" + text)


def _value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _url(url: str) -> str:
    from urllib.parse import quote

    return quote(url, safe=":/?#&=%.-_~+,;@")


def _boundary_bytes_by_node(result: GateResult) -> dict[str, dict[str, int]]:
    """Node name -> {tensor: bytes} of the partition-crossing tensors it reads or writes."""
    crossing = {b.tensor: b.bytes or 0 for b in result.boundaries}
    out: dict[str, dict[str, int]] = {}
    for n in result.nodes:
        for t in (*n.inputs, *n.outputs):
            if t["name"] in crossing:
                out.setdefault(n.name, {})[t["name"]] = crossing[t["name"]]
    return out


def _partitions(result: GateResult) -> str:
    if not result.partitions:
        return ""
    rows = []
    for p in result.partitions[:MAX_ROWS]:
        names = ", ".join(md_code(n) for n in p.nodes[:12])
        if len(p.nodes) > 12:
            names += f" and {len(p.nodes) - 12} more"
        rows.append([str(p.id), p.device, str(len(p.nodes)), names])
    text = table(["id", "device", "nodes", "which"], rows, total=len(result.partitions))
    if result.boundaries:
        brows = [[md_code(b.tensor), size(b.bytes), f"{b.source} → {b.target}"]
                 for b in result.boundaries[:MAX_ROWS]]
        text += "\n\nTensors crossing partitions (each costs a copy and a sync):\n\n"
        text += table(["tensor", "bytes", "partitions"], brows, total=len(result.boundaries))
    picture = mermaid.partition_map(result)
    picture = ("<details><summary>Partition map (execution order; bytes crossing on the edges)"
               f"</summary>\n\n{picture}\n\n</details>\n\n") if picture else ""
    if len(result.partitions) <= FOLD_PARTITIONS:
        return "### Partitions\n\n" + picture + text
    devices = Counter(p.device for p in result.partitions)  # too long to read past: folded, like the census
    count = ", ".join(f"{n} {device}" for device, n in sorted(devices.items()))
    return (picture + f"<details><summary>Partitions ({count}; {_count(len(result.boundaries), 'tensor')} "
            f"crossing them)</summary>\n\n{text}\n\n</details>")


def _memory(result: GateResult) -> str:
    """Each NPU partition's static memory estimate: weights, peak, the tensor at the peak."""
    estimated = [p for p in result.partitions if p.estimated]
    if not estimated:
        return ""
    memory = result.summary.get("memory")
    dtype = memory["runtime_dtype"] if memory else None
    rows = []
    for p in estimated[:MAX_ROWS]:
        first = p.at_peak[0] if p.at_peak else None
        at = "" if first is None else (f"{md_code(first['tensor'])} ({first['bytes']:,} B) from "
                                       f"{md_code(first['producer']) if first['producer'] else 'a graph input'}")
        if p.memory_unknown:
            at = f"unknown: {md(p.memory_unknown)}"
        rows.append([str(p.id), size(p.weight_bytes), size(p.peak_activation_bytes), at])
    what = ("Estimated upper bound on tensor bytes in the profile's memory layout, not the compiler's plan"
            if memory and memory["estimate"] == ESTIMATE_LAID_OUT else
            "Estimated upper bound on unpadded tensor bytes, not the compiler's plan (its native layouts may pad)")
    text = (f"{what}: each partition run in topological order, every "
            f"tensor live from its producer to its last consumer, no in-place reuse, no tiling; float "
            f"tensors in {md_code(dtype) if dtype else 'the model’s dtypes'}.\n\n")
    text += table(["partition", "weights", "peak activations", "largest tensor at the peak"], rows,
                  total=len(estimated))
    if len(estimated) <= FOLD_PARTITIONS:
        return "### Memory per NPU partition\n\n" + text
    return f"<details><summary>Memory per NPU partition ({len(estimated)})</summary>\n\n{text}\n\n</details>"


def _numerics(result: GateResult) -> str:
    stage = result.stages.get("numerics", {})
    if not result.numerics:
        if stage.get("status") == "skipped":
            return f"### Numerics\n\nNot run: {md(stage.get('reason', ''))}."
        return ""
    rows = []
    outputs = {o["name"]: (i, o) for i, o in enumerate(result.outputs)}
    for c in result.numerics:
        verdict = "pass" if c["passed"] else "**fail**"
        if c.get("problem"):
            verdict += f" ({md(c['problem'])})"
        if c.get("uninformative"):
            low, high = c.get("reference_range") or (None, None)
            verdict += (" (not informative: " + {"zero": "all zero", "constant": "constant"}.get(
                c["uninformative"], f"values within [{number(low)}, {number(high)}], below atol; error relative "
                                    f"to the output's scale {number(c.get('scale_rel_err'))}") + ")")
        name = md_code(c["output"])
        if c["output"] in outputs:  # exporters name outputs `13`, `400`: the position and shape say which
            i, o = outputs[c["output"]]
            dims = "×".join("?" if d is None else str(d) for d in o["shape"]) if o["shape"] is not None else "?"
            name += f" (output {i}, {md(dims)})"
        rows.append([name, number(c["max_abs_err"]), number(c["max_rel_err"]),
                     f"{c['atol']:g}", f"{c['rtol']:g}", str(c["samples"]), verdict])
    head = "### Numerics (onnxruntime CPU vs PyTorch eager)\n\n"
    return head + table(["output", "max abs err", "max rel err", "atol", "rtol", "samples", "result"], rows)


SYNTHETIC = " drawn from the inputs' ranges (synthetic data, not the deployment distribution)"


def _db(value: float | None) -> str:
    return "no noise" if value is None else f"{value:.2f}"


def _quantization(result: GateResult) -> str:
    q = result.quantization
    stage = result.stages.get("quantization")
    if q is None:
        if stage is not None and stage.get("status") == "skipped":
            return f"### Quantization\n\nNot run: {md(stage.get('reason', ''))}."
        return ""
    synthetic = q["calibration"]["synthetic"]
    text = (f"### Quantization ({q['mode']}, {q['format']})\n\n{q['evidence']}. Activations {q['activations']}, "
            f"weights {q['weights']} ({'per channel' if q['per_channel'] else 'per tensor'}), calibration "
            f"{q['method']} on {q['calibration']['samples']} samples"
            f"{SYNTHETIC if synthetic else ''}; "
            f"accuracy on {q['holdout']['samples']} hold-out samples, never calibration samples"
            f"{' (synthetic)' if q['holdout']['synthetic'] else ''}.")
    if stage is not None and stage.get("status") == "failed":
        return text + f"\n\nFailed: {md(stage.get('reason', ''))}."
    placed = q["placement"]
    if placed is not None:
        text += (f"\n\nThe quantized graph, {placed['evidence']}: {placed['npu_nodes']} NPU and {placed['cpu_nodes']} "
                 f"CPU nodes in {placed['npu_partitions']} NPU partition(s); its {placed['qdq_nodes']} Q/DQ nodes are "
                 "placed with their ops (QDQ units), not counted as nodes.")
    rows = [[md_code(o["output"]), "NaN", "NaN", "NaN (the output holds NaN)"] if o.get("nan") else
            [md_code(o["output"]), number(o["max_abs_err"]), f"{o['cosine']:.6f}", _db(o["sqnr_db"])]
            for o in q["outputs"]]
    text += "\n\n" + table(["output", "max abs err", "cosine", "SQNR dB"], rows)
    if "metric" in q:
        text += (f"\n\nTask metric {md_code(q['metric']['callable'])} ({md(q['metric']['evidence'])}): "
                 f"{metric_values(q['metric'], md)}.")
    if q["worst_layers"]:
        layers = []
        for layer in q["worst_layers"]:
            source = layer.get("source") or {}
            where = f"{source['file']}:{source['line']}" if source.get("file") and source.get("line") else ""
            layers.append([md_code(layer["node"]) if layer["node"] else "(graph input)", md(layer["op_type"] or ""),
                           md_code(layer["tensor"]), _db(layer["sqnr_db"]), _db(layer["qdq_sqnr_db"]), md(where)])
        text += ("\n\nWorst layers (onnxruntime qdq_loss_debug: float vs quantized activation; own Q/DQ: "
                 "the error of that tensor's own quantization):\n\n"
                 + table(["node", "op", "tensor", "SQNR dB", "own Q/DQ dB", "source"], layers))
    return text


def _quant_figure(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.4g}"


def _figure(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _gates(result: GateResult) -> str:
    if not result.gates:
        return ""
    # a gate-exceeded finding's subject is its gate's name (stages/verdict.py)
    waived = {f.subject for f in result.findings if f.rule == "gate-exceeded" and f.waived}
    rows = []
    for g in result.gates:
        figure = size if g.name.endswith("_bytes") else _quant_figure if g.name.startswith("min_output_") else _figure
        limit = "no limit" if g.limit is None else figure(g.limit)
        actual = figure(g.actual)
        outcome = "pass" if g.passed else "~~fail~~ waived" if g.name in waived else "**fail**"
        rows.append([g.name, limit, actual, outcome])
    return "### Gates\n\n" + table(["gate", "limit", "actual", "result"], rows)


def _placement_cell(n: NodeResult) -> str:
    """The node's placement; a split node's pieces with their devices (profile ``splits``)."""
    if n.split is None:
        return n.placement
    pieces = " → ".join(f"{md(p['op'])} {md(p['device'])}" for p in n.split["pieces"])
    return f"{n.placement} (split: {pieces})"


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
        ins = "; ".join(tensor(t) for t in n.inputs if t["name"])
        outs = "; ".join(tensor(t) for t in n.outputs if t["name"])
        attrs = ", ".join(f"{md(k)}={md(short(v))}" for k, v in n.attributes.items())
        rows.append([md_code(n.name), md(n.op_type), ins, outs, _placement_cell(n), attrs])
    body = table(["op", "count", "placement"], ops) + "\n\n" + table(
        ["node", "op", "inputs", "outputs", "placement", "attributes"], rows, total=len(result.nodes))
    return (f"<details><summary>Op census and shapes ({_count(len(result.nodes), 'node')})</summary>\n\n"
            f"{body}\n\n</details>")


def _minimal(result: GateResult, bundle_dir: str | None = "") -> str:
    """Evidence bundle runs: each distinct failure linked to its minimal model (its path is
    relative to the bundle folder, where report.md sits; ``bundle_dir`` leads there). Without
    ``bundle_dir`` (None) a link could not resolve: the path is named as text."""
    if result.minimal is None:
        return ""
    models = result.minimal["models"]
    head = "### Minimal failing models\n\n"
    if not models:
        return head + "None: no failure could be blamed on a node."
    rows = []
    for m in models:
        what = " ".join(x for x in (f"`{m['rule']}`", md_code(m["op_type"]) if m["op_type"] else "",
                                    md_code(m["constraint"]) if m["constraint"] else "") if x)
        if bundle_dir is None:
            model = md_code(m["path"])
        else:
            path = posixpath.join(bundle_dir, m["path"])  # a sanitised relative file name, see evidence/minimal.py
            model = f"[{md(path)}]({_url(path)})"
        verified = "yes" if m["verified"] else "**no**: re-check found " + (
            ", ".join(f"`{r}`" for r in m.get("recheck_rules", [])) or "nothing")
        rows.append([what, md_code(m["node"]), str(m["occurrences"]), model, str(m["nodes"]), verified])
    where = ""
    if bundle_dir is None:  # no link could resolve from where this report is
        where = " Model paths are inside the model's evidence bundle (its `--out`/`--bundle` folder)."
    text = head + (
        "Each failure cut down to its node, producers turned into graph inputs with their "
        "inferred shapes, constants kept; verified means re-analysing that file gives the same "
        f"finding.{where}\n\n"
    ) + table(["failure", "first node", "seen", "model", "nodes", "verified"], rows)
    left = result.minimal["distinct_failures"] - len(models)
    if left > 0:
        text += f"\n\n_{left} more distinct failures without a minimal model (limit reached)._"
    return text


def _timings(result: GateResult) -> str:
    if not result.timings:
        return ""
    rows = [[k, f"{v:.3f}" if not k.startswith("cpu_reference") else f"{v:.6f}"] for k, v in result.timings.items()]
    note = "Measured on the machine that ran the gate; not device latency."
    if any(k.startswith("cpu_reference") for k in result.timings):
        note += (" `cpu_reference_*`: median of repeated onnxruntime CPU runs of the whole model on one "
                 "sample: CPU reference, not device.")
    return f"### Timings\n\n{note}\n\n" + table(["stage", "seconds"], rows)


def _shape_chains(result: GateResult) -> str:
    """Shape computations (Shape/Size → ... → a shape input): which fold, which stay, why."""
    if not result.shape_chains:
        return ""
    rows = []
    for c in result.shape_chains:
        consumer = md_code(c["consumer"]) + (f" in {md_code(c['graph'])}" if c["graph"] else "")
        status = "folds" if c["status"] == "folds" else "**stays**"
        if c["status"] == "stays":
            why = "; ".join(_blocking(b) for b in c["blocking"])
        elif c["fixed_by_contract"]:
            why = "the contract fixes " + ", ".join(md_code(d) for d in c["fixed_by_contract"])
        else:
            why = "static in the model"
        nodes = ", ".join(md_code(n) for n in c["nodes"][:12])
        if len(c["nodes"]) > 12:
            nodes += f" and {len(c['nodes']) - 12} more"
        slots = f"{md(c['consumer_op'])} {md(', '.join(c['slots']))}"
        rows.append([consumer, slots, status, why, nodes])
    staying = sum(1 for c in result.shape_chains if c["status"] == "stays")
    head = (f"### Shape computation\n\n{len(result.shape_chains)} chain(s) compute a shape input "
            f"from a runtime shape; {staying} stay in the graph the compiler receives.\n\n")
    return head + table(["consumer", "input", "status", "why", "nodes"], rows)


def _blocking(b: dict[str, Any]) -> str:
    if b["dim"] is None:
        return f"rank of {md_code(b['tensor'])} unknown"
    dim = md_code(f"{b['tensor']}[{b['dim']}]")
    value = md(b["value"]) if b["value"] is not None else "unknown"
    origin = f" from input {', '.join(md_code(o) for o in b['origin'])}" if b["origin"] else ""
    return f"{dim} = {value}{origin}"


def _dynamic_dims(result: GateResult) -> str:
    """Input dims the model keeps symbolic: the fix, and what fixing them folds."""
    if not result.dynamic_dims:
        return ""
    rows = []
    for d in result.dynamic_dims:
        symbol = "unknown" if d["symbol"] is None else md(d["symbol"])
        if d["contract"] is not None:
            fix = (f"the contract fixes it to {d['contract']}; export with static shapes "
                   "or fix the dim in the model")
        else:
            fix = "export with static shapes, or fix the dim in the model"
        chains = ", ".join(md_code(c) for c in d["chains_folded_by_fixing"]) or "none"
        rows.append([md_code(f"{d['input']}[{d['dim']}]"), symbol, fix, chains])
    return ("### Dynamic dims\n\nThe model keeps these input dims symbolic; NPU compilers "
            "need static shapes.\n\n"
            + table(["input dim", "symbol", "fix", "shape chains folded by fixing it"], rows))


def _exporter_comparison(result: GateResult) -> str:
    """compare_exporters: how the other exporter's graph differs from the gated one."""
    comparison = result.exporter_comparison
    if not comparison:
        return ""
    other = md(comparison["exporter"])
    if comparison["status"] != "ok":
        return (f"### Exporter comparison\n\nThe {other} export failed: "
                f"{md(comparison.get('reason') or '')}.")
    from npu_gate.render import diff_md

    body = diff_md.render_body(comparison["diff"], level="####")
    return (f"### Exporter comparison\n\nThe same model through the {other} exporter "
            f"(not gated; verdict there: {md(comparison['verdict'])}).\n\n"
            f"<details><summary>How the graphs differ</summary>\n\n{body}\n</details>")


def _probe(result: GateResult) -> str:
    """target.probe: what the real compiler did, and which evidence the verdict rests on."""
    from npu_gate.render.probe import adapters_text, compared_partitions, memory_rows

    info = result.stages.get("probe")
    if info is None:
        return ""
    if info.get("status") == "skipped":  # the run's time limit came first
        return f"### Real compiler\n\nThe compiler probe did not run: {md(info.get('reason'))}"
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
    if s["agreement_rate"] is not None:
        rows.append(["Partitions", compared_partitions(s, info.get("status") == "ok")])  # failed: no segments
    if adapter_line := adapters_text(s, md):
        rows.append(["Rank adapters", adapter_line.removeprefix("rank adapters: ")])
    if info.get("calibration"):
        rows.append(["Calibration (the compiler's own quantizer)", md(info["calibration"])])
    text += "\n\n" + table(["", ""], rows)
    reasons = [[md_code(n["name"]), md(n["op_type"]), "unmapped" if n.get("unmapped") else (n["actual"] or ""),
                md(n.get("reason") or "")] for n in info.get("nodes") or [] if n.get("reason")]
    if reasons:  # the compiler's own words (untrusted text, escaped)
        text += "\n\n#### The compiler's reasons\n\n" + table(["node", "op", "actual", "reason"], reasons)
    figures = memory_rows(info.get("memory") or {}, info.get("estimates"))
    if figures:  # 1.9: the compiler's memory and time estimates beside the static estimate
        text += ("\n\n#### Compiler memory and estimates\n\nThe compiler's own figures (estimates where "
                 "it says so, not device measurements) beside npu_gate's static estimate.\n\n"
                 + table(["", "figure", "evidence"], figures))
    if info.get("quantization"):
        text += "\n\n" + _probe_quantization(info["quantization"], result)
    return text


def _probe_quantization(probe_q: dict[str, Any], result: GateResult) -> str:
    """The compiler's quantized build beside the quantization stage's figures: its worst layers
    (the stage keeps those only) matched to the compiler's layers by ONNX node."""
    from npu_gate.render.probe import quantization_markdown

    q = result.quantization
    ort = None
    if q is not None:
        ort = {"evidence": f"{q['evidence']}, the stage's {len(q['worst_layers'])} worst layers", "error": None,
               "outputs": [], "layers": q["worst_layers"]}
    return quantization_markdown({**probe_q, "onnxruntime": ort}, heading="####")


def _fusions(result: GateResult) -> str:
    """Profile patterns that matched: the nodes the target runs as one fused op."""
    if not result.fusions:
        return ""
    rows = [[md_code(f["pattern"]), md_code(f["op"]), f["device"], ", ".join(md_code(n) for n in f["nodes"])]
            for f in result.fusions[:MAX_ROWS]]
    return ("### Fused patterns\n\nSubgraphs profile " + md_code(str(result.profile.get("name")))
            + " says the target fuses into one op; their nodes are placed with the fused op.\n\n"
            + table(["pattern", "becomes", "device", "nodes"], rows, total=len(result.fusions)))


def _eliminated(s: Summary) -> str:
    """", N eliminated" under a profile with the compiler's clean-up pass, else nothing."""
    return f", {s['eliminated_nodes']} eliminated" if "eliminated_nodes" in s else ""
