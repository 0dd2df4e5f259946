"""The verdict of a result, from its findings and its gates: its one definition.

The verdict stage decides a new result's verdict with ``derive_verdict``. Every reader of a
result written earlier (``npu-gate merge``, the baseline, the cache's replay, the Action's publish
step) derives it again from the document's findings and gates and refuses a document whose
stated ``verdict`` differs (``result/read.py``): the field is written for people and tools
downstream, never trusted. Standard library only: the Action's publish step imports this from
its clean copy under ``python -I -S``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol

from npu_gate.result.types import FAIL, PASS, GateCheck
from npu_gate.rules import ERROR

ERROR_VERDICT = "error"  # several contracts' verdict when one could not be gated at all


class Judged(Protocol):
    """What the verdict reads of a finding: a ``Finding``, or a ``Facts`` read from a document."""

    @property
    def severity(self) -> str: ...
    @property
    def waived(self) -> bool: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def constraint(self) -> str | None: ...


class Facts(NamedTuple):
    """A finding of a result document, only as far as the verdict reads it (cheaper to build than
    a ``Finding`` for a result with 20,000 of them)."""

    severity: str
    waived: bool
    subject: str | None
    constraint: str | None


def derive_verdict(findings: Iterable[Judged], gates: Iterable[GateCheck]) -> str:
    """FAIL when a finding of severity error is active (not waived), or when a gate did not pass
    and no waived finding names it (as its ``subject``, or its ``constraint`` for the quantization
    gates): every gate that fails makes an error finding naming it, and only a waiver of that
    finding lets the gate's failure pass. Else PASS."""
    findings = list(findings)
    if any(f.severity == ERROR and not f.waived for f in findings):
        return FAIL
    excused = {name for f in findings if f.waived for name in (f.subject, f.constraint) if name}
    if any(not g.passed and g.name not in excused for g in gates):
        return FAIL
    return PASS


def combine_verdicts(verdicts: Iterable[str]) -> str:
    """Several contracts' verdicts as one: ``error`` (one could not be gated) before ``fail``
    before ``pass``; no contract at all is a pass."""
    found = set(verdicts)
    for verdict in (ERROR_VERDICT, FAIL):
        if verdict in found:
            return verdict
    return PASS
