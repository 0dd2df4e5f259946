"""Target profiles: which ops a target runs and under which constraints.

A profile is reviewable JSON (schemas/profile.schema.json). Built-in ones live in
``npu_gate/profiles/<name>.json``; a contract may also name a path to its own.
A profile may ``extend`` another (built-in name or path): its ``ops`` entries replace
the base's, ``null`` removes one, and its ``limits`` keys override the base's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_gate.errors import ProfileError
from npu_gate.escape import shorten
from npu_gate.graph.source import inside, repository_of, usable_path
from npu_gate.profile.checks.registry import condition_problems, shape_problems
from npu_gate.resources import builtin_profile_names, profile_dir
from npu_gate.validation import read_document, schema_problems

# The longest chain of bases a profile may have (docs/target-profiles.md#extends). The built-in
# profiles extend at most one base, a user's chain (vendor, board, project, experiment) a few more;
# each base is read, schema-checked and merged, so the chain's cost is bounded too.
MAX_EXTENDS = 16
# lists a profile inherits whole unless it sets them
COMPILER_PASSES = ("eliminates", "lowers", "refuses", "standalone_qdq", "splits")
MEMORY_BUDGETS = ("sram_bytes", "dram_bytes", "weight_bytes")  # a profile's memory figures (docs/memory.md)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    source: str
    evidence: str  # illustrative | vendor-documentation | measured
    ops: dict[str, dict[str, Any]]
    sha256: str
    origin: str  # "builtin" or the path it was read from
    limits: dict[str, Any] = field(default_factory=dict)
    extends: list[str] = field(default_factory=list)  # the chain of bases, nearest first
    patterns: list[dict[str, Any]] = field(default_factory=list)  # fusion patterns (patterns.py)
    rank_adapters: dict[str, Any] | None = None  # adapters at graph inputs/outputs (adapters.py)
    base_origins: list[str] = field(default_factory=list)  # each base's ``origin``, in ``extends`` order
    unknown_ops: dict[str, str] = field(default_factory=dict)  # op -> why the source does not say
    # The dtype float tensors take on the target (None: the model's); the memory budget
    # {sram_bytes, dram_bytes, weight_bytes, evidence} its sources state (None: none stated).
    runtime_dtype: str | None = None
    memory: dict[str, Any] | None = None
    # The compiler's clean-up before placement, its op rewrites and the builds it refuses
    # (docs/target-profiles.md#eliminates, #refuses): None when the profile states none.
    eliminates: list[dict[str, Any]] | None = None
    lowers: list[dict[str, Any]] | None = None
    refuses: list[dict[str, Any]] | None = None
    # What the target does with a Q/DQ node onnxruntime puts in no QDQ unit (placement/qdq.py,
    # docs/quantization.md#units-onnxruntime-does-not-form): None when the profile states nothing.
    standalone_qdq: list[dict[str, Any]] | None = None
    # Nodes the compiler runs as several ops on several devices (docs/target-profiles.md#splits):
    # a MatMul head RKNN makes an NPU Conv, a CPU Transpose and an NPU Reshape.
    splits: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "evidence": self.evidence,
            "sha256": self.sha256,
            "builtin": self.origin == "builtin",
        }
        if self.extends:
            out["extends"] = list(self.extends)
        return out

    def document(self) -> dict[str, Any]:
        """The resolved profile (bases merged in) as profile JSON."""
        doc: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "evidence": self.evidence,
        }
        if self.limits:
            doc["limits"] = self.limits
        if self.runtime_dtype is not None:
            doc["runtime_dtype"] = self.runtime_dtype
        if self.memory is not None:
            doc["memory"] = self.memory
        doc |= placement_part(self.ops, self.patterns, self.rank_adapters)
        for key in COMPILER_PASSES:
            if getattr(self, key) is not None:
                doc[key] = getattr(self, key)
        if self.unknown_ops:
            doc["unknown_ops"] = self.unknown_ops
        return doc


def placement_part(
    ops: Mapping[str, Any], patterns: list[dict[str, Any]], rank_adapters: dict[str, Any] | None
) -> dict[str, Any]:
    """The end of a profile document: ``ops``, then ``patterns`` and ``rank_adapters`` when set."""
    doc: dict[str, Any] = {"ops": ops}
    if patterns:
        doc["patterns"] = patterns
    if rank_adapters:
        doc["rank_adapters"] = rank_adapters
    return doc


def resolve_ref(ref: str, base_dir: Path | None, where: str, root: Path | None = None) -> tuple[Path, str, str]:
    """(path, origin, label) of a built-in name or a profile file; with a ``root``, a file
    outside it (symlinks resolved) and outside the built-in profiles is refused unread."""
    if ref in builtin_profile_names():
        return profile_dir() / f"{ref}.json", "builtin", ref
    path = Path(ref)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    looks_like_path = ref.endswith((".json", ".yaml", ".yml")) or "/" in ref or "\\" in ref
    if not usable_path(ref) or not usable_path(str(path)):
        raise ProfileError(f"{where}: {shorten(ref)!r} cannot name a file (a NUL byte, or a name longer than the "
                           "file system allows)")
    if root is not None and not inside(path, root) and not inside(path, profile_dir()):
        raise ProfileError(f"{where}: {shorten(ref)!r} is outside the repository ({root}): only a built-in "
                           "profile or a file of the repository is read")
    if not path.is_file():
        known = ", ".join(builtin_profile_names())
        if looks_like_path:
            raise ProfileError(f"{where}: profile file {shorten(ref)!r} not found")
        from npu_gate.suggest import did_you_mean

        raise ProfileError(
            f"{where}: unknown profile {ref!r}{did_you_mean(ref, builtin_profile_names())} "
            f"(built-in: {known}; or a path to a .json file)"
        )
    return path, str(path), str(path)


def load_profile(
    ref: str, base_dir: Path | None = None, *, where: str = "profile", check_onnx: bool = True,
    root: Path | None = None, extended_by: int = 0,
) -> Profile:
    """Resolve ``ref`` as a built-in name, else as a path (relative to ``base_dir``).

    ``check_onnx=False`` skips checking op types and attribute names against onnx.defs
    (importing onnx costs a second): for a cache lookup, whose miss reloads fully.
    ``root``: the repository every profile file of the chain must lie in (a contract's); None: the
    file ``ref`` names is taken as given (a path on the command line) and its bases must lie in its
    own repository (``graph.source.repository_of``). ``extended_by``: how many profiles above this
    one extend it (``profile check`` reads a file's base on its own), counted in ``MAX_EXTENDS``.
    """
    path, origin, label = resolve_ref(ref, base_dir, where, root)
    if root is None and origin != "builtin":
        root = repository_of(path)
    return _load_file(path, origin=origin, label=label, chain=(), check_onnx=check_onnx, root=root,
                      depth=extended_by)


def _load_file(
    path: Path, *, origin: str, label: str, chain: tuple[Path, ...], check_onnx: bool = True,
    root: Path | None = None, depth: int = 0,
) -> Profile:
    if path.resolve() in chain:
        cycle = " -> ".join(str(p) for p in (*chain, path.resolve()))
        raise ProfileError(shorten(f"{label}: extends: cycle {cycle}", 2_000))
    doc = read_profile_document(path, label, builtin=origin == "builtin")
    base: Profile | None = None
    if doc.get("extends") is not None:
        if depth >= MAX_EXTENDS:
            raise ProfileError(f"{shorten(label)}: extends chain deeper than {MAX_EXTENDS}")
        base_path, base_origin, base_label = resolve_ref(
            doc["extends"], path.parent, f"{label}: extends", None if origin == "builtin" else root
        )
        base = _load_file(
            base_path, origin=base_origin, label=base_label, chain=(*chain, path.resolve()),
            check_onnx=check_onnx, root=root, depth=depth + 1,
        )
    # Built-in profiles are linted against onnx.defs by the test suite.
    problems = semantic_problems(doc, label, base, check_onnx=check_onnx and origin != "builtin")
    if problems:
        raise ProfileError(*problems)
    ops = {key: dict(value) for key, value in doc["ops"].items() if value is not None}
    limits = {k: v for k, v in doc.get("limits", {}).items() if v is not None}
    extends: list[str] = []
    base_origins: list[str] = []
    patterns = [dict(p) for p in doc.get("patterns", [])]
    adapters = doc.get("rank_adapters")
    unknown = dict(doc.get("unknown_ops", {}))
    runtime_dtype = doc.get("runtime_dtype")
    memory = doc.get("memory")
    passes = {key: doc.get(key) for key in COMPILER_PASSES}
    if base is not None:
        # the base's unknown ops stay unknown unless this profile claims them
        unknown = {k: v for k, v in base.unknown_ops.items() if doc["ops"].get(k) is None} | unknown
        if "runtime_dtype" not in doc:
            runtime_dtype = base.runtime_dtype
        if "memory" not in doc:
            memory = base.memory  # null in the profile removes the base's
        if "rank_adapters" not in doc:
            adapters = base.rank_adapters  # null in the profile removes the base's
        for key in COMPILER_PASSES:
            if key not in doc:
                passes[key] = getattr(base, key)  # null in the profile removes the base's
        # A pattern replaces the base's pattern of the same name; the base's others come first.
        mine = {p["name"] for p in patterns}
        patterns = [p for p in base.patterns if p["name"] not in mine] + patterns
        ops = {k: v for k, v in base.ops.items() if k not in doc["ops"]} | ops
        limits = {k: v for k, v in base.limits.items() if k not in doc.get("limits", {})} | limits
        extends = [base.name, *base.extends]
        base_origins = [base.origin, *base.base_origins]
    resolved = {
        "name": doc["name"],
        "description": doc["description"],
        "source": doc["source"],
        "evidence": doc["evidence"],
        "limits": limits,
        "ops": ops,
        "extends": extends,
    }
    if patterns:
        resolved["patterns"] = patterns  # profiles without patterns hash as before
    if adapters:
        resolved["rank_adapters"] = adapters
    if unknown:
        resolved["unknown_ops"] = unknown  # profiles without unknown ops hash as before
    if runtime_dtype is not None:  # profiles without them hash as before
        resolved["runtime_dtype"] = runtime_dtype
    if memory is not None:
        resolved["memory"] = memory
    resolved |= {key: value for key, value in passes.items() if value is not None}  # absent: hashes as before
    # A profile on its own hashes its document (as before extends existed); one that
    # extends another hashes the resolved profile, so a change in its base shows too.
    hashed = doc if base is None else resolved
    canonical = json.dumps(hashed, sort_keys=True, separators=(",", ":")).encode()
    return Profile(
        name=doc["name"],
        description=doc["description"],
        source=doc["source"],
        evidence=doc["evidence"],
        ops=ops,
        sha256=hashlib.sha256(canonical).hexdigest(),
        origin=origin,
        limits=limits,
        extends=extends,
        patterns=patterns,
        rank_adapters=adapters,
        base_origins=base_origins,
        unknown_ops=unknown,
        runtime_dtype=runtime_dtype,
        memory=memory,
        eliminates=passes["eliminates"],
        lowers=passes["lowers"],
        refuses=passes["refuses"],
        standalone_qdq=passes["standalone_qdq"],
        splits=passes["splits"],
    )


def read_profile_document(path: Path, label: str, *, builtin: bool = False) -> dict[str, Any]:
    """Parse and schema-check one profile file (its base is not read)."""
    try:
        doc = read_document(path, label)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    if is_calibration_record(doc):
        raise ProfileError(record_not_profile(path, label))
    # Built-in profiles are validated by the test suite; skipping jsonschema here keeps
    # `npu-gate inspect` lean. User profiles are always validated.
    problems = [] if builtin else schema_problems(doc, "profile", label)
    if problems:
        raise ProfileError(*problems)
    return doc  # type: ignore[no-any-return]


def is_calibration_record(doc: Any) -> bool:
    return isinstance(doc, dict) and str(doc.get("schema_version", "")).startswith("calibration-")


def record_not_profile(path: Path, label: str) -> str:
    """A calibration record given where a profile belongs: name the profile beside it, if any."""
    text = f"{label}: this is a calibration record (written by npu-gate profile calibrate), not a profile"
    if path.name.endswith(".calibration.json"):
        profile = path.with_name(path.name[:-len(".calibration.json")] + ".json")
        if profile.is_file():
            return f"{text}; the profile derived from it is {profile}"
    return text


def semantic_problems(
    doc: dict[str, Any], label: str, base: Profile | None, *, check_onnx: bool = True
) -> list[str]:
    """What the schema cannot say: unique constraint ids, a test in every constraint,
    removals only of ops the base has, and op types / attribute names ONNX knows."""
    problems = []
    for key, spec in doc["ops"].items():
        if spec is None:
            if base is None:
                problems.append(
                    f"{label}: ops.{key}: null removes an op, but the profile extends nothing"
                )
            elif key not in base.ops:
                problems.append(
                    f"{label}: ops.{key}: null removes an op that {base.name} does not have"
                )
            continue
        seen: set[str] = set()
        for i, c in enumerate(spec.get("constraints", [])):
            where = f"{label}: ops.{key}.constraints[{i}]"
            problems.extend(_repeated_id(where, c, seen))
            problems.extend(shape_problems(where, c))
            if "when" in c:
                problems.extend(condition_problems(f"{where}.when", c["when"]))
            for j, alternative in enumerate(c.get("any_of", [])):
                problems.extend(shape_problems(f"{where}.any_of[{j}]", alternative))
    problems.extend(pattern_problems(doc.get("patterns", []), label))
    problems.extend(split_problems(doc, label, base))
    for i, entry in enumerate(doc.get("splits") or []):
        for part in ("where", "constraints"):
            for j, c in enumerate(entry.get(part, [])):
                where = f"{label}: splits[{i}].{part}[{j}]"
                problems.extend(shape_problems(where, c))
                for k, alternative in enumerate(c.get("any_of", [])):
                    problems.extend(shape_problems(f"{where}.any_of[{k}]", alternative))
    problems.extend(
        f"{label}: unknown_ops.{key}: the op is also in ops; an op is either claimed or unknown"
        for key in doc.get("unknown_ops", {})
        if doc["ops"].get(key) is not None
    )
    problems.extend(refusal_problems(doc.get("refuses") or [], label))
    memory = doc.get("memory")
    if memory and all(memory.get(key) is None for key in MEMORY_BUDGETS) and not memory.get("layout"):
        problems.append(f"{label}: memory: states no budget ({', '.join(MEMORY_BUDGETS)}) and no layout; "
                        "state the figure its evidence gives, or remove memory")
    if not check_onnx:
        return problems
    from npu_gate.profile.vocabulary import onnx_problems

    errors, _ = onnx_problems(doc, label)
    return problems + errors


def split_problems(doc: dict[str, Any], label: str, base: Profile | None) -> list[str]:
    """Unique ``splits`` ids (a node's ``split`` and its finding name the entry), and each entry
    on an op of ``ops`` (the base's included): ``splits`` applies to a node placed on the NPU, so an
    entry for any other op never matches."""
    own = {key for key, spec in doc["ops"].items() if spec is not None}
    ops = own | ({key for key in base.ops if key not in doc["ops"]} if base is not None else set())
    problems = []
    seen: set[str] = set()
    for i, entry in enumerate(doc.get("splits") or []):
        where = f"{label}: splits[{i}]"
        if entry["id"] in seen:
            problems.append(f"{where}.id: duplicate split id {entry['id']!r}")
        seen.add(entry["id"])
        if entry["op"] not in ops:
            from npu_gate.suggest import did_you_mean

            problems.append(f"{where}.op: {entry['op']!r} is not in ops, so the entry never matches (a split "
                            f"applies to a node placed on the NPU){did_you_mean(entry['op'], ops)}")
    return problems


_OP_ONLY = ("opset_max", "min_outputs", "attribute")  # refusal keys of an op pattern


def refusal_problems(refuses: list[dict[str, Any]], label: str) -> list[str]:
    """Unique ids; an op pattern or a graph condition, not both; ``max`` for (only) opset-above."""
    problems = []
    seen: set[str] = set()
    for i, entry in enumerate(refuses):
        where = f"{label}: refuses[{i}]"
        problems.extend(_repeated_id(where, entry, seen))
        if ("op" in entry) == ("graph" in entry):
            problems.append(f"{where}: needs exactly one of op (a node pattern) or graph (a graph condition)")
        elif "graph" in entry and any(k in entry for k in _OP_ONLY):
            problems.append(f"{where}: {', '.join(k for k in _OP_ONLY if k in entry)} apply to an op pattern only")
        if (entry.get("graph") == "opset-above") != ("max" in entry):
            problems.append(f"{where}: max is the compiler's maximum opset: needed by graph opset-above, "
                            "and only there")
    return problems


def _repeated_id(where: str, c: dict[str, Any], seen: set[str]) -> list[str]:
    """A constraint whose id an earlier one of its list has (``seen``, which its id joins)."""
    repeated = c["id"] in seen
    seen.add(c["id"])
    return [f"{where}.id: duplicate constraint id {c['id']!r}"] if repeated else []


def pattern_problems(patterns: list[dict[str, Any]], label: str) -> list[str]:
    """Unique names, node references to earlier nodes, every node but the root read inside
    the pattern, declared tensor names, and tensor-only constraints on the fused op."""
    problems = []
    seen: set[str] = set()
    for i, pattern in enumerate(patterns):
        where = f"{label}: patterns[{i}]"
        if pattern["name"] in seen:
            problems.append(f"{where}.name: duplicate pattern name {pattern['name']!r}")
        seen.add(pattern["name"])
        nodes = pattern["nodes"]
        used: set[int] = set()
        names: set[str] = set()
        for k, node in enumerate(nodes):
            for j, item in enumerate(node.get("inputs", [])):
                if "node" in item:
                    if item["node"] >= k:
                        problems.append(f"{where}.nodes[{k}].inputs[{j}].node: {item['node']} is not an "
                                        f"earlier pattern node (producers come first)")
                    used.add(item["node"])
                elif "tensor" in item:
                    names.add(item["tensor"])
        unread = [k for k in range(len(nodes) - 1) if k not in used]
        if unread:
            problems.append(f"{where}.nodes: node(s) {unread} feed no later pattern node "
                            f"(the last node is the pattern's output)")
        for j, name in enumerate(pattern.get("inputs", [])):
            if name not in names:
                problems.append(f"{where}.inputs[{j}]: {name!r} is no {{\"tensor\": ...}} of the pattern")
        ids: set[str] = set()
        for j, c in enumerate(pattern.get("constraints", [])):
            at = f"{where}.constraints[{j}]"
            problems.extend(_repeated_id(at, c, ids))
            subjects = [c, *c.get("any_of", []), *([c["when"]] if "when" in c else [])]
            if any("attribute" in s for s in subjects):
                problems.append(f"{at}: the fused op has no attributes; use input/output subjects")
            if any("value" in s for s in subjects):
                problems.append(f"{at}: value tests are not evaluated on a fused op; match a pattern node's "
                                f"constant input with \"const\"")
            problems.extend(shape_problems(at, c))
    return problems
