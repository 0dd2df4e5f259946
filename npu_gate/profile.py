"""Target profiles: which ops a target runs and under which constraints.

A profile is reviewable JSON (schemas/profile.schema.json). Built-in ones live in
``npu_gate/profiles/<name>.json``; a contract may also name a path to its own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npu_gate.errors import ProfileError
from npu_gate.resources import builtin_profile_names, profile_dir
from npu_gate.validation import read_document, schema_problems


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    source: str
    evidence: str  # illustrative | vendor-documentation | measured
    ops: dict[str, dict[str, Any]]
    sha256: str
    origin: str  # "builtin" or the path it was read from

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "evidence": self.evidence,
            "sha256": self.sha256,
            "builtin": self.origin == "builtin",
        }


def load_profile(ref: str, base_dir: Path | None = None, *, where: str = "profile") -> Profile:
    """Resolve ``ref`` as a built-in name, else as a path (relative to ``base_dir``)."""
    if ref in builtin_profile_names():
        return _load_file(profile_dir() / f"{ref}.json", origin="builtin", label=ref)
    path = Path(ref)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    looks_like_path = ref.endswith((".json", ".yaml", ".yml")) or "/" in ref or "\\" in ref
    if not path.is_file():
        known = ", ".join(builtin_profile_names())
        if looks_like_path:
            raise ProfileError(f"{where}: profile file {ref!r} not found")
        raise ProfileError(
            f"{where}: unknown profile {ref!r} (built-in: {known}; or a path to a .json file)"
        )
    return _load_file(path, origin=str(path), label=str(path))


def _load_file(path: Path, *, origin: str, label: str) -> Profile:
    try:
        doc = read_document(path, label)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    # Built-in profiles are validated by the test suite; skipping jsonschema here keeps
    # `npu-gate inspect` lean. User profiles are always validated.
    problems = [] if origin == "builtin" else schema_problems(doc, "profile", label)
    if problems:
        raise ProfileError(*problems)
    problems = _semantic_problems(doc, label)
    if problems:
        raise ProfileError(*problems)
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return Profile(
        name=doc["name"],
        description=doc["description"],
        source=doc["source"],
        evidence=doc["evidence"],
        ops={key: dict(value) for key, value in doc["ops"].items()},
        sha256=hashlib.sha256(canonical).hexdigest(),
        origin=origin,
    )


def _semantic_problems(doc: dict[str, Any], label: str) -> list[str]:
    """What the schema cannot say: unique constraint ids, a test in every constraint."""
    problems = []
    tests = ("in", "not_in", "min", "max", "dtype", "rank", "dim", "constant", "static",
             "max_elements", "max_bytes")
    for key, spec in doc["ops"].items():
        seen: set[str] = set()
        for i, c in enumerate(spec.get("constraints", [])):
            where = f"{label}: ops.{key}.constraints[{i}]"
            if c["id"] in seen:
                problems.append(f"{where}.id: duplicate constraint id {c['id']!r}")
            seen.add(c["id"])
            if not any(t in c for t in tests):
                problems.append(f"{where}: no test (one of {', '.join(tests)})")
    return problems
