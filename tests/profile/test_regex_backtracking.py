"""Profile `matches` patterns cannot hang the gate (issue 43 item 4): ``re`` cannot be interrupted,
so a pattern that can match one text in more than one way (what makes a backtracking matcher
take exponential or high polynomial time) is refused when the profile loads, patterns and the
texts matched are bounded in length, and what is accepted matches a text of the longest allowed
length at once."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from npu_gate.calibrate.sweeps.einsum import EINSUM_FORMS
from npu_gate.graph.facts import NodeFacts
from npu_gate.profile.checks.backtracking import AMBIGUOUS, EMPTY_REPEAT, MAX_PATTERN, problem
from npu_gate.profile.checks.matches import MAX_TEXT, matches
from npu_gate.profile.constraints import evaluate
from npu_gate.resources import profile_dir
from tests.helpers.common import CliRun
from tests.helpers.hook_fixtures import write_onnx_contract

ISSUE = "([a-z,>-]*)*!"  # the issue's pattern: `check --timeout 10` still ran at 60 s
# A 74-character Einsum equation (the issue's length): the issue's pattern never ends on it.
EQUATION = "abcdefghij,bcdefghijk,cdefghijkl,defghijklm,efghijklmn,fghijklmno->abcdefg"
MATMUL = EINSUM_FORMS["matmul"]


def _builtin_patterns() -> list[str]:
    """Every `matches` pattern of the built-in profiles."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "matches" and isinstance(value, list):
                    found.extend(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted(profile_dir().glob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return sorted(set(found))


BUILTIN = _builtin_patterns()

SAFE = [
    *EINSUM_FORMS.values(),  # what `profile calibrate` writes: the built-in profiles' (qnn-htp-fp16, -qdq)
    "ij,jk->ik",
    r"([a-z]+,)*[a-z]+->[a-z]+",  # a repeated part that ends on a letter its next repetition cannot start with
    r"(,[a-z]+)*",
    r"(a+b)*",
    r"(a|ab)*c",  # alternatives under a repeat that still read each text one way
    r"(?:ab|cd)*",
    r"[a-z]{1,3}",
    r"[a-z]{2,10}",
    r"a{3}b{2,}",
    r"^[a-z]{1,52}(,[a-z]{1,52})*->[a-z]{0,52}$",
    r"[^,]*,[^,]*",
    r"\d+\.\d+",
    r"(?i)[a-z]+,[a-z]+",
    r"(?=[a-z])[a-z]+",
    r"(?P<batch>[a-z]+)-(?P=batch)",
    r"[\]a-]+",
    r"\x41+\u0042\N{LATIN SMALL LETTER A}",
    r"[a-z]?[a-z]?",  # two ways to read "a", but they never meet again: no more ways on longer texts
]

UNSAFE = [
    (ISSUE, EMPTY_REPEAT),  # a repeated part that can match nothing
    ("(a+)+", AMBIGUOUS),  # nested quantifiers
    ("(a{1,2})*", AMBIGUOUS),
    ("(a|a)*", AMBIGUOUS),  # overlapping alternatives under a repeat
    ("((a|a)b)*c", AMBIGUOUS),
    (r"(\d|[0-9])+", AMBIGUOUS),
    ("(?i)(A|a)*", AMBIGUOUS),  # the same letter once case is ignored
    ("(a+ba+)*", AMBIGUOUS),  # a repetition's end and the next one's start read the same letters
    ("([a-z]+.)*", AMBIGUOUS),
    ("a*a*", AMBIGUOUS),  # adjacent quantifiers: polynomial
    (r"\w*_\w*", AMBIGUOUS),
    ("[a-z]*[a-z]*!", AMBIGUOUS),
    (r"(.*),\1", AMBIGUOUS),  # a backreference reads as a copy of its group
    ("(a|a){1,100}", AMBIGUOUS),  # bounded, but 2^100 ways
    ("(?:ab|ab)" * 20 + "c", AMBIGUOUS),  # no repeat at all: 2^20 ways
    ("[a-z]{0,3}" * 12 + "!", AMBIGUOUS),
    ("(?=(a+)+)b", AMBIGUOUS),  # inside a lookahead
    ("(a*)*", EMPTY_REPEAT),
    ("(a?)*", EMPTY_REPEAT),
    ("(([a-z]?)*,)+", EMPTY_REPEAT),
    ("(a|)+", EMPTY_REPEAT),
    ("(?x) a", "is verbose ((?x)), which the backtracking check does not read; write it without"),
    ("a" * (MAX_PATTERN + 1), f"is {MAX_PATTERN + 1} characters long, over the {MAX_PATTERN} allowed"),
]


def _texts(pattern: str) -> list[str]:
    """Long texts that make a backtracking matcher try hard: repetitions of what the pattern reads,
    each failing at its end."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    texts = [letters[i % 26] * MAX_TEXT for i in range(3)]
    texts += [(letters * 40)[:MAX_TEXT - 1] + "!", ("a," * MAX_TEXT)[:MAX_TEXT - 1] + "!",
              ("ab,bc->" * MAX_TEXT)[:MAX_TEXT], EQUATION, EQUATION + "!"]
    return texts


def test_the_built_in_profiles_patterns_are_the_calibration_forms() -> None:
    assert sorted(EINSUM_FORMS.values()) == BUILTIN  # in SAFE: all accepted


@pytest.mark.parametrize("pattern", SAFE)
def test_a_pattern_that_reads_each_text_one_way_is_accepted_and_fast(pattern: str) -> None:
    assert problem(pattern) is None
    compiled = re.compile(pattern)
    for text in _texts(pattern):
        start = time.perf_counter()
        compiled.fullmatch(text)
        assert time.perf_counter() - start < 0.5, (pattern, text[:20])


@pytest.mark.parametrize(("pattern", "why"), UNSAFE)
def test_a_pattern_that_can_backtrack_for_long_is_refused(pattern: str, why: str) -> None:
    re.compile(pattern)  # valid Python: refused for its backtracking only
    assert problem(pattern) == why


def test_the_refusal_is_not_hollow() -> None:
    """What the check refuses is slow indeed: the issue's pattern on 22 characters already takes
    a measurable time, doubling with each one more (the issue's 74 would take years)."""
    compiled = re.compile(ISSUE)
    start = time.perf_counter()
    compiled.fullmatch("a" * 18)
    short = time.perf_counter() - start
    start = time.perf_counter()
    compiled.fullmatch("a" * 21)
    assert time.perf_counter() - start > 4 * short


def test_the_check_of_a_large_pattern_is_bounded() -> None:
    """A pattern whose check would walk too many states is refused, quickly."""
    pattern = "(?:" + "|".join(f"{c}{c.upper()}" for c in "abcdefghijklmnopqrstuvwxyz" * 3) + ")*"
    start = time.perf_counter()
    assert problem(pattern) in (AMBIGUOUS, "is too complex to check for backtracking (simplify it)")
    assert problem("(?:[a-z]|[0-9]){250}") == "is too complex to check for backtracking (over 400 character positions)"
    assert time.perf_counter() - start < 2


def _node(equation: str) -> NodeFacts:
    return NodeFacts(index=0, name="e", op_type="Einsum", domain="", inputs=["a", "b"], outputs=["y"],
                     attributes={"equation": equation}, defaulted=[])


def test_a_text_over_the_bound_is_not_matched_and_fails_the_check() -> None:
    long = ",".join(["abc"] * 300) + "->abc"  # 1,204 characters: no real model's equation is this long
    assert len(long) > MAX_TEXT and len(EQUATION) == 74
    assert not matches([r"[a-z,>-]*"], long)
    assert matches([r"[a-z,>-]*"], long[-MAX_TEXT:])  # the same pattern, within the bound
    [failure] = evaluate([{"id": "forms", "attribute": "equation", "matches": [r"[a-z,>-]*"]}], _node(long), {}, set())
    assert (failure.actual, failure.message) == (
        f"{len(long)} characters",
        f"attribute equation is {len(long)} characters long, over the {MAX_TEXT} a pattern is matched against")
    assert evaluate([{"id": "forms", "attribute": "equation", "matches": [MATMUL]}], _node("bhqk,bhkd->bhqd"),
                    {}, set()) == []


def _profile(tmp_path: Path, patterns: list[str]) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({
        "name": "p", "description": "d", "source": "s", "evidence": "illustrative",
        "ops": {"Einsum": {"constraints": [{"id": "forms", "attribute": "equation", "matches": patterns}]}}}),
        encoding="utf-8")
    return path


def test_profile_check_names_each_refused_pattern(tmp_path: Path, run_cli: Any) -> None:
    path = _profile(tmp_path, [MATMUL, ISSUE, "x" * 300, "(a?)*"])
    r: CliRun = run_cli("profile", "check", path)
    where = f"npu-gate: error: {path}: ops.Einsum.constraints[0].matches"
    assert (r.code, r.err.splitlines()) == (1, [
        f"{where}[1]: the pattern {EMPTY_REPEAT}",
        f"{where}[2]: the pattern is 300 characters long, over the {MAX_PATTERN} allowed",
        f"{where}[3]: the pattern {EMPTY_REPEAT}"])


def test_check_refuses_the_issues_profile_at_once(tmp_path: Path, run_cli: Any) -> None:
    """The issue's run: a contract whose profile (a file of the PR) holds the pattern is a profile
    error, one line, exit 2, before any model is read."""
    folder = tmp_path / "m"
    folder.mkdir()
    _profile(folder, [ISSUE])
    contract = write_onnx_contract(folder, target={"profile": "p.json"})
    start = time.monotonic()
    r: CliRun = run_cli("check", contract, "--timeout", "10", "--no-cache")
    assert time.monotonic() - start < 5
    assert r.code == 2
    assert r.err.splitlines() == [f"npu-gate: error: {tmp_path / 'm' / 'p.json'}: ops.Einsum.constraints[0]"
                                  f".matches[0]: the pattern {EMPTY_REPEAT}"]


@pytest.mark.parametrize("name", ["qnn-htp-fp16", "qnn-htp-qdq"])
def test_the_built_in_profiles_with_patterns_pass_profile_check(name: str, run_cli: Any) -> None:
    r: CliRun = run_cli("profile", "check", profile_dir() / f"{name}.json")
    assert r.code == 0, r.err
