"""The finding of one failed (or unchecked) profile constraint: shared by the placement rules."""

from __future__ import annotations

from typing import Any

from npu_gate.profile.constraints import Failure
from npu_gate.result.types import Finding, make_finding


def failure_finding(rule_id: str, message: str, f: Failure, evidence: str, **where: Any) -> Finding:
    """A finding of one failed (or unchecked) constraint, with its id and values."""
    return make_finding(rule_id, message, constraint=f.constraint, actual=f.actual, allowed=f.allowed, doc=f.doc,
                        evidence=evidence, fix=f.fix, **where)
