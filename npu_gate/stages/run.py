"""One run of the gate, and the shape every stage has.

A ``Run`` is what every stage is given: the contract (None for ``inspect``), the settings, the
result so far, the run's work folder, the artifacts kept for an evidence bundle, the child process
that runs the contract's own code, the timings, and what earlier stages left for later ones (the
checked graph, its analysis, the probe's outcome...). A ``Stage`` says when it applies and does its
part; ``pipeline.py`` runs a list of them in one loop, which writes the rows of the stages that do
not apply or that the run's deadline stops (see ``Stage``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from npu_gate.result.types import GateResult, StageRow
from npu_gate.stages.context import Artifacts, Settings
from npu_gate.stages.timeout import Deadline

if TYPE_CHECKING:  # contract-only stages and what they keep: `inspect` imports none of them
    from onnx import ModelProto

    from npu_gate.contract.spec import Contract
    from npu_gate.model.worker import UserCode
    from npu_gate.stages.analyse import Analysis
    from npu_gate.stages.compiler import ProbeOutcome
    from npu_gate.stages.exporters import Compared
    from npu_gate.stages.rewrites import Rewriting


@dataclass
class Run:
    """One run of the gate: what its stages are given, and what they leave for the stages after them."""

    settings: Settings
    result: GateResult  # the result so far; the verdict stage decides its verdict
    contract: Contract | None = None  # None: ``inspect`` of an ONNX file
    source: Path | None = None  # the ONNX file given (None: the contract's module, exported)
    work: Path | None = None  # the run's temporary folder (a contract's run only), removed when it ends
    keep: Artifacts | None = None  # what an evidence bundle keeps (None: nothing)
    user: UserCode | None = None  # the child process of the contract's code (``model.worker``): the pipeline's
    timings: dict[str, float] = field(default_factory=dict)  # the result's ``timings``, in order
    # What stages leave for later ones.
    model: ModelProto | None = None  # the graph the gate checks (the rewritten one once rewrites apply)
    model_path: Path | None = None  # the file it was read from (the ONNX file given, or the export)
    rewriting: Rewriting | None = None  # the contract's rewrites, suggestions and review (stages/rewrites.py)
    analysis: Analysis | None = None  # the analysis of ``model`` (None: not analysed)
    probe: ProbeOutcome | None = None  # the compiler probe's outcome (``target.probe``)
    compared: Compared | None = None  # the other exporter's export (``compare_exporters``)

    @property
    def deadline(self) -> Deadline | None:
        """The run's time limit (``--timeout``; None: none)."""
        return self.settings.deadline

    def the_contract(self) -> Contract:
        """The contract, for a stage that runs only for one."""
        assert self.contract is not None, "a contract-only stage in a run without a contract"
        return self.contract

    def the_user(self) -> UserCode:
        """The child process of the contract's code, for a stage that runs it."""
        assert self.user is not None, "the run has no child process for the contract's code"
        return self.user

    def the_work(self) -> Path:
        """The run's work folder, for a stage that writes files."""
        assert self.work is not None, "the run has no work folder"
        return self.work

    def the_rewriting(self) -> Rewriting:
        """The contract's rewrites (``rewrites.Plan`` made them), for the rewrite stages."""
        assert self.rewriting is not None, "rewrites.Plan did not run"
        return self.rewriting

    def the_model_path(self) -> Path:
        """The file of the checked graph as it was read, for a stage that runs after the load or export."""
        assert self.model_path is not None, "no model was loaded or exported"
        return self.model_path

    @classmethod
    @contextmanager
    def opened(cls, settings: Settings, result: GateResult, *, contract: Contract | None = None,
               source: Path | None = None, keep: Artifacts | None = None, prefix: str = "npu-gate-") -> Iterator[Run]:
        """A run, closed when the block ends: with a contract, a work folder (named ``prefix``...) and
        the child process of the contract's code (started on its first use, stopped here)."""
        if contract is None:
            yield cls(settings, result, source=source, keep=keep)
            return
        import tempfile

        from npu_gate.model.worker import UserCode

        with tempfile.TemporaryDirectory(prefix=prefix) as folder, UserCode(contract) as user:
            yield cls(settings, result, contract=contract, source=source, work=Path(folder), keep=keep, user=user)


class Stage:
    """One stage of a run. ``pipeline.run_stages`` runs a list of them in order; for each:

    - ``applies(run)`` False: the stage does not run, and its row is ``skipped`` with the reason
      ``unapplied(run)`` gives (None: no row at all, the result says nothing of it);
    - else, for a ``limited`` stage, if the run's deadline has passed: the rows ``rows(run)`` are
      recorded as skipped (unless written already) and the run's ``gate-timeout`` finding is made;
    - else ``run(run)``: the stage fills its part of the result (its row, fields, findings) and
      leaves on ``run`` what later stages read. A stage never edits another stage's part of the
      result (the rewrite stages share theirs), before or after the verdict: what changes how a
      part reads runs before that part is made.

    ``limited``: False for the steps that record what was computed (loading, the findings, the
    probe's row, the verdict, the review): they run whatever the deadline.

    ``interruptible``: it is stopped while it runs once the deadline has passed (``timeout.stopping``),
    then recorded as a limited stage the deadline stops. True for the limited stages and the export
    (the contract's code in its child process, which the interruption stops); a stage that leaves
    later stages a state they need whole (the rewrite plan) is not.
    """

    name: str = ""  # the row the loop writes for it in ``result.stages``, the stage a ``gate-timeout`` names
    limited: bool = True

    @property
    def interruptible(self) -> bool:
        return self.limited

    def applies(self, run: Run) -> bool:
        return True

    def unapplied(self, run: Run) -> str | None:
        """The reason its row gives when it does not apply; None: no row."""
        return None

    def rows(self, run: Run) -> tuple[str, ...]:
        """The rows recorded as skipped when the deadline stops it."""
        return (self.name,)

    def run(self, run: Run) -> None:
        raise NotImplementedError(f"stage {self.name} does nothing")


class Skipped(Stage):
    """A stage that never runs in this kind of run, its row saying why (the export of an ONNX
    file given, the numerics without a PyTorch module)."""

    def __init__(self, name: str, reason: str) -> None:
        self.name, self.reason = name, reason

    def applies(self, run: Run) -> bool:
        return False

    def unapplied(self, run: Run) -> str | None:
        return self.reason


def skipped(reason: str) -> StageRow:
    """A stage row saying the stage did not run, and why."""
    return {"status": "skipped", "reason": reason}
