"""Read JSON/YAML documents and validate them against npu_gate's schemas.

Every problem becomes one line: ``FILE: JSON.PATH: message``. A schema ``pattern`` with an
``errorMessage`` beside it (an annotation, ignored by validators) is reported in those words
instead of the regular expression.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from npu_gate.errors import GateError
from npu_gate.escape import shorten
from npu_gate.files import MAX_DOCUMENT_BYTES, UnreadableFile, read_regular_text
from npu_gate.resources import SCHEMA_NAMES, load_schema

MAX_PROBLEM = 500  # characters of one schema problem line
# Arrays and objects nested deeper than this are refused (a contract or profile needs a handful
# of levels; a deeper one would only exhaust the parser's or the schema validator's recursion).
MAX_DEPTH = 64
# YAML aliases let a few lines stand for an exponential document (nine lists of nine aliases each:
# 9**9 values); past this many values once the aliases are expanded, a YAML file is refused unwalked.
MAX_YAML_VALUES = 1_000_000
# Documents a person writes: an integer field takes an int, never a float such as 2.0 (which
# JSON Schema counts as an integer, but which no shape or count can be).
STRICT_INTEGERS = ("contract", "profile")
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_path(parts: Iterable[Any]) -> str:
    """Render a jsonschema path deque as ``inputs[0].shape[2]`` (``(root)`` when empty)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(root)"


def read_document(path: Path, label: str) -> Any:
    """Parse a JSON (or, with PyYAML installed, YAML) file; raise ``error_cls``-free ValueError lines."""
    # /dev/zero, a FIFO: never read (nor waited on); a 300 MB "profile": refused unparsed; a name longer
    # than the file system allows: its line shortened
    try:
        text = read_regular_text(path, label, MAX_DOCUMENT_BYTES, "a contract, profile or record file")
    except UnreadableFile as exc:
        raise ValueError(shorten(str(exc), MAX_PROBLEM)) from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ValueError(
                f"{label}: YAML contracts need PyYAML (pip install 'npu-gate[yaml]')"
            ) from None
        try:
            document = yaml.load(text, Loader=_yaml_loader(yaml))  # a SafeLoader: plain data only
        except yaml.YAMLError as exc:
            raise ValueError(f"{label}: invalid YAML: {str(exc).splitlines()[0]}") from None
        except (RecursionError, ValueError) as exc:  # too deep; an integer of too many digits
            raise ValueError(f"{label}: invalid YAML: {_parse_problem(exc)}") from None
        if problem := _alias_problem(document):
            raise ValueError(f"{label}: invalid YAML: {problem}")
    else:
        return loads_json(text, label)
    if problem := _value_problem(document):
        raise ValueError(shorten(f"{label}: {problem}", MAX_PROBLEM))
    return document


def loads_json(text: str, label: str) -> Any:
    """Parse JSON text a user gave (``label``: the file it came from) as contracts and profiles are
    read: invalid JSON, nesting deeper than ``MAX_DEPTH``, an integer of too many digits, a
    non-finite number or a lone surrogate is one ValueError line naming the file (and the JSON path)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{label}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:
        raise ValueError(f"{label}: invalid JSON: {_parse_problem(exc)}") from None
    if problem := _value_problem(document):
        raise ValueError(shorten(f"{label}: {problem}", MAX_PROBLEM))
    return document


def _parse_problem(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return f"nested too deep to read (at most {MAX_DEPTH} levels)"
    if "integer string conversion" in str(exc):  # Python's int-str limit (3.11+)
        return f"an integer of more than {sys.get_int_max_str_digits()} digits"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _value_problem(document: Any) -> str | None:
    """``JSON.PATH: problem`` for the first value no contract or profile may hold: a
    non-finite number (JSON's ``NaN``/``Infinity``, YAML's ``.nan``/``.inf``, ``1e999``), a
    lone surrogate (``"\\ud800"``: not text), nesting deeper than ``MAX_DEPTH``. Walked
    without recursion, in document order."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, (dict, list)):
            if len(path) >= MAX_DEPTH:
                return f"{json_path(path)}: nested more than {MAX_DEPTH} levels deep"
            items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
            for key, _ in items if isinstance(value, dict) else ():
                if problem := _scalar_problem(key):  # a key is text too (YAML's may be a number)
                    return f"{json_path((*path, str(key)))}: key {problem}"
            stack.extend((item, (*path, key)) for key, item in reversed(items))
        elif problem := _scalar_problem(value):
            return f"{json_path(path)}: {problem}"
    return None


