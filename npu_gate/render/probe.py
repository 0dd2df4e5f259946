"""Terminal summary and Markdown report of a probe. They only read the ProbeResult."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tabulate import tabulate

from npu_gate.escape import md, md_code, term
from npu_gate.render.cells import table
from npu_gate.result.probe import ProbeResult


def text(result: ProbeResult) -> str:
    c = result.compiler
    lines = [f"npu-gate probe: {term(result.model['path'])}: {c['name']} {term(c.get('version') or '?')} "
             f"{term(c['target'])}: {result.status.upper()}"]
    if result.error:  # the failure's rule: compiler-failed, or quantization-failed (the compiler did not run)
        rule = next((f["rule"] for f in result.findings if f["severity"] == "error"), "compiler-failed")
        lines.append(f"  error {rule}: {term(result.error)}")
    if result.preparation:
        lines.append(f"  prepared: {term(preparation_text(result.preparation))}")
    s = result.summary
    if s:
        a = s["actual"]
        nodes = f"{s['nodes']} node" + ("" if s["nodes"] == 1 else "s")
        lines.append(f"  {nodes}: {a['npu']} npu, {a['cpu']} cpu, {a['split']} split, {a['fused']} fused, "
                     f"{a['folded']} folded; {s['npu_segments']} npu / {s['cpu_segments']} cpu segments")
        if s["agreement_rate"] is not None:
            lines.append(f"  vs profile {term(result.predicted_with.get('profile'))}: {s['agree']}/{s['compared']} "
                         f"nodes agree ({s['agreement_rate']:.0%}); predicted {s['predicted_npu_partitions']} npu / "
                         f"{s['predicted_cpu_partitions']} cpu partitions")
            lines.append(f"  {compared_partitions(s, result.built)}")
        if adapter_line := adapters_text(s, term):
            lines.append(f"  {adapter_line}")
    if memory_line := memory_text(result.memory):
        lines.append(f"  {memory_line}")
    if result.estimates:
        lines.append(f"  {term(estimates_text(result.estimates))}")  # Vela's config names: compiler text
    if result.quantization:
        lines.extend(f"  {line}" for line in quantization_text(result.quantization, term))
    for n in result.nodes:
        if n.reason or n.unmapped:
            lines.append(f"  {term(n.name)} ({term(n.op_type)}): "
                         + (f"{n.actual}: {term(n.reason or '')}" if not n.unmapped else "unmapped"))
    for f in result.findings:
        if f["severity"] == "warning":
            lines.append(f"  warning {f['rule']}: {term(f['message'])}")
    lines.append(f"  {result.evidence} (compiler placement, not device latency)")
    return "\n".join(lines) + "\n"


def preparation_text(preparation: dict[str, Any]) -> str:
    """How the model the compiler built was prepared, in one line (our words and figures only)."""
    p = preparation
    if p.get("error"):  # the quantizer raised: nothing was prepared
        return f"{p['method']} {p.get('mode', '')}: failed: {p['error']}"
    if p["method"] != "qnn-qdq":
        return f"{p['method']}: {p.get('reason', '')}"
    calibration = p.get("calibration") or {}
    data = "synthetic samples" if calibration.get("synthetic") else "samples from the file"
    return (f"qnn-qdq {p['mode']}: activations {p['activations']}, weights {p['weights']}"
            f"{' per channel' if p['per_channel'] else ''}, {p['calibration_method']} on "
            f"{calibration.get('samples', '?')} {data}{', QNN preprocessing applied' if p['preprocessed'] else ''} "
            f"({p['evidence']})")


def _bytes(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def memory_text(memory: dict[str, Any]) -> str:
    """The compiler's memory totals beside the static estimate, in one line (plain text: only
    numbers and npu_gate's own words)."""
    compiler, estimate = memory.get("compiler"), memory.get("estimate")
    if not compiler and not estimate:
        return ""
    parts = []
    if compiler:
        parts.append(f"compiler: internal {_bytes(compiler['internal_bytes'])} bytes, weights "
                     f"{_bytes(compiler['weight_bytes'])} bytes")
    if estimate:
        parts.append(f"estimate (upper bound on the model's tensors): peak activations "
                     f"{_bytes(estimate['peak_activation_bytes'])} bytes, "
                     f"weights {_bytes(estimate['weight_bytes'])} bytes")
    return "memory: " + "; ".join(parts)


