"""The baseline ratchet: compare a result with the base branch's result for the same model.

A finding is matched by a key that does not depend on its message: rule, node (by its stable
key when both results have them, schema 1.7: an exporter's renumbering moves no finding), constraint
and subject (what a finding names when it names no node: ``max_cpu_nodes``, an output).
A result written before findings had a subject (schema < 1.6) is keyed, for its findings
without node or constraint, by the part of the message before the first ": ". Only active
(not waived) findings count. The PR regresses when it adds an active error, or raises the
CPU node count, the NPU partition count or the boundary bytes. Numeric error is shown but
not judged here (float noise moves it; a real mismatch is a ``numeric-mismatch`` finding).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FindingKey = tuple[str, str, str, str]
# (summary key, label); more is worse for all of them
METRICS = (("cpu_nodes", "CPU nodes"), ("npu_partitions", "NPU partitions"),
           ("boundary_bytes", "Boundary bytes"))
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)


def finding_key(f: dict[str, Any], legacy: bool = False, keys: Mapping[str, str] | None = None) -> FindingKey:
    """``legacy``: key as results before schema 1.6 (findings without ``subject``) can be keyed.
    ``keys``: node name -> stable key (``node_keys``), so a node the exporter renumbered is the
    same node."""
    node = f.get("node") or ""
    if keys is not None and node:
        node = keys.get(node, node)
    constraint = f.get("constraint") or ""
    subject = "" if legacy else str(f.get("subject") or "")
    if legacy and not node and not constraint:
        message = str(f.get("message", ""))
        subject = message.split(": ", 1)[0] if ": " in message else _NUMBER.sub("#", message)
    return (str(f["rule"]), str(node), str(constraint), subject)


def _has_subjects(doc: dict[str, Any]) -> bool:
    """Whether the result was written with findings' ``subject`` (schema 1.6 and later)."""
    return schema_version(doc) >= (1, 6)


def node_keys(doc: dict[str, Any]) -> dict[str, str] | None:
    """Node name -> stable key (schema 1.7; a node without one is keyed by its name), or None
    for a result written before stable keys."""
    if schema_version(doc) < (1, 7):
        return None
    return {n["name"]: n.get("stable_key") or n["name"] for n in doc.get("nodes", [])}


def schema_version(doc: dict[str, Any]) -> tuple[int, int]:
    version = str(doc.get("schema_version", "0"))
    major, _, minor = version.partition(".")
    return (int(major) if major.isdigit() else 0, int(minor) if minor.isdigit() else 0)


def _active(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in doc.get("findings", []) if not f.get("waived")]


def max_abs_error(doc: dict[str, Any]) -> float | None:
    errors = [c["max_abs_err"] for c in doc.get("numerics", []) if c.get("max_abs_err") is not None]
    return max(errors) if errors else None


@dataclass
class Metric:
    key: str
    label: str
    before: float | None
    after: float | None

    @property
    def worse(self) -> bool:
        return self.before is not None and self.after is not None and self.after > self.before

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "before": self.before, "after": self.after}


@dataclass
class Comparison:
    name: str
    found: bool  # the baseline has a result for this model
    new: list[dict[str, Any]] = field(default_factory=list)
    fixed: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    error_before: float | None = None
    error_after: float | None = None

    @property
    def regressions(self) -> list[str]:
        """Why the PR makes things worse, one line each (empty: no regression)."""
        out = []
        errors = [f for f in self.new if f.get("severity") == "error"]
        if errors:
            out.append(f"{len(errors)} new error finding{'s' if len(errors) != 1 else ''}")
        out += [f"{m.label}: {_fmt(m.before)} → {_fmt(m.after)}" for m in self.metrics if m.worse]
        return out

    @property
    def changed(self) -> bool:
        return bool(self.new or self.fixed or not self.found
                    or any(m.before != m.after for m in self.metrics))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "found": self.found, "new": self.new, "fixed": self.fixed,
                "metrics": [m.to_dict() for m in self.metrics],
                "max_abs_err": {"before": self.error_before, "after": self.error_after},
                "regressions": self.regressions}


def _fmt(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def compare(current: dict[str, Any], baseline: dict[str, Any] | None) -> Comparison:
    """Compare one result document with the baseline's document for the same model (or None)."""
    now = _active(current)
    if baseline is None:
        return Comparison(current["name"], False, new=now,
                          metrics=[Metric(k, label, None, current.get("summary", {}).get(k))
                                   for k, label in METRICS],
                          error_after=max_abs_error(current))
    before = _active(baseline)
    legacy = not (_has_subjects(baseline) and _has_subjects(current))
    keys_now, keys_before = node_keys(current), node_keys(baseline)
    if keys_now is None or keys_before is None:  # one side has names only: match by names
        keys_now = keys_before = None
    remaining = Counter(finding_key(f, legacy, keys_before) for f in before)
    new = []
    for f in now:  # multiset difference, keeping the current findings' order
        key = finding_key(f, legacy, keys_now)
        if remaining[key]:
            remaining[key] -= 1
        else:
            new.append(f)
    still = Counter(finding_key(f, legacy, keys_now) for f in now)
    fixed = []
    for f in before:
        key = finding_key(f, legacy, keys_before)
        if still[key]:
            still[key] -= 1
        else:
            fixed.append(f)
    before_s, after_s = baseline.get("summary", {}), current.get("summary", {})
    metrics = [Metric(k, label, before_s.get(k), after_s.get(k)) for k, label in METRICS]
    return Comparison(current["name"], True, new, fixed, metrics,
                      max_abs_error(baseline), max_abs_error(current))


def compare_all(current: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> list[Comparison]:
    """Match models by name; a model missing from the baseline is new (all its findings are)."""
    by_name = {d["name"]: d for d in baseline}
    return [compare(doc, by_name.get(doc["name"])) for doc in current]


def absent(current: list[str], baseline: list[dict[str, Any]]) -> list[str]:
    """Names of baseline models this run did not gate (in the baseline's order): a model that
    was removed, could not run, or whose contract ``name`` changed (its findings then count
    as new under the new name)."""
    names = set(current)
    return list(dict.fromkeys(str(d["name"]) for d in baseline if d.get("name") not in names))