def _alias_problem(document: Any) -> str | None:
    """What YAML aliases make of ``document`` that no contract or profile may be: a list or
    mapping that contains itself, or more than ``MAX_YAML_VALUES`` values once expanded. Each
    distinct list or mapping is counted once (its expanded size kept by identity), so a bomb is
    measured in the time its text takes to read, never expanded."""
    sizes: dict[int, int] = {}  # id -> expanded number of values, once done
    open_ids: set[int] = set()  # the lists and mappings being counted: one met again is a cycle
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        value, children_done = stack.pop()
        if not isinstance(value, (dict, list)) or id(value) in sizes:
            continue
        items = list(value.values()) if isinstance(value, dict) else value
        containers = [item for item in items if isinstance(item, (dict, list))]
        if children_done:
            open_ids.discard(id(value))
            size = 1 + len(items) - len(containers) + sum(sizes[id(c)] for c in containers)
            if size > MAX_YAML_VALUES:
                return f"its aliases expand to more than {MAX_YAML_VALUES:,} values"
            sizes[id(value)] = size
            continue
        if id(value) in open_ids:
            return "an alias refers to a list or mapping that contains it"
        open_ids.add(id(value))
        stack.append((value, True))
        for item in containers:
            if id(item) in open_ids:
                return "an alias refers to a list or mapping that contains it"
            stack.append((item, False))
    return None


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        word = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return f"{word} is not allowed: numbers must be finite"
    if isinstance(value, str) and (found := _SURROGATE.search(value)):
        return f"invalid text: a lone surrogate (\\u{ord(found[0]):04x}) is not a character"
    return None


@cache
def _yaml_loader(yaml: Any) -> Any:
    """PyYAML's SafeLoader, except that dates stay strings: an unquoted ``expires:
    2027-03-01`` is the same text as in JSON, not a date object the schema rejects."""
    timestamp = "tag:yaml.org,2002:timestamp"

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != timestamp]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return Loader


def schema_problems(document: Any, schema_name: str, label: str) -> list[str]:
    """All schema violations of ``document``, sorted by location, one line each."""
    validator = _validator_class(schema_name in STRICT_INTEGERS)(load_schema(schema_name), registry=schema_registry())
    errors = sorted(validator.iter_errors(document), key=lambda e: (list(map(str, e.path)), e.message))
    lines = []
    for err in errors:
        # oneOf/anyOf failures say little on their own: name the alternatives' first complaint.
        message = err.message
        if err.validator == "pattern" and isinstance(err.schema, dict) and "errorMessage" in err.schema:
            message = f"{err.instance!r}: {err.schema['errorMessage']}"  # the schema says it in words
        elif err.validator == "maxItems" and isinstance(err.instance, list):  # not the whole list again
            message = f"{len(err.instance)} items, at most {err.validator_value}"
        elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
            message += _nearest_keys(err.instance, err.schema)
        elif err.validator in ("oneOf", "anyOf") and err.context:
            best = sorted(err.context, key=lambda e: len(e.path))[0]
            message = f"{message} ({best.message})"
        # a problem quotes the value: a megabyte-long one must not become a megabyte-long line
        lines.append(shorten(f"{label}: {json_path(err.absolute_path)}: {message}", MAX_PROBLEM))
    return lines


def _nearest_keys(instance: dict[str, Any], schema: Any) -> str:
    """"Did you mean" for the keys an object may not have: the nearest keys it may."""
    import re

    from npu_gate.suggest import did_you_mean

    if not isinstance(schema, dict):
        return ""
    allowed = list(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    unexpected = [k for k in instance if k not in allowed and not any(re.search(p, k) for p in patterns)]
    hints = [(k, did_you_mean(k, [a for a in allowed if a not in instance])) for k in unexpected]
    if len(unexpected) == 1:
        return hints[0][1]
    return "".join(f"; {k!r}: {hint[2:]}" for k, hint in hints if hint)


def read_valid_document(path: Path, schema_name: str, error: type[GateError]) -> Any:
    """The document at ``path``, valid against the named schema; otherwise ``error`` with
    one line per problem (file, JSON path, message)."""
    label = str(path)
    try:
        document = read_document(path, label)
    except ValueError as exc:
        raise error(str(exc)) from None
    problems = schema_problems(document, schema_name, label)
    if problems:
        raise error(*problems)
    return document


@cache
def _validator_class(strict_integers: bool) -> Any:
    """Draft 2020-12; with ``strict_integers``, ``"type": "integer"`` takes ints only (not 2.0)."""
    from jsonschema import Draft202012Validator, validators

    if not strict_integers:
        return Draft202012Validator
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool))
    return validators.extend(Draft202012Validator, type_checker=checker)


@cache
def schema_registry() -> Any:
    """The bundled schemas by ``$id``, so that one can refer to another's definitions
    (the calibration record's candidate patterns are checked as profile patterns)."""
    from referencing import Registry, Resource

    schemas = [load_schema(name) for name in SCHEMA_NAMES]
    return Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)