def memory_rows(memory: dict[str, Any], estimates: dict[str, Any] | None) -> list[list[str]]:
    """Markdown rows (what, figure, evidence) setting the static estimate beside the compiler's own
    memory figures: RKNN's totals (``memory.compiler``), Vela's SRAM/flash/time (``estimates``), each
    with its evidence; the ratio estimate ÷ compiler where both are known. Compiler text is escaped."""
    rows: list[list[str]] = []
    static = memory.get("estimate")
    compiler = memory.get("compiler")
    peak = static.get("peak_activation_bytes") if static else None
    weights = static.get("weight_bytes") if static else None
    if compiler:
        evidence = md(compiler["evidence"])
        rows.append(["compiler: internal memory", _b(compiler.get("internal_bytes")) + _ratio(peak, compiler.get(
            "internal_bytes"), "peak"), evidence])
        rows.append(["compiler: weight memory", _b(compiler.get("weight_bytes")) + _ratio(weights, compiler.get(
            "weight_bytes"), "weights"), evidence])
    if estimates:
        evidence = md(estimates["evidence"])
        rows.append(["compiler: SRAM used (largest partition)", _b(estimates.get("sram_bytes"))
                     + _ratio(peak, estimates.get("sram_bytes"), "peak"), evidence])
        rows.append(["compiler: flash used (all partitions)", _b(estimates.get("flash_bytes"))
                     + _ratio(weights, estimates.get("flash_bytes"), "weights"), evidence])
        ms = estimates.get("estimated_ms")
        when = "unknown" if ms is None else f"{ms:g} ms"
        rows.append(["compiler: time", f"{when} ({_bytes(estimates.get('cycles'))} cycles)", evidence])
    if static and (compiler or estimates):
        dtype = f", float tensors in {md(static['runtime_dtype'])}" if static.get("runtime_dtype") else ""
        # which bound (placement/memory.py's evidence, up to its colon): unpadded, or in the profile's layout
        kind = str(static.get("evidence") or "estimated upper bound on unpadded tensor bytes").split(":")[0]
        words = f"{md(kind)}{dtype} (docs/memory.md)"
        rows.append(["static estimate: peak activations", _b(peak), words])
        rows.append(["static estimate: weights", _b(weights), words])
    return rows


def _b(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,} B"


def _ratio(estimate: int | None, compiler: int | None, what: str) -> str:
    if estimate is None or not compiler:
        return ""
    return f" (estimated {what} ÷ this: {estimate / compiler:.2f})"


def estimates_text(estimates: dict[str, Any]) -> str:
    """The compiler's own estimates in one line, with whose they are (``estimates.evidence``)."""
    ms = estimates.get("estimated_ms")
    return (f"{estimates['evidence']}: SRAM {_bytes(estimates.get('sram_bytes'))} bytes, flash "
            f"{_bytes(estimates.get('flash_bytes'))} bytes, {_bytes(estimates.get('cycles'))} cycles"
            + (f" ({ms:g} ms)" if ms is not None else "") + f", {estimates.get('npu_partitions')} NPU partition(s), "
            f"core {estimates.get('core')}")


