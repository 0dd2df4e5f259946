"""The settings of a run (part of the ``Run`` every stage is given, stages/run.py), and what a run
leaves for an evidence bundle."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnx import ModelProto

from npu_gate.contract.parts import Gates, InputSpec, Waiver
from npu_gate.graph.facts import GraphFacts
from npu_gate.profile.spec import Profile
from npu_gate.result.types import FAIL, GateResult, ModelInfo
from npu_gate.stages.timeout import Deadline
from npu_gate.versions import tool_versions


@dataclass
class Settings:
    """What the analysis needs beyond the model: from a contract, or defaults for inspect."""

    profile: Profile
    inputs: list[InputSpec] | None = None  # None: take shapes from the model
    gates: Gates = field(default_factory=Gates)
    waivers: list[Waiver] = field(default_factory=list)
    today: dt.date = field(default_factory=dt.date.today)
    source_root: Path | None = None  # source files are reported relative to it (graph.source)
    deadline: Deadline | None = None  # the run's time limit (--timeout); None: none


@dataclass
class Artifacts:
    """What a run leaves behind for an evidence bundle: pass one as ``keep`` and the
    pipeline fills it in (the model as analysed, its shape-inferred form, the fold
    decisions and the numerics samples). Never part of the result."""

    folder: Path  # model.onnx (and its external data) are copied here
    model_path: Path | None = None
    inferred: ModelProto | None = None  # contract shapes applied, shape-inferred
    facts: GraphFacts | None = None
    folded: set[int] = field(default_factory=set)
    samples: list[dict[str, Any]] = field(default_factory=list)  # used by numerics


def new_result(name: str, profile: Profile, model: ModelInfo) -> GateResult:
    """An empty result (verdict fail until the verdict stage decides) for one model."""
    return GateResult(name=name, verdict=FAIL, profile=profile.to_dict(), versions=tool_versions(), model=model)
