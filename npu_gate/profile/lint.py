"""``npu-gate profile check``: a profile file's problems, one line each with its JSON path.

Schema errors, then the ONNX vocabulary (``vocabulary.onnx_problems``: unknown ops and
attributes), then constraint semantics and ``extends``; and ops its own limits rule out.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from npu_gate.profile.vocabulary import onnx_problems, split_key

if TYPE_CHECKING:
    from npu_gate.profile.spec import Profile


class FileCheck(NamedTuple):
    errors: list[str]
    warnings: list[str]
    deferred: bool = False  # schema errors: semantics and the base are checked once they are fixed


def check_file(path: Path) -> FileCheck:
    """Errors and warnings for a profile file: schema (with JSON paths), its base, then
    semantics and ONNX names. A file that fails its schema also gets the ONNX names checked
    wherever it can be read; the semantics and the base wait for a valid file (``deferred``).
    Raises ProfileError only when the file cannot be read."""
    from npu_gate.errors import ProfileError
    from npu_gate.graph.source import repository_of
    from npu_gate.profile.spec import is_calibration_record, load_profile, record_not_profile, semantic_problems
    from npu_gate.validation import read_document, schema_problems

    label = str(path)
    try:
        doc = read_document(path, label)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    if is_calibration_record(doc):  # say what it is, not the profile schema's errors about it
        return FileCheck([record_not_profile(path, label)], [])
    errors = schema_problems(doc, "profile", label)
    if errors:
        lint, warnings = onnx_problems(doc, label) if isinstance(doc, dict) else ([], [])
        return FileCheck(errors + lint, warnings, deferred=True)
    base = None
    if doc.get("extends") is not None:
        try:
            base = load_profile(doc["extends"], path.parent, where=f"{label}: extends",
                                root=repository_of(path), extended_by=1)
        except ProfileError as exc:
            # The ONNX names do not depend on the base: a broken `extends` must not hide a
            # `Cnov` (the semantics, which compare with the base, wait for it).
            lint, warnings = onnx_problems(doc, label)
            return FileCheck(exc.problems + lint, warnings)
    errors = semantic_problems(doc, label, base)
    _, warnings = onnx_problems(doc, label)
    if not errors:
        # the merged profile (base ops and limits included); an absolute path is never a built-in name
        merged = load_profile(str(path.resolve()), where=label, check_onnx=False)
        warnings += unreachable_ops(merged, label) + idle_lowerings(merged, label)
    return FileCheck(errors, warnings)


def unreachable_ops(profile: Profile, label: str) -> list[str]:
    """Ops (its own or its base's) in a domain the profile's ``limits.domains`` leaves out:
    every such node falls back to CPU on ``limit-domains``, whatever the op's entry says."""
    domains = profile.limits.get("domains")
    if domains is None:
        return []
    allowed = {"" if d == "ai.onnx" else d for d in domains}
    problems = []
    for key in profile.ops:
        domain, op = split_key(key)
        if domain not in allowed and (domain, op) != ("", "Constant"):  # Constant nodes are folded
            problems.append(f"{label}: ops.{key}: domain {domain or 'ai.onnx'} is not in limits.domains "
                            f"{sorted(domains)}; every such node falls back to CPU (limit-domains)")
    return problems


def idle_lowerings(profile: Profile, label: str) -> list[str]:
    """``lowers`` entries that change nothing: the op they lower into is not in ``ops`` (its nodes
    stay unsupported), or the op itself is (its own entry places it)."""
    problems = []
    for i, entry in enumerate(profile.lowers or []):
        if entry["to"] not in profile.ops:
            problems.append(f"{label}: lowers[{i}]: {entry['op']} lowers into {entry['to']}, which is not in ops; "
                            f"its nodes stay unsupported")
        elif entry["op"] in profile.ops:
            problems.append(f"{label}: lowers[{i}]: {entry['op']} has its own ops entry, which places it; "
                            "the lowering is never used")
    return problems