def markdown(result: ProbeResult) -> str:
    c = result.compiler
    icon = "✅" if result.built else "❌"
    parts = [
        f"## {icon} npu-gate probe: **{result.status.upper()}** · {md(result.model['path'])}",
        f"Evidence: {md_code(result.evidence)}. A probe records what the compiler did with the model "
        "(which ops it built for the NPU and which it left on CPU); it is not a device latency or "
        "accuracy result.",
    ]
    if result.preparation:
        parts.append(f"Prepared: {md(preparation_text(result.preparation))}.")
    for f in result.findings:
        parts.append(f"**{f['severity']} `{f['rule']}`**: {md(f['message'])}")
    s = result.summary
    if s:
        a = s["actual"]
        rows = [
            ["nodes", s["nodes"]],
            ["actual npu / cpu / split / fused / folded",
             f"{a['npu']} / {a['cpu']} / {a['split']} / {a['fused']} / {a['folded']}"],
            ["NPU / CPU segments (compiler)", f"{s['npu_segments']} / {s['cpu_segments']}"],
            [f"NPU / CPU partitions (profile {md(result.predicted_with.get('profile'))})",
             f"{s['predicted_npu_partitions']} / {s['predicted_cpu_partitions']}"],
            *_with_adapters_row(s),
            ["nodes where prediction and compiler agree",
             "n/a" if s["agreement_rate"] is None else f"{s['agree']}/{s['compared']} ({s['agreement_rate']:.0%})"],
            ["ops the compiler added (adapters)", s["compiler_added_ops"]],
            *([["NPU partitions = NPU segments", _yes_no(s["partitions_agree"])]]
              if "partitions_agree" in s else []),
        ]
        parts.append(tabulate(rows, headers=["", c["name"] + " " + md(c.get("version") or "?") + " " + md(c["target"])],
                              tablefmt="github", disable_numparse=True))
        if s["agreement_rate"] is not None:
            compared = compared_partitions(s, result.built)
            parts.append(compared[0].upper() + compared[1:] + ".")
        if adapter_line := adapters_text(s, md):
            parts.append(adapter_line[0].upper() + adapter_line[1:] + ".")
        if memory_line := memory_text(result.memory):
            parts.append(memory_line[0].upper() + memory_line[1:] + ".")  # numbers and our words only
        if result.estimates:
            parts.append("### Compiler estimates\n\n" + md(estimates_text(result.estimates)) + ".\n\n"
                         + table(["", "figure", "evidence"], memory_rows(result.memory, result.estimates)))
        if result.quantization:
            parts.append(quantization_markdown(result.quantization))
        reasons = [[md_code(n.name), md(n.op_type), "unmapped" if n.unmapped else (n.actual or ""), md(n.reason or "")]
                   for n in result.nodes if n.reason or n.unmapped]
        if reasons:
            parts.append("### The compiler's reasons\n\n" + table(["node", "op", "actual", "reason"], reasons))
        node_rows = [[md_code(n.name), md(n.op_type), n.predicted or "", n.actual or "", md(n.became or ""),
                      "I/O adapter" if n.adapter else "" if n.agrees is None else ("yes" if n.agrees else "**no**")]
                     for n in result.nodes]
        parts.append("### Predicted vs actual\n\n" + table(
            ["node", "op", "predicted", "actual", "became", "agrees"], node_rows))
        reasons = [[md_code(n.name), md(n.op_type), md(n.reason)] for n in result.nodes if n.reason]
        if reasons:  # the compiler's own words (QNN's validation log): untrusted text, escaped
            parts.append("### Why the compiler left them on CPU\n\n" + table(["node", "op", "compiler's reason"],
                                                                               reasons))
        if s["disagreements"]:
            by_cause = [[md(c), n, md(", ".join(d["node"] for d in s["disagreements"] if d["cause"] == c))]
                        for c, n in s["disagreements_by_cause"].items()]
            parts.append("### Disagreements by cause\n\n" + table(["cause", "nodes", "which"], by_cause))
        seg_rows = [[sg.index, sg.device, md(" ".join(sg.ops)), md(", ".join(sg.nodes))] for sg in result.segments]
        parts.append("### Segments (execution order)\n\n" + table(["#", "device", "ops", "original nodes"], seg_rows))
    return "\n\n".join(parts) + "\n"



def _with_adapters_row(s: dict[str, Any]) -> list[list[str]]:
    if s.get("predicted_npu_partitions_with_adapters") is None:
        return []
    return [["NPU / CPU partitions with the predicted rank adapters",
             f"{s['predicted_npu_partitions_with_adapters']} / {s['predicted_cpu_partitions_with_adapters']}"]]


