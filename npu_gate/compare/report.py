"""Several contracts' outcomes and the verdict they add up to (the Action, ``merge``, ``check a b``).

``ModelReport`` is one contract's outcome: a result, or the problems that stopped it. The
combined verdict and the applied one (``--fail-on``) are decided here; renderers only show them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from npu_gate.compare.baseline import Comparison
from npu_gate.errors import EXIT_ERROR, EXIT_FAIL, EXIT_PASS
from npu_gate.result.types import PASS, GateResult
from npu_gate.result.verdict import ERROR_VERDICT, combine_verdicts

ERROR = ERROR_VERDICT  # combined verdict when a contract could not be gated at all


@dataclass
class ModelReport:
    """One contract's outcome: a result, or the problems that stopped it (exit 2)."""

    label: str  # the contract path as the user wrote it
    result: GateResult | None = None
    problems: list[str] = field(default_factory=list)
    comparison: Comparison | None = None
    file: str | None = None  # the contract file, when this run gated it (for annotations)
    # a pattern of the action's contracts/merge input that named no contract: listed with its
    # problems, but not counted as a model
    input_problem: bool = False
    # its evidence bundle relative to the report's folder; None: not known (markdown.render)
    bundle_dir: str | None = None

    @property
    def verdict(self) -> str:
        return ERROR if self.result is None else self.result.verdict

    @property
    def name(self) -> str:
        return self.label if self.result is None else self.result.name


def combined_verdict(models: list[ModelReport]) -> str:
    return combine_verdicts(m.verdict for m in models)


def should_fail(models: Sequence[ModelReport], fail_on: str) -> bool:
    """The applied verdict: ``errors`` fails on any failed or unrunnable model; ``regressions``
    only on an unrunnable model or a regression against the baseline (models without a
    comparison fall back to their own verdict); ``never`` reports only."""
    if fail_on == "never":
        return False
    for m in models:
        if m.verdict == ERROR:
            return True
        if fail_on == "regressions" and m.comparison is not None:
            if m.comparison.regressions:
                return True
        elif m.verdict != "pass":
            return True
    return False


def exit_code(models: Sequence[ModelReport], fail_on: str) -> int:
    """2 when a model could not run (as `check` exits on a contract it cannot gate, whatever
    ``fail_on``), else 1 when ``should_fail``, else 0."""
    if any(m.verdict == ERROR for m in models):
        return EXIT_ERROR
    return EXIT_FAIL if should_fail(models, fail_on) else EXIT_PASS


def applied_note(m: ModelReport, fail_on: str) -> str:
    """Why a model's verdict and its effect on the exit code disagree, or ""."""
    fails = should_fail([m], fail_on)
    if fails == (m.verdict != PASS):
        return ""
    if fail_on == "never":
        return "fail-on never"
    return "regressed" if fails else "no regression"
