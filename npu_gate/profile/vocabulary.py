"""The ONNX vocabulary a profile is written in: op types and attribute names from the ONNX op schemas.

A typo must not silently allow everything: ``"Cnov"`` names no op, so its constraints
would never run; ``"stride"`` names no Conv attribute, so its test would always see an
absent value. Ops in domains that ``onnx.defs`` does not describe (``com.microsoft``,
vendor domains) cannot be checked here and are reported as warnings.

The lint also reads a profile that fails its schema: it checks what has the expected shape
(an op entry that is an object, an attribute name that is a string...) and skips the rest,
which the schema errors already name. ``profile check`` reports both in one run.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache
from typing import Any

from npu_gate.profile.checks.base import tensor_index
from npu_gate.profile.checks.registry import KINDS
from npu_gate.suggest import did_you_mean

ONNX_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training")


@dataclass(frozen=True)
class OpInfo:
    attributes: frozenset[str]
    max_input: int
    max_output: int


@cache
def _schemas() -> dict[tuple[str, str], OpInfo]:
    """(domain, op_type) -> what any opset version of the op allows."""
    import onnx.defs

    merged: dict[tuple[str, str], tuple[set[str], int, int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        key = (schema.domain, schema.name)
        attrs, max_in, max_out = merged.get(key, (set(), 0, 0))
        attrs.update(schema.attributes)
        merged[key] = (attrs, max(max_in, schema.max_input), max(max_out, schema.max_output))
    return {k: OpInfo(frozenset(a), i, o) for k, (a, i, o) in merged.items()}


def split_key(key: str) -> tuple[str, str]:
    """``Conv`` -> ("", "Conv"); ``com.microsoft::FusedConv`` -> ("com.microsoft", "FusedConv")."""
    if "::" in key:
        domain, op = key.split("::", 1)
        return ("" if domain == "ai.onnx" else domain), op
    return "", key


def known_onnx_domain(domain: str) -> bool:
    return domain in ONNX_DOMAINS


def _objects(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The (index, item) pairs of a list that are objects; nothing when ``value`` is not a list."""
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)] if isinstance(value, list) else []


def onnx_problems(doc: dict[str, Any], label: str) -> tuple[list[str], list[str]]:
    """(errors, warnings) about op keys and the attribute names and tensor indices they use."""
    errors: list[str] = []
    warnings: list[str] = []
    schemas = _schemas()
    ops = doc.get("ops")
    for key, spec in (ops.items() if isinstance(ops, dict) else []):
        if not isinstance(spec, dict):
            continue  # null removes a base op; anything else is a schema error
        domain, op = split_key(key)
        where = f"{label}: ops.{key}"
        if not known_onnx_domain(domain):
            warnings.append(
                f"{where}: domain {domain} is not described by onnx.defs; "
                "op type and attribute names not checked"
            )
            continue
        info = schemas.get((domain, op))
        if info is None:
            errors.append(
                f"{where}: unknown op type {op!r} in domain {domain or 'ai.onnx'}"
                + _did_you_mean(op, [name for d, name in schemas if d == domain])
            )
            continue
        for i, c in _objects(spec.get("constraints")):
            tests = [(f"{where}.constraints[{i}]", c)]
            tests += [(f"{where}.constraints[{i}].any_of[{j}]", a) for j, a in _objects(c.get("any_of"))]
            if isinstance(c.get("when"), dict):  # a misspelt condition would never hold
                tests.append((f"{where}.constraints[{i}].when", c["when"]))
            for at, test in tests:
                errors.extend(_test_problems(at, op, info, test))
    errors.extend(_pattern_problems(doc.get("patterns"), label, schemas))
    errors.extend(_split_problems(doc.get("splits"), label, schemas))
    unknown = doc.get("unknown_ops")
    for key in unknown if isinstance(unknown, dict) else []:
        domain, op = split_key(key)
        if known_onnx_domain(domain) and (domain, op) not in schemas:
            errors.append(f"{label}: unknown_ops.{key}: unknown op type {op!r} in domain {domain or 'ai.onnx'}"
                          + _did_you_mean(op, [name for d, name in schemas if d == domain]))
    return errors, warnings