def _yes_no(value: bool | None) -> str:
    return "n/a" if value is None else "yes" if value else "no"


def compared_partitions(s: dict[str, Any], built: bool = True) -> str:
    """Which predicted partition counts stand against the compiler's segments, and whether they match
    (``built`` False: the compiler built nothing, so there are no segments to compare)."""
    if s.get("predicted_npu_partitions_with_adapters") is not None:
        which = "predicted partitions with the rank adapters"
        npu, cpu = s["predicted_npu_partitions_with_adapters"], s["predicted_cpu_partitions_with_adapters"]
    else:
        which = "predicted partitions of the model's nodes (the profile has no rank_adapters rule)"
        npu, cpu = s["predicted_npu_partitions"], s["predicted_cpu_partitions"]
    if s.get("built") is False:
        return f"no segments to compare: the compiler built nothing ({which}: {npu} npu / {cpu} cpu)"
    if not built:
        return f"no segments to compare: the compiler built nothing ({which}: {npu} npu / {cpu} cpu)"
    match = "match" if (npu, cpu) == (s["npu_segments"], s["cpu_segments"]) else "differ"
    return (f"segments vs {which}: {s['npu_segments']} npu / {s['cpu_segments']} cpu vs "
            f"{npu} npu / {cpu} cpu ({match})")


def adapters_text(s: dict[str, Any], esc: Callable[[str], str]) -> str | None:
    """One line on rank adapters: the profile's against the ops the compiler added at the graph edge.

    None when there is nothing to say (no rule and no such op, or a result without ``adapters``).
    """
    a = s.get("adapters")
    if not a or (a["predicted"] is None and not a["actual"]):
        return None

    def listed(items: list[dict[str, Any]]) -> str:
        return ", ".join(f"{esc(i['op_type']) + ' ' if 'op_type' in i else ''}{esc(i['tensor'])} "
                         f"({i['side']}, {i['device']})" for i in items) or "none"

    predicted = "no rank_adapters rule in the profile" if a["predicted"] is None else \
        f"predicted {listed(a['predicted'])}"
    actual = "not known (no last graph from the compiler)" if a["actual"] is None else listed(a["actual"])
    verdict = {True: "agree", False: "disagree", None: "not compared"}[a["agree"]]
    return f"rank adapters: {predicted}; compiler added {actual}: {verdict}"


def _samples(part: dict[str, Any] | None, what: str) -> str:
    if not part:
        return f"no {what} samples"
    return f"{part['samples']} {'synthetic ' if part['synthetic'] else ''}{what} sample" + \
        ("" if part["samples"] == 1 else "s") + (" (drawn from the input ranges)" if part["synthetic"] else "")


def _num(value: float | None, digits: int = 5) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _db(value: float | None) -> str:
    return "no noise" if value is None else f"{value:.1f} dB"


def layer_rows(q: dict[str, Any]) -> list[dict[str, Any]]:
    """The compiler's per-layer figures with onnxruntime's SQNR beside each: the SQNR of the last of
    the layer's ONNX nodes that onnxruntime matched (``onnxruntime.layers`` keyed by node)."""
    accuracy = q.get("accuracy") or {}
    ort = {layer["node"]: layer for layer in (q.get("onnxruntime") or {}).get("layers", []) if layer.get("node")}
    rows = []
    for layer in accuracy.get("layers", []):
        match = next((ort[n] for n in reversed(layer["nodes"]) if n in ort), None)
        rows.append({**layer, "ort_node": match["node"] if match else None,
                     "ort_sqnr_db": match["sqnr_db"] if match else None, "ort_matched": match is not None})
    return rows


