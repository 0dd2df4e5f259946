"""The `matches` test (issue 22): a string attribute, whitespace removed, against regular
expressions (Einsum equations); its profile checks and its words."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate.graph.facts import NodeFacts
from npu_gate.profile.constraints import evaluate, matches
from npu_gate.render.profile_pages import describe_test
from tests.helpers.common import CliRun

Run = Callable[..., CliRun]
MATMUL = r"([a-z]*)([a-z])([a-z]),\1\3([a-z])->\1\2\4"
FORMS = {"id": "einsum-forms", "attribute": "equation", "matches": [MATMUL]}


@pytest.mark.parametrize(("value", "expected"), [
    ("ij,jk->ik", True),
    ("bhqk,bhkd->bhqd", True),
    (" b h i j , b h j d -> b h i d ", True),  # whitespace is removed first
    ("b\th i j,b h j d->b h i d", True),
    ("bhqk,bhkd->bhdq", False),  # the result's last two letters swapped
    ("bhqk,bnkd->bhqd", False),  # another batch letter in the second operand
    ("...ij,...jk->...ik", False),
    ("ij,jk->ik,", False),  # a full match, not a prefix
    ("", False),
    (None, False),  # absent
    (7, False),  # not a string
])
def test_matches_removes_whitespace_and_needs_a_full_match(value: Any, expected: bool) -> None:
    assert matches([MATMUL], value) is expected


def _node(equation: str | None) -> NodeFacts:
    attributes = {} if equation is None else {"equation": equation}
    return NodeFacts(index=0, name="e", op_type="Einsum", domain="", inputs=["a", "b"], outputs=["y"],
                     attributes=attributes, defaulted=[])


def test_a_failed_match_says_the_value_and_the_forms_allowed() -> None:
    assert evaluate([FORMS], _node("bhqk,bhkd->bhqd"), {}, set()) == []
    [failure] = evaluate([FORMS], _node("bnc,ck->bnk"), {}, set())
    assert (failure.constraint, failure.actual, failure.allowed) == ("einsum-forms", "bnc,ck->bnk",
                                                                     {"matches": [MATMUL]})
    assert failure.message == "attribute equation bnc,ck->bnk matches none of the forms allowed"
    [absent] = evaluate([FORMS], _node(None), {}, set())
    assert (absent.actual, absent.message) == ("unknown", "attribute equation is absent and has no default")


def test_matches_in_words() -> None:
    assert describe_test(FORMS) == f"attribute equation: without spaces, matches one of `{MATMUL}`"


def _write(tmp_path: Path, constraints: list[dict[str, Any]]) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"name": "p", "description": "d", "source": "s", "evidence": "illustrative",
                                "ops": {"Einsum": {"constraints": constraints}}}), encoding="utf-8")
    return path


def test_profile_check_refuses_a_broken_pattern_and_matches_on_a_tensor(tmp_path: Path, run_cli: Run) -> None:
    path = _write(tmp_path, [{"id": "a", "attribute": "equation", "matches": ["([a-z]"]},
                             {"id": "b", "input": 0, "matches": [MATMUL]}])
    r = run_cli("profile", "check", path)
    where = f"npu-gate: error: {path}: ops.Einsum.constraints"
    assert (r.code, r.err.splitlines()) == (1, [
        f"{where}[0].matches[0]: not a regular expression: missing ), unterminated subpattern at position 0",
        f"{where}[1].matches: matches tests a string attribute (an Einsum equation); it needs attribute"])


def test_an_empty_matches_is_a_schema_error(tmp_path: Path, run_cli: Run) -> None:
    r = run_cli("profile", "check", _write(tmp_path, [{"id": "c", "attribute": "equation", "matches": []}]))
    assert r.code == 1 and "ops.Einsum.constraints[0].matches: [] should be non-empty" in r.out + r.err


def test_profile_check_accepts_the_forms(tmp_path: Path, run_cli: Run) -> None:
    r = run_cli("profile", "check", _write(tmp_path, [FORMS]))
    assert r.code == 0, r.err


def test_the_page_keeps_arrows_in_code_and_escapes_angle_brackets_outside(tmp_path: Path, run_cli: Run) -> None:
    """A code span shows an entity literally, so `->` stays `->` there; outside code < and > are escaped."""
    path = _write(tmp_path, [{**FORMS, "message": "<b>bold</b> `a->b` a->b", "fix": "`x <i>"}])
    r = run_cli("profile", "show", str(path), "--format", "markdown")
    assert r.code == 0, r.err
    [row] = [line for line in r.out.splitlines() if line.startswith("| `Einsum` |")]
    assert f"`{MATMUL}`" in row
    assert "“&lt;b&gt;bold&lt;/b&gt; `a->b` a-&gt;b”" in row
    assert "`x &lt;i&gt;" in row  # an unpaired backtick opens no code span: everything escaped
