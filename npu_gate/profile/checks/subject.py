"""One subject (an attribute, an input or an output) and the checks stated on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npu_gate.profile.checks.base import (
    AttributeCheck,
    Check,
    Context,
    Failed,
    Tensor,
    TensorCheck,
    ValueCheck,
    ref_problems,
    run_values,
)


@dataclass(frozen=True)
class Test:
    subjects: tuple[tuple[str, Any], ...]  # (kind, name or index) of each subject key, in SUBJECTS order
    checks: tuple[Check, ...]  # in registry order
    keys: frozenset[str]  # the keys the test states
    # sorted once: failures of ``first`` checks come first, then by group (the order words are in)
    tensor_checks: tuple[TensorCheck, ...] = field(init=False, repr=False, compare=False)
    value_checks: tuple[ValueCheck, ...] = field(init=False, repr=False, compare=False)
    setting_checks: tuple[AttributeCheck, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tensor = sorted((c for c in self.checks if isinstance(c, TensorCheck)), key=lambda c: (not c.first, c.group))
        object.__setattr__(self, "tensor_checks", tuple(tensor))
        object.__setattr__(self, "value_checks", tuple(c for c in self.checks if isinstance(c, ValueCheck)))
        object.__setattr__(self, "setting_checks", tuple(c for c in self.checks if isinstance(c, AttributeCheck)))

    @property
    def subject(self) -> tuple[str, Any]:
        """The subject tested (the first one, should a profile state several)."""
        return self.subjects[0] if self.subjects else ("output", None)

    def failed(self, ctx: Context) -> list[tuple[str, Failed]]:
        """(subject, failed test) for each failed test."""
        kind, which = self.subject
        if kind == "attribute":
            return [(f"attribute {which}", failed) for failed in self._attribute(which, ctx)]
        subject = f"{kind} {which}"
        return [(subject, failed) for failed in self._tensor(kind, which, ctx)]

    def _attribute(self, name: str, ctx: Context) -> list[Failed]:
        for check in self.setting_checks:
            if check.stands_alone:
                return check.evaluate(name, ctx)
        checks = [check.resolved(ctx) for check in self.value_checks]
        return run_values(checks, ctx.node.attributes.get(name))

    def _tensor(self, kind: str, index: int, ctx: Context) -> list[Failed]:
        from npu_gate.graph.facts import TensorInfo

        names = ctx.node.inputs if kind == "input" else ctx.node.outputs
        name = names[index] if index < len(names) else ""
        checks = self.tensor_checks
        if not name:  # absent optional tensor: only a value test (without a default) fails on it
            absent = Tensor("", TensorInfo("", None, None), False)
            return [failed for check in checks if check.on_absent for failed in check.evaluate(absent, ctx)]
        info = ctx.tensors.get(name) or TensorInfo(name, None, None)
        tensor = Tensor(name, info, name in ctx.constants)
        return [failed for check in checks for failed in check.evaluate(tensor, ctx)]

    def describe(self) -> str:
        """The subject and its tests in words, e.g. ``attribute strides: each element in {1, 2}``."""
        kind, which = self.subject
        phrases = [p for check in sorted(self.checks, key=lambda c: c.group) for p in check.phrases()]
        return f"{kind} {which}: " + ", ".join(phrases)

    def problems(self, where: str, *, replaced: bool, vocabulary: tuple[str, ...]) -> list[str]:
        """Exactly one subject (none when a form, ``replaced``, takes its place), at least one
        test (one of ``vocabulary``), each check's own problems and well-formed references."""
        problems = []
        subjects = [kind for kind, _ in self.subjects]
        if replaced and subjects:
            problems.append(f"{where}: any_of replaces the subject; remove {', '.join(subjects)}")
        elif not replaced and len(subjects) != 1:
            problems.append(
                f"{where}: needs exactly one subject (attribute, input or output), "
                f"has {', '.join(subjects) or 'none'}"
            )
        if not any(key in self.keys for key in vocabulary):
            problems.append(f"{where}: no test (one of {', '.join(vocabulary)})")
        for check in self.checks:
            problems.extend(check.problems(where, self.subjects))
        for check in self.checks:
            for at, value in check.references(where):
                problems.extend(ref_problems(at, value))
        return problems