def quantization_text(q: dict[str, Any], esc: Callable[[str], str]) -> list[str]:
    """The quantized build in a few terminal lines: samples, the compiler's and onnxruntime's output figures."""
    lines = [f"quantized {q['mode']}: {_samples(q.get('calibration'), 'calibration')}, "
             f"{_samples(q.get('holdout'), 'hold-out')}"]
    accuracy = q.get("accuracy")
    if accuracy:
        outputs = [r for r in accuracy["layers"] if r["entire"]["cos"] is not None]
        worst = min((r for r in accuracy["layers"] if not r["adapter"] and r["single"]["cos"] is not None),
                    key=lambda r: r["single"]["cos"], default=None)
        line = f"{esc(accuracy['evidence'])}: output {esc(outputs[-1]['tensor'])} cosine " \
               f"{_num(outputs[-1]['entire']['cos'])}" if outputs else f"{esc(accuracy['evidence'])}: no figures"
        if worst is not None:
            line += f"; lowest single-layer cosine {_num(worst['single']['cos'])} at {esc(worst['op_type'])} " \
                    f"{esc(worst['tensor'])} ({esc(', '.join(worst['nodes']) or 'no ONNX node')})"
        lines.append(line)
        if accuracy.get("error"):
            lines.append(f"accuracy_analysis stopped: {esc(accuracy['error'])}")
    ort = q.get("onnxruntime")
    if ort:
        if ort.get("error"):
            lines.append(f"onnxruntime: {esc(ort['error'])}")
        for o in ort.get("outputs", []):
            figures = "holds NaN (no figure)" if o.get("nan") else \
                f"SQNR {_db(o['sqnr_db'])}, cosine {_num(o['cosine'])}"
            lines.append(f"{esc(ort['evidence'])}: output {esc(o['output'])} {figures}")
    return lines


def quantization_markdown(q: dict[str, Any], heading: str = "###") -> str:
    """The quantized build: samples, then per layer the compiler's cosine/euclidean (entire and single)
    beside onnxruntime's SQNR, each column labelled with its evidence."""
    parts = [f"{heading} Quantized build ({md(q['mode'])})",
             f"Calibrated on {_samples(q.get('calibration'), 'calibration')}; measured on "
             f"{_samples(q.get('holdout'), 'hold-out')}."]
    accuracy, ort = q.get("accuracy"), q.get("onnxruntime")
    if ort:
        for o in ort.get("outputs", []):
            figures = "holds NaN, no figure" if o.get("nan") else \
                f"SQNR {_db(o['sqnr_db'])}, cosine {_num(o['cosine'])}, max abs error {o['max_abs_err']:.4g}"
            parts.append(f"Output {md_code(o['output'])}: {figures} ({md(ort['evidence'])}).")
        if ort.get("error"):
            parts.append(f"onnxruntime: {md(ort['error'])}.")
    if accuracy:
        rows = [[md(r["op_type"]), md_code(r["tensor"]),
                 "graph edge" if r["adapter"] else md(", ".join(r["nodes"])) or "(unknown)",
                 _num(r["entire"]["cos"]), _num(r["entire"]["euc"]), _num(r["single"]["cos"]), _num(r["single"]["euc"]),
                 (_db(r["ort_sqnr_db"]) + (f" ({md_code(r['ort_node'])})" if r["ort_node"] != r["nodes"][-1] else ""))
                 if r["ort_matched"] else ""]
                for r in layer_rows(q)]
        parts.append("Per layer: **A** " + md(accuracy["evidence"]) + "; **B** "
                     + (md(ort["evidence"]) if ort else "not measured") + ". A's `entire` is the error accumulated "
                     "layer by layer from the input, its `single` the layer's own error (the toolkit's terms); a "
                     "layer without figures was fused into the next. B is the SQNR of the last of the layer's "
                     "ONNX nodes onnxruntime matched (named when it is not the layer's last node).")
        parts.append(table(["layer", "tensor", "ONNX nodes", "A entire cos", "A entire euc", "A single cos",
                            "A single euc", "B SQNR"], rows))
        if accuracy.get("error"):
            parts.append(f"accuracy_analysis stopped: {md(accuracy['error'])}.")
    return "\n\n".join(parts)
