"""One constraint of a profile: its id and words (message, doc, fix), its ``when``, and what
it tests: a subject with its checks, or a form (``any_of``, ``unchecked``) in their place."""

from __future__ import annotations

from dataclasses import dataclass, field

from npu_gate.profile.checks.base import UNKNOWN, Context, Failed, Failure, FormCheck, show
from npu_gate.profile.checks.condition import Condition
from npu_gate.profile.checks.subject import Test


@dataclass(frozen=True)
class Constraint:
    id: str
    message: str | None  # the profile's wording of a failure ({actual}, {allowed}), or an explanation
    doc: str | None
    fix: str | None
    when: Condition | None
    forms: tuple[FormCheck, ...]
    test: Test  # the constraint's own subject and checks
    # The form in force: ``unchecked`` before ``any_of``; None for a subject with its tests.
    form: FormCheck | None = field(init=False, repr=False, compare=False)
    checked: bool = field(init=False, repr=False, compare=False)  # False: reported as not checked

    def __post_init__(self) -> None:
        form = min((f for f in self.forms if f.active), key=lambda f: f.checked, default=None)
        object.__setattr__(self, "form", form)
        object.__setattr__(self, "checked", form is None or form.checked)

    def applies(self, ctx: Context) -> bool:
        return self.when is None or self.when.holds(ctx)

    def evaluate(self, ctx: Context) -> list[Failure]:
        """Every failed test on the node (the constraint checked, its condition holding)."""
        form = self.form
        if form is not None:
            return [self.failure("", failed) for failed in form.evaluate(ctx)]
        return [self.failure(subject, failed) for subject, failed in self.test.failed(ctx)]

    def failure(self, subject: str, failed: Failed) -> Failure:
        template = self.message
        message = f"{subject} {failed.text}".strip()
        if template and ("{actual}" in template or "{allowed}" in template):
            # The profile words the failure itself. str.replace, not str.format: a profile must
            # not reach into Python objects.
            message = template.replace("{actual}", show(failed.actual)).replace("{allowed}", show(failed.allowed))
        elif template:  # an explanation (a calibrated profile's evidence): after what failed
            message = f"{message}; {template}"
        return Failure(self.id, message, failed.actual, failed.allowed, self.doc, self.fix)

    def unchecked_failure(self) -> Failure:
        """The report of a condition npu_gate does not check."""
        return Failure(self.id, self.message or "", UNKNOWN, "not checked", self.doc)

    def describe(self) -> str:
        """The whole constraint in words (without its id), after its condition if it has one."""
        when = f"when {self.when.describe()}: " if self.when is not None else ""
        form = self.form
        return when + (form.describe() if form is not None else self.test.describe())

    def problems(self, where: str, vocabulary: tuple[str, ...]) -> list[str]:
        """Its own shape (not its ``when``'s or its alternatives'): see ``Test.problems``."""
        form = self.form
        if form is not None and not form.checked:
            return form.form_problems(where)
        return self.test.problems(where, replaced=form is not None, vocabulary=vocabulary)