def _pattern_problems(patterns: Any, label: str, schemas: dict[tuple[str, str], OpInfo]) -> list[str]:
    """Pattern node op types and attribute names, checked like the ops' (other domains skipped)."""
    errors = []
    for i, pattern in _objects(patterns):
        for k, node in _objects(pattern.get("nodes")):
            where = f"{label}: patterns[{i}].nodes[{k}]"
            if not isinstance(node.get("op"), str):
                continue
            domain, op = split_key(node["op"])
            if not known_onnx_domain(domain):
                continue
            info = schemas.get((domain, op))
            if info is None:
                errors.append(f"{where}.op: unknown op type {op!r}"
                              + _did_you_mean(op, [name for d, name in schemas if d == domain]))
                continue
            attributes = node.get("attributes")
            for name in attributes if isinstance(attributes, dict) else []:
                errors.extend(_test_problems(f"{where}.attributes", op, info, {"attribute": name}))
    return errors


def _split_problems(splits: Any, label: str, schemas: dict[tuple[str, str], OpInfo]) -> list[str]:
    """The op types a ``splits`` entry matches on: its ``op`` and its ``context``'s producer and
    reader ops. A misspelt one (``Cnov``) would make the entry silently never match."""
    errors = []
    for i, entry in _objects(splits):
        where = f"{label}: splits[{i}]"
        named = [(f"{where}.op", entry.get("op"))]
        context = entry.get("context")
        if isinstance(context, dict):
            producers = context.get("producers")
            if isinstance(producers, dict):
                named.append((f"{where}.context.producers.op", producers.get("op")))
            readers = context.get("readers")
            named += [(f"{where}.context.readers[{j}]", op) for j, op in enumerate(readers)] if isinstance(
                readers, list) else []
        for at, key in named:
            if not isinstance(key, str):
                continue  # a schema error
            domain, op = split_key(key)
            if known_onnx_domain(domain) and (domain, op) not in schemas:
                errors.append(f"{at}: unknown op type {op!r} in domain {domain or 'ai.onnx'}"
                              + did_you_mean(op, [name for d, name in schemas if d == domain]))
    return errors


def _test_problems(where: str, op: str, info: OpInfo, test: dict[str, Any]) -> list[str]:
    """The attribute names and tensor indices a test (or a ``when``) names, each kind of check
    saying which it refers to (``onnx_attributes``, ``onnx_inputs``)."""
    out = []
    names = [(f"{where}.attribute", test["attribute"])] if isinstance(test.get("attribute"), str) else []
    names += [(f"{where}{suffix}", name) for kind in KINDS for suffix, name in kind.onnx_attributes(test)]
    for at, name in names:
        if name not in info.attributes:
            out.append(
                f"{at}: {op} has no attribute {name!r}"
                + _did_you_mean(name, sorted(info.attributes))
                + f"; its attributes: {', '.join(sorted(info.attributes)) or 'none'}"
            )
    indices = [(f"{where}.{kind}", kind, tensor_index(test.get(kind))) for kind in ("input", "output")]
    indices += [(f"{where}{suffix}", "input", index) for kind in KINDS for suffix, index in kind.onnx_inputs(test)]
    for at, kind, index in indices:
        limit = info.max_input if kind == "input" else info.max_output
        if index is not None and index >= limit:
            out.append(f"{at}: {op} has at most {limit} {kind}s; index {index} does not exist")
    return out


def _did_you_mean(word: str, known: list[str]) -> str:
    """`` (did you mean 'x'?)`` with the closest of ``known`` to a misspelt ``word``, or nothing."""
    hint = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""
