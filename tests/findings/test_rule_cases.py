"""Every rule's failing and passing case (tests/findings/cases.py), and every rule's doc.

The failing case gives the rule's findings with exactly the fields the table says and the exit
code it says; the passing case, its nearest neighbour, gives none of them. A rule without an
entry, or with two, fails the suite; so does a rule doc with an empty section."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from npu_gate.findings.catalog import DOCS
from npu_gate.findings.doc import SECTIONS
from npu_gate.rules import RULES
from tests.findings.cases import CASES, RuleCase, Scenario
from tests.helpers.common import CliRun, RunCli

# The prose of a finding; every other field of its JSON is compared exactly.
PROSE = ("message", "fix", "evidence_detail")


def _params() -> list[Any]:
    params = []
    for case in CASES:
        marks = [pytest.mark.torch] if case.torch else []
        marks += [pytest.mark.slow] if case.slow else []
        params.append(pytest.param(case, id=case.rule, marks=marks))
    return params


def run(run_cli: RunCli, folder: Path, scenario: Scenario) -> tuple[CliRun, dict[str, Any] | None]:
    """The scenario's command with ``--json``: the run and its result (None: none was written)."""
    args = scenario.build(folder)
    out = folder / "result.json"
    done = run_cli(*args, "--json", out, "-q")
    return done, json.loads(out.read_text(encoding="utf-8")) if out.exists() else None


def of_rule(result: dict[str, Any] | None, rule: str) -> list[dict[str, Any]]:
    assert result is not None, "no result was written"
    return [f for f in result["findings"] if f["rule"] == rule]


@pytest.mark.parametrize("case", _params())
def test_the_failing_case_gives_the_rules_findings(case: RuleCase, run_cli: RunCli, tmp_path: Path) -> None:
    done, result = run(run_cli, tmp_path, case.failing)
    assert done.code == case.failing.code, done.err
    if not RULES[case.rule].finding:  # contract-invalid: exit 2, a line on stderr, no result
        assert result is None
        expected = case.message.format(folder=tmp_path)
        assert any(line.startswith(expected) for line in done.err.splitlines()), done.err
        return
    found = of_rule(result, case.rule)
    assert [{k: v for k, v in f.items() if k not in PROSE} for f in found] == [
        {"rule": case.rule, **fields, "waived": False} for fields in case.findings]
    assert found[0]["message"].startswith(case.message), found[0]["message"]


@pytest.mark.parametrize("case", _params())
def test_the_passing_case_gives_none(case: RuleCase, run_cli: RunCli, tmp_path: Path) -> None:
    done, result = run(run_cli, tmp_path, case.passing)
    assert done.code == case.passing.code, done.err
    if not RULES[case.rule].finding:
        assert result is not None and "npu-gate: error:" not in done.err, done.err
        return
    assert of_rule(result, case.rule) == []


def test_every_rule_has_exactly_one_entry() -> None:
    entries = Counter(case.rule for case in CASES)
    assert sorted(entries.elements()) == sorted(RULES), "one entry per rule in tests/findings/cases.py"
    for case in CASES:
        assert case.message, case.rule  # an empty start would match any message
        # a finding rule's failing case names its findings; contract-invalid has none
        assert bool(case.findings) == RULES[case.rule].finding, case.rule


def test_every_rule_doc_has_every_section() -> None:
    assert list(DOCS) == list(RULES)
    for rule_id, doc in DOCS.items():
        assert doc.rule == rule_id
        empty = [key for key, _ in SECTIONS if not getattr(doc, key).strip()]
        assert empty == [], f"{rule_id}: empty sections {empty}"
        assert [heading for heading, _ in doc.sections()] == [heading for _, heading in SECTIONS]
