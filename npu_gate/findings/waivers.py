"""Waivers: ``waiver-expired``, ``waiver-unused``."""

from __future__ import annotations

from npu_gate.contract.parts import Waiver
from npu_gate.findings.doc import RuleDoc
from npu_gate.result.types import Finding, NodeResult, make_finding
from npu_gate.rules import NODE_NAMES

WAIVER_EXPIRED = RuleDoc(
    "waiver-expired",
    finds="A waiver's expiry date has passed; it no longer waives anything.",
    why="Nothing NPU-specific: a waiver is a dated promise, and the finding it covered fails the gate again.",
    example="None: the waiver is in the contract (`waivers[].expires`), not in the model.",
    fix="Renew it with a new date and reason, or fix the finding it covered.",
    evidence="The waiver's `expires` against the run's date.",
    fields="`subject` `waivers[<i>]`; the message names the waiver's rule, node, op_type, module or source "
           "and its date. It cannot be waived.",
)


def waiver_expired(index: int, where: str, waiver: Waiver) -> Finding:
    """``where``: the waiver's matching keys, as ``rule=..., node=...``."""
    return make_finding("waiver-expired", f"waivers[{index}] ({where}) expired on {waiver.expires} and no "
                        "longer waives", subject=f"waivers[{index}]")


WAIVER_UNUSED = RuleDoc(
    "waiver-unused",
    finds="A waiver matched no finding: the finding it covered is gone (or the waiver has a typo).",
    why="Nothing NPU-specific: a stale waiver would silently waive the next finding that happens to match it.",
    example="None: the waiver is in the contract (`waivers[]`), not in the model.",
    fix="Remove it to keep the contract honest. " + NODE_NAMES,
    evidence="Every finding of the run matched against the contract's waivers.",
    fields="`subject` `waivers[<i>]`; the message names the waiver's keys and, for a node name several nodes "
           "share, the names to use. It cannot be waived.",
)


def waiver_unused(index: int, where: str, waiver: Waiver, nodes: list[NodeResult]) -> Finding:
    """``where``: the waiver's matching keys; ``nodes``: the result's, for a not-unique name's hint."""
    return make_finding("waiver-unused", f"waivers[{index}] ({where}) matched no finding"
                        f"{not_unique_hint(waiver, nodes)}", subject=f"waivers[{index}]")


def not_unique_hint(waiver: Waiver, nodes: list[NodeResult], most: int = 10) -> str:
    """For a waiver naming a node by a name several nodes share: the display names to use."""
    if not waiver.node:
        return ""
    names = [n.name for n in nodes if n.original_name == waiver.node]
    if not names:
        return ""
    shown = ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
    return f": node '{waiver.node}' is not unique in the model: use {shown}"


DOCS = (WAIVER_EXPIRED, WAIVER_UNUSED)
