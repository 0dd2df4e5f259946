"""``CHECKS``: every key of the constraint vocabulary and the check that owns it, and the parser
that turns a constraint (a profile's JSON) into its typed ``Constraint``, once.

The order of ``CHECKS`` is the order ``npu-gate profile check`` lists the tests in; a new kind
of check goes at the end. Descriptions order a test's words by the checks' ``group``, and
failures come ``first``-checks first, each then in this order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from npu_gate.profile.checks.absent import Absent
from npu_gate.profile.checks.all_equal import AllEqual
from npu_gate.profile.checks.any_of import AnyOf
from npu_gate.profile.checks.base import SUBJECTS, Check, FormCheck, ValueCheck
from npu_gate.profile.checks.bounds import Bounds
from npu_gate.profile.checks.condition import Condition
from npu_gate.profile.checks.constant import Constant
from npu_gate.profile.checks.constraint import Constraint
from npu_gate.profile.checks.dim import Dim
from npu_gate.profile.checks.dtype import Dtype
from npu_gate.profile.checks.layout import Layout
from npu_gate.profile.checks.matches import Matches
from npu_gate.profile.checks.rank import Rank
from npu_gate.profile.checks.same_non_unit_dims import SameNonUnitDims
from npu_gate.profile.checks.sizes import MaxBytes, MaxElements
from npu_gate.profile.checks.static import Static
from npu_gate.profile.checks.subject import Test
from npu_gate.profile.checks.unchecked import Unchecked
from npu_gate.profile.checks.value import Value

KINDS: tuple[type[Check], ...] = (
    Bounds, AllEqual, Absent, Matches,  # on an attribute's value
    Dtype, Rank, Dim, Constant, Static, MaxElements, MaxBytes, Layout, Value, SameNonUnitDims,  # on a tensor
    AnyOf, Unchecked,  # in place of a subject
)
CHECKS: dict[str, type[Check]] = {key: kind for kind in KINDS for key in kind.keys}
TESTS = tuple(CHECKS)  # the vocabulary: every key that states a test
META = ("id", "message", "doc", "fix", "when")  # a constraint's keys that test nothing


class Parser:
    """Parses tests, their checks and the value checks of a ``value``, from ``CHECKS``."""

    def test(self, raw: Mapping[str, Any]) -> Test:
        subjects = tuple((key, raw[key]) for key in SUBJECTS if key in raw)
        kinds = [kind for kind in KINDS if not issubclass(kind, FormCheck) and any(k in raw for k in kind.keys)]
        return Test(subjects, tuple(kind.parse(raw, self) for kind in kinds), frozenset(raw))

    def value_checks(self, raw: Mapping[str, Any]) -> tuple[ValueCheck, ...]:
        kinds = [kind for kind in KINDS
                 if issubclass(kind, ValueCheck) and kind.on_constants and any(k in raw for k in kind.keys)]
        return tuple(check for kind in kinds if isinstance(check := kind.parse(raw, self), ValueCheck))

    def forms(self, raw: Mapping[str, Any]) -> tuple[FormCheck, ...]:
        kinds = [kind for kind in KINDS if issubclass(kind, FormCheck) and any(k in raw for k in kind.keys)]
        return tuple(form for kind in kinds if isinstance(form := kind.parse(raw, self), FormCheck))


PARSER = Parser()


def parse(raw: Mapping[str, Any]) -> Constraint:
    """A constraint of a profile (valid against its schema) as its typed ``Constraint``."""
    when = raw.get("when")
    return Constraint(
        id=raw["id"],
        message=raw.get("message"),
        doc=raw.get("doc"),
        fix=raw.get("fix"),
        when=parse_condition(when) if isinstance(when, Mapping) else None,
        forms=PARSER.forms(raw),
        test=PARSER.test(raw),
    )


def parse_test(raw: Mapping[str, Any]) -> Test:
    """One subject and its tests (an ``any_of`` alternative, or a constraint without its form)."""
    return PARSER.test(raw)


def parse_condition(raw: Mapping[str, Any]) -> Condition:
    return Condition(raw, PARSER.test(raw))


_PARSED: dict[int, tuple[Sequence[Mapping[str, Any]], tuple[Constraint, ...]]] = {}


def parse_all(constraints: Sequence[Mapping[str, Any]]) -> tuple[Constraint, ...]:
    """A profile's list of constraints, parsed the first time it is evaluated. A profile is read-only
    data once loaded: the list is remembered by identity (and kept, so its id is not reused)."""
    hit = _PARSED.get(id(constraints))
    if hit is not None and hit[0] is constraints:
        return hit[1]
    parsed = tuple(parse(c) for c in constraints)
    if len(_PARSED) >= 4096:
        _PARSED.clear()
    _PARSED[id(constraints)] = (constraints, parsed)
    return parsed


def shape_problems(where: str, raw: Mapping[str, Any]) -> list[str]:
    """A constraint's (or an alternative's) subject, tests and references (not its ``when``'s)."""
    tested = Constraint(str(raw.get("id", "")), None, None, None, None, PARSER.forms(raw), PARSER.test(raw))
    return tested.problems(where, TESTS)


def condition_problems(where: str, when: Mapping[str, Any]) -> list[str]:
    return parse_condition(when).problems(where)
