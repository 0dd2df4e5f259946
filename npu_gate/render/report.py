"""The composed report: one model's Markdown plus its baseline deltas, or several models
under one combined verdict. Used by the GitHub Action and ``npu-gate merge``.

The per-model body is ``markdown.render`` unchanged; this module only adds around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from npu_gate.compare.baseline import Comparison, Metric
from npu_gate.compare.report import ModelReport, combined_verdict
from npu_gate.escape import md, md_code
from npu_gate.render import markdown
from npu_gate.render.cells import node_names, size

MAX_DELTA_ROWS = 50


def _num(value: Any) -> str:
    if value is None:
        return "unknown"
    return f"{value:.3g}" if isinstance(value, float) else f"{value:,}"


def _change(before: Any, after: Any) -> str:
    if before is None or after is None:
        return ""
    diff = after - before
    if diff == 0:
        return "="
    text = f"{diff:+.3g}" if isinstance(diff, float) else f"{diff:+,}"
    return text


def _finding_rows(findings: list[dict[str, Any]]) -> str:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}  # the same message at many nodes is one row
    for f in findings:
        groups.setdefault((f.get("severity", ""), f["rule"], f.get("message", "")), []).append(f)
    rows = [[severity, f"`{rule}`", node_names([f.get("node") for f in same]), md(message)]
            for (severity, rule, message), same in list(groups.items())[:MAX_DELTA_ROWS]]
    text: str = tabulate(rows, headers=["severity", "rule", "node", "message"], tablefmt="github",
                         disable_numparse=True)
    if len(groups) > MAX_DELTA_ROWS:
        text += f"\n\n_{len(groups) - MAX_DELTA_ROWS} more rows in the JSON result._"
    return text


def _metric_row(m: Metric) -> list[str]:
    if m.key != "boundary_bytes":
        return [m.label, _num(m.before), _num(m.after), _change(m.before, m.after)]
    before, after = (None if v is None else int(v) for v in (m.before, m.after))
    change = "" if before is None or after is None else "=" if before == after else size(after - before, signed=True)
    return [m.label, size(before), size(after), change]


def render_baseline(c: Comparison) -> str:
    """The "Baseline" section: metric deltas, then new and fixed findings."""
    if not c.found:
        head = f"No result named {md_code(c.name)} in the baseline: this model is new"
        head += (f", so its {len(c.new)} active findings all count as new." if c.new
                 else " and has no active findings.")
    else:
        head = f"Compared with the baseline: {len(c.new)} new, {len(c.fixed)} fixed findings."
    regressions = c.regressions
    # regression lines are built from our labels and numbers only: no model text to escape
    head += (" **Regressed:** " + "; ".join(regressions) + "." if regressions
             else " No regression.")
    rows = [_metric_row(m) for m in c.metrics]
    rows.append(["Max abs numeric error", _num(c.error_before), _num(c.error_after),
                 _change(c.error_before, c.error_after)])
    parts = ["### Baseline", head,
             tabulate(rows, headers=["", "baseline", "this run", "change"], tablefmt="github",
                      disable_numparse=True)]
    if c.new:
        parts += ["New findings:", _finding_rows(c.new)]
    if c.fixed:
        parts += ["Fixed findings:", _finding_rows(c.fixed)]
    return "\n\n".join(parts)


def render_model(m: ModelReport) -> str:
    if m.result is None:
        lines = [f"## ⚠️ npu-gate: **COULD NOT RUN** · {md(m.label)}", ""]
        lines += [f"- {md(p)}" for p in m.problems]
        return "\n".join(lines) + "\n"
    text = markdown.render(m.result, m.bundle_dir)
    if m.comparison is not None:
        # Right after the verdict: what this PR changed is what a reviewer reads first.
        section = render_baseline(m.comparison) + "\n\n"
        at = text.find("### Summary")
        text = text[:at] + section + text[at:] if at >= 0 else text + "\n" + section
    return text


def render_report(models: list[ModelReport], *, failed: bool | None = None,
                  fail_on: str = "errors", missing: Sequence[str] = ()) -> str:
    """One model: its report. Several: a combined verdict, an overview, a section per model.
    ``missing``: baseline models not in this run, named up front."""
    note = ""
    if failed is not None and fail_on != "errors":
        outcome = "fails" if failed else "passes"
        note = f"With `fail-on: {md(fail_on)}` this check **{outcome}**.\n\n"
    if missing:
        note += (f"In the baseline, not in this run: {', '.join(md_code(n) for n in missing)} (models are matched "
                 "by name: a renamed model is listed here under its old name and is new under its new one).\n\n")
    if len(models) == 1:
        return note + render_model(models[0])
    verdict = combined_verdict(models)
    icon = {"pass": "✅", "fail": "❌"}.get(verdict, "⚠️")
    rows = []
    for m in models:
        if m.result is None:
            rows.append([md(m.name), m.verdict, "", "", "", "", ""])
            continue
        s = m.result.summary
        new = "" if m.comparison is None else str(len(m.comparison.new))
        profile = f"{md_code(m.result.profile.get('name'))} ({md(m.result.profile.get('evidence'))})"
        rows.append([md(m.name), m.verdict, profile, _num(s.get("cpu_nodes")), _num(s.get("npu_partitions")),
                     size(s.get("boundary_bytes")), new])
    overview = tabulate(rows, headers=["model", "verdict", "profile", "CPU nodes", "NPU partitions",
                                       "boundary bytes", "new findings"],
                        tablefmt="github", disable_numparse=True)
    overview += ("\n\nCPU nodes, partitions and boundary bytes are static predictions against each model's "
                 "profile, not device results.")
    problems = sum(1 for m in models if m.input_problem)
    counted = f"{len(models) - problems} model{'s' if len(models) - problems != 1 else ''}"
    if problems:
        counted += f", {problems} input problem{'s' if problems != 1 else ''}"
    head = (f"# {icon} npu-gate: **{verdict.upper()}** · {counted}\n\n{note}"
            f"{overview}\n")
    # Each model's report folded under a one-line summary: the overview leads (a two-model
    # comment was about 7,000 px tall); the reader opens the model they care about.
    return head + "\n" + "\n".join(folded_model(m) for m in models)


MODEL_ICONS = ("✅", "❌", "⚠️")  # a model's fold starts with one (github.comment keeps those lines)


def folded_model(m: ModelReport) -> str:
    """``render_model`` inside ``<details>``, its summary the model's verdict line."""
    icon = {"pass": MODEL_ICONS[0], "fail": MODEL_ICONS[1]}.get(m.verdict, MODEL_ICONS[2])
    if m.result is None:
        line = f"{icon} {md(m.label)}: could not run"
    else:
        counts = m.result.summary.get("findings", {})
        found = ", ".join(f"{counts[k]} {k}{'s' if counts[k] != 1 else ''}" for k in ("error", "warning")
                          if counts.get(k))
        line = f"{icon} {md(m.name)}: {m.verdict.upper()}" + (f", {found}" if found else "")
    return f"<details><summary>{line}</summary>\n\n{render_model(m)}\n</details>\n"
