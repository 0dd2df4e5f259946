"""The constraint vocabulary's registry (npu_gate/profile/checks/registry.py) and the profile schema
name the same keys, both ways: a check with no schema entry cannot be written in a valid profile,
and a schema key no check owns would be accepted and silently test nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from npu_gate.profile.checks.base import SUBJECTS, FormCheck, ValueCheck
from npu_gate.profile.checks.registry import CHECKS, KINDS, META, TESTS
from npu_gate.profile.checks.value import Value
from tests.helpers.common import REPO

SCHEMA = json.loads((REPO / "schemas" / "profile.schema.json").read_text(encoding="utf-8"))["$defs"]


def _owned(kinds: list[type[Any]]) -> set[str]:
    return {key for kind in kinds for key in (*kind.keys, *kind.modifiers)}


def _diff(schema: set[str], registry: set[str]) -> tuple[list[str], list[str]]:
    """(keys only the schema has, keys only the registry has)."""
    return sorted(schema - registry), sorted(registry - schema)


def test_a_constraint_has_the_keys_the_registry_owns() -> None:
    schema = set(SCHEMA["constraint"]["properties"])
    assert _diff(schema, {*META, *SUBJECTS, *_owned(list(KINDS))}) == ([], [])


def test_an_any_of_alternative_has_the_keys_of_the_checks_on_a_subject() -> None:
    schema = set(SCHEMA["test"]["properties"])
    on_subject = [kind for kind in KINDS if not issubclass(kind, FormCheck)]
    assert _diff(schema, {*SUBJECTS, *_owned(on_subject)}) == ([], [])


def test_a_value_test_has_the_keys_of_the_value_checks_on_constants() -> None:
    schema = set(SCHEMA["value_test"]["properties"])
    on_constants = [kind for kind in KINDS if issubclass(kind, ValueCheck) and kind.on_constants]
    assert _diff(schema, {*Value.spec_keys, *_owned(on_constants)}) == ([], [])


def test_the_registry_lists_each_key_once_in_the_schemas_order_of_tests() -> None:
    """``profile check`` lists TESTS in this order; every key belongs to exactly one check."""
    assert len(TESTS) == len(set(TESTS)) == sum(len(kind.keys) for kind in KINDS)
    assert all(CHECKS[key] is kind for kind in KINDS for key in kind.keys)
    schema_order = [k for k in SCHEMA["constraint"]["properties"] if k in CHECKS]
    assert sorted(schema_order) == sorted(TESTS)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__)
def test_every_check_has_words_and_owns_at_least_one_key(kind: type[Any]) -> None:
    assert kind.keys
    assert "phrases" in vars(kind)  # its own words, not the base's NotImplementedError
    assert "parse" in vars(kind)
