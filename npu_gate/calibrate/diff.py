"""`npu-gate profile diff A B`: what profile B claims differently from profile A (both resolved).

Ops B adds (A does not run them), ops B removes (A runs them, B does not: for a calibrated B,
measured off the NPU while A claims them), ops both run under different constraints
(compared without messages and doc links), fusion patterns and the rank-adapter rule. A
calibrated B that extends nothing does not hold the ops its sweep never measured: given the
ops its record measured, those are "not measured" rather than removed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from npu_gate.escape import md, md_code, term

if TYPE_CHECKING:
    from npu_gate.profile.spec import Profile

_WORDING = ("message", "doc")  # not part of what a constraint claims
_RULE_WORDING = ("evidence", "note", "doc")


def _claims(constraints: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps({k: v for k, v in c.items() if k not in _WORDING}, sort_keys=True)
                  for c in constraints)


def diff_profiles(a: Profile, b: Profile, measured: set[str] | None = None) -> dict[str, Any]:
    """``measured``: the ops B's calibration record measured, for a calibrated B that extends nothing."""
    changed = []
    for op in sorted(set(a.ops) & set(b.ops)):
        ca, cb = a.ops[op].get("constraints", []), b.ops[op].get("constraints", [])
        if _claims(ca) != _claims(cb):
            changed.append({"op": op, "a": [c["id"] for c in ca], "b": [c["id"] for c in cb]})
    pa, pb = {p["name"] for p in a.patterns}, {p["name"] for p in b.patterns}
    ra, rb = ({k: v for k, v in (r or {}).items() if k not in _RULE_WORDING} or None
              for r in (a.rank_adapters, b.rank_adapters))
    out: dict[str, Any] = {
        "kind": "profile-diff",
        "a": {"name": a.name, "evidence": a.evidence, "ops": len(a.ops)},
        "b": {"name": b.name, "evidence": b.evidence, "ops": len(b.ops)},
        "ops_added": sorted(set(b.ops) - set(a.ops)),
        "ops_removed": sorted(op for op in set(a.ops) - set(b.ops) if measured is None or op in measured),
        "ops_not_measured": sorted(op for op in set(a.ops) - set(b.ops) if measured is not None and op not in measured),
        "ops_constrained_differently": changed,
        "patterns_added": sorted(pb - pa),
        "patterns_removed": sorted(pa - pb),
        "rank_adapters": None if ra == rb else {"a": ra, "b": rb},
    }
    out["identical"] = not any(out[k] for k in ("ops_added", "ops_removed", "ops_not_measured",
                                                "ops_constrained_differently", "patterns_added", "patterns_removed",
                                                "rank_adapters"))
    return out


def _lines(d: dict[str, Any], bullet: str, name: Callable[[object], str], text: Callable[[object], str]) -> list[str]:
    """The differences, one line each; ``name`` shows a profile, op, constraint or pattern name,
    ``text`` any other profile text (escaped for Markdown, made printable for a terminal)."""
    a, b = name(d["a"]["name"]), name(d["b"]["name"])

    def names(items: list[str]) -> str:
        return ", ".join(name(i) for i in items)

    def ids(items: list[str]) -> str:
        return names(items) if items else "no constraints"

    lines = []
    if d["ops_added"]:
        lines.append(f"{bullet}ops {b} adds ({len(d['ops_added'])}): {names(d['ops_added'])}")
    if d["ops_removed"]:
        lines.append(f"{bullet}ops {b} removes ({len(d['ops_removed'])}; {a} runs them on the NPU): "
                     f"{names(d['ops_removed'])}")
    if d.get("ops_not_measured"):
        lines.append(f"{bullet}ops not in {b}, not measured by its calibration ({len(d['ops_not_measured'])}; "
                     f"{a} runs them on the NPU): {names(d['ops_not_measured'])}")
    if d["ops_constrained_differently"]:
        lines.append(f"{bullet}ops constrained differently ({len(d['ops_constrained_differently'])}):")
        for c in d["ops_constrained_differently"]:
            lines.append(f"  {bullet}{name(c['op'])}: {a} {ids(c['a'])}; {b} {ids(c['b'])}")
    if d["patterns_added"]:
        lines.append(f"{bullet}patterns {b} adds: {names(d['patterns_added'])}")
    if d["patterns_removed"]:
        lines.append(f"{bullet}patterns {b} drops: {names(d['patterns_removed'])}")
    if d["rank_adapters"]:
        r = d["rank_adapters"]
        lines.append(f"{bullet}rank adapters: {a} {text(json.dumps(r['a']))}; {b} {text(json.dumps(r['b']))}")
    return lines or [f"{bullet}no difference in ops, constraints, patterns or rank adapters"]


def render_text(d: dict[str, Any]) -> str:
    head = f"profile diff: {term(d['a']['name'])} ({d['a']['ops']} ops) -> {term(d['b']['name'])} ({d['b']['ops']} ops)"
    return "\n".join([head, *_lines(d, "  ", term, term)]) + "\n"


def render_markdown(d: dict[str, Any]) -> str:
    """Profile files are reviewed data, but a user's profile is still text from outside: escaped."""
    a, b = d["a"], d["b"]
    head = [f"# Profile diff: {md_code(a['name'])} → {md_code(b['name'])}", "",
            f"{md_code(a['name'])} ({md(a['evidence'])}, {a['ops']} ops) against {md_code(b['name'])} "
            f"({md(b['evidence'])}, {b['ops']} ops), both with their bases resolved. Constraints are compared "
            "without their messages and links.", ""]
    return "\n".join([*head, *_lines(d, "- ", md_code, md_code)]) + "\n"
