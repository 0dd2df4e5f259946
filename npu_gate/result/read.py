"""Read results back: a result JSON (``npu-gate check --json``) or a merged document.

``npu-gate merge`` and the baseline comparison work on files written by earlier runs,
possibly by other jobs; this turns them back into GateResult objects for the renderers.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from npu_gate.errors import GateError
from npu_gate.escape import shorten
from npu_gate.files import UnreadableFile, read_regular_text
from npu_gate.result.types import (
    BoundaryResult,
    Finding,
    GateCheck,
    GateResult,
    NodeResult,
    PartitionResult,
)
from npu_gate.result.verdict import ERROR_VERDICT, Facts, combine_verdicts, derive_verdict

MERGED_KIND = "npu-gate-merged"
# GateResult fields rebuilt as objects above (the rest are plain JSON values)
_CONVERTED = frozenset({"findings", "nodes", "partitions", "boundaries", "gates"})


def result_from_dict(doc: dict[str, Any]) -> GateResult:
    """The inverse of ``GateResult.to_dict`` (the conversion log is not in the JSON)."""
    findings = [finding_from_dict(f) for f in doc.get("findings", [])]
    result = GateResult(
        name=doc["name"],
        verdict=doc["verdict"],
        profile=doc["profile"],
        versions=doc.get("versions", {}),
        model=doc.get("model", {}),
        contract=doc.get("contract"),
        stages=doc.get("stages", {}),
        inputs=doc.get("inputs", []),
        outputs=doc.get("outputs", []),
        ops=doc.get("ops", {}),
        nodes=[NodeResult(**n) for n in doc.get("nodes", [])],
        partitions=[_partition(p) for p in doc.get("partitions", [])],
        boundaries=[BoundaryResult(tensor=b["tensor"], bytes=b["bytes"], source=b["from"],
                                   target=b["to"]) for b in doc.get("boundaries", [])],
        summary=doc.get("summary", {}),
        findings=findings,
        numerics=doc.get("numerics", []),
        gates=[gate_from_dict(g) for g in doc.get("gates", [])],
        timings=doc.get("timings", {}),
        analysed="node_count" in doc.get("summary", {}),
    )
    # Plain fields added to the result later (e.g. by newer versions) pass through unchanged.
    for f in fields(GateResult):
        if f.name in doc and f.name not in _CONVERTED:
            setattr(result, f.name, doc[f.name])
    return result


def finding_from_dict(f: dict[str, Any]) -> Finding:
    return Finding(rule=f["rule"], severity=f["severity"], message=f["message"],
                   node=f.get("node"), op_type=f.get("op_type"),
                   constraint=f.get("constraint"), actual=f.get("actual"),
                   allowed=f.get("allowed"), waived=bool(f.get("waived")),
                   waiver_reason=f.get("waiver_reason"), doc=f.get("doc"), evidence=f.get("evidence"),
                   fix=f.get("fix"), subject=f.get("subject") or _legacy_subject(f), cause=f.get("cause"),
                   partition=f.get("partition"))


def gate_from_dict(g: dict[str, Any]) -> GateCheck:
    return GateCheck(name=g["name"], limit=g["limit"], actual=g["actual"], passed=g["passed"])


def document_verdict(doc: dict[str, Any]) -> str:
    """The verdict a result document's findings and gates give (``derive_verdict``), or for a
    merged document the verdict its results and its errors entries add up to. Never the
    document's own ``verdict``. KeyError, TypeError or AttributeError on a document of neither
    shape (one read without the schema check, as the Action's publish step reads)."""
    if doc.get("kind") == MERGED_KIND:
        errors = doc.get("errors") or []
        if not isinstance(errors, list) or not isinstance(doc["results"], list):
            raise TypeError("results and errors: expected lists")
        return combine_verdicts([*(document_verdict(r) for r in doc["results"]), *[ERROR_VERDICT] * len(errors)])
    facts = [Facts(f["severity"], bool(f.get("waived")), f.get("subject") or _legacy_subject(f), f.get("constraint"))
             for f in doc["findings"]]
    return derive_verdict(facts, [gate_from_dict(g) for g in doc["gates"]])


def verdict_problem(doc: dict[str, Any], where: str) -> str | None:
    """One line naming ``where`` when the document's stated verdict is not the one its findings
    and gates (a merged document: its results and errors) give, else None."""
    derived = document_verdict(doc)
    stated = doc.get("verdict")
    if stated == derived:
        return None
    parts = "results and errors" if doc.get("kind") == MERGED_KIND else "findings and gates"
    return f"{where}: verdict {shorten(repr(stated), 40)} contradicts its {parts}, which give {derived!r}: refused"


def load_results(path: Path) -> list[dict[str, Any]]:
    """The result documents in a file: one result JSON, or every result of a merged document."""
    try:  # /dev/zero, a FIFO: never read (nor waited on)
        text = read_regular_text(path, str(path), missing="cannot read: No such file or directory")
    except UnreadableFile as exc:
        raise GateError(str(exc)) from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise GateError(f"{path}: not valid JSON: {exc}") from None
    merged = isinstance(doc, dict) and doc.get("kind") == MERGED_KIND
    if merged:
        results = doc.get("results")
        if not isinstance(results, list):
            raise GateError(f"{path}: results: expected a list of npu-gate results")
        if not isinstance(doc.get("errors") or [], list):
            raise GateError(f"{path}: errors: expected a list")
        docs = results
    else:
        docs = [doc]
    for i, d in enumerate(docs):
        where = f"{path}: results[{i}]" if len(docs) > 1 or d is not doc else str(path)
        if not isinstance(d, dict) or not {"name", "verdict", "profile", "summary"} <= d.keys():
            raise GateError(f"{where}: not an npu-gate result (run `npu-gate check --json`)")
        check_result(d, where)
    if merged and (problem := verdict_problem(doc, str(path))):  # the verdict its results add up to
        raise GateError(problem)
    return docs


def check_result(doc: dict[str, Any], where: str) -> None:
    """GateError unless ``doc`` matches the result schema. These files may come from another
    job or a fork's artifact, and the renderers show ids, verdicts and counts as written."""
    from npu_gate.validation import schema_problems

    if problems := schema_problems(doc, "result", where):
        more = [f"{where}: {len(problems) - 10} more problems"] if len(problems) > 10 else []
        raise GateError(*problems[:10], *more)
    if problem := verdict_problem(doc, where):
        raise GateError(problem)


def _partition(p: dict[str, Any]) -> PartitionResult:
    """A partition entry; one with the memory estimate (schema 1.7) keeps it."""
    return PartitionResult(id=p["id"], device=p["device"], nodes=p["nodes"], weight_bytes=p.get("weight_bytes"),
                           peak_activation_bytes=p.get("peak_activation_bytes"), at_peak=p.get("at_peak"),
                           memory_unknown=p.get("memory_unknown"), estimated="at_peak" in p)


def _legacy_subject(f: dict[str, Any]) -> str | None:
    """A result written before findings had a ``subject`` (schema < 1.6): a gate-exceeded
    finding's gate is the head of its message, as that version wrote it."""
    if f.get("rule") != "gate-exceeded" or "subject" in f:
        return None
    return str(f.get("message", "")).split(":", 1)[0]
