"""The probe plug-in interface: what a compiler module provides and what a probe returns.

A profile check predicts; a probe measures what a real compiler did with the model. One
compiler is one small module in this package (``rknn.py``; ``fake.py`` for tests) that
subclasses ``Compiler``: it knows how to set up its own venv, which driver script to run
in that venv's Python, and how to read the log the compiler printed. Running the child
process and assembling the result is shared (``runner.py``).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Placements a probe can report for an original ONNX node.
NPU = "npu"
CPU = "cpu"
SPLIT = "split"  # its computation ended up in ops on both devices
FOLDED = "folded"  # the compiler evaluated it ahead of time or removed it as a no-op
FUSED = "fused"  # it became part of another op (``became`` names that op)
ACTUALS = (NPU, CPU, SPLIT, FOLDED, FUSED)

OK = "ok"
FAILED = "failed"  # the compiler reported an error and built nothing
CRASHED = "crashed"  # the compiler's process died (signal) or hung (timeout)
STATUSES = (OK, FAILED, CRASHED)


@dataclass
class OpRow:
    """One row of the compiler's op table, in execution order."""

    id: int
    op_type: str
    target: str  # npu | cpu
    full_name: str  # the compiler's name for the op (the node of its last graph)
    data_type: str | None = None
    input_shapes: str | None = None
    output_shapes: str | None = None
    io: bool = False  # a graph input/output pseudo-op, not computation
    sources: list[str] = field(default_factory=list)  # original ONNX nodes it came from

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Rewrite:
    """One graph rewrite the compiler logged: ``rule`` removed some nodes and added others."""

    rule: str
    removed: list[str]
    added: list[str]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CompilerOutput:
    """What a compiler module reads out of one run's log and work folder."""

    version: str | None = None
    rows: list[OpRow] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    error: str | None = None  # the compiler's own error message when the build failed
    retry_rule: str | None = None  # a rewrite rule the compiler suggests disabling
    # node -> its input producers in the compiler's last graph (to find what a rowless node fused into)
    final_graph: dict[str, list[str]] | None = None
    final_consumers: dict[str, list[str]] | None = None
    final_ops: dict[str, str] | None = None  # node -> op type in that graph
    # node -> the graph inputs it reads and the graph outputs it writes in that graph, as
    # ("input" | "output", tensor): where the compiler put ops at the graph edge
    final_io: dict[str, list[tuple[str, str]]] | None = None
    # node -> its (input tensors other than weights, output tensors) in that graph: where the work
    # of a node a ``fuse_*`` rule removed without naming its replacement went
    final_tensors: dict[str, tuple[list[str], list[str]]] | None = None


@dataclass
class ProbeNode:
    name: str
    op_type: str
    predicted: str | None  # npu | cpu | folded from npu_gate's own analysis; None if it did not run
    actual: str | None  # one of ACTUALS; None when the compiler did not build
    became: str | None = None  # the compiler op(s) this node ended up in, when not itself
    runs_on: str | None = None  # npu | cpu | split | None: where its computation actually runs
    rows: list[int] = field(default_factory=list)
    via: list[str] = field(default_factory=list)  # rewrite rules that touched it

    @property
    def agrees(self) -> bool | None:
        if self.predicted is None or self.actual is None:
            return None
        if self.actual == FOLDED:
            return self.predicted == FOLDED
        return self.predicted == self.runs_on

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["agrees"] = self.agrees
        return out


@dataclass
class Segment:
    """A maximal run of consecutive compiler ops on one device, in execution order."""

    index: int
    device: str
    rows: list[int]
    ops: list[str]
    nodes: list[str]  # original ONNX nodes whose computation is in this segment

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Attempt:
    """One compiler run (a probe retries once with a rule disabled when the compiler suggests it)."""

    options: dict[str, Any]
    status: str
    error: str | None
    returncode: int | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ChildRun:
    """A finished child process: its exit, its cleaned log and what its driver reported."""

    returncode: int | None  # None: killed after the timeout
    log: list[str]
    response: dict[str, Any]
    seconds: float
    timed_out: bool = False
    timeout: float | None = None  # the limit it was killed at (seconds may be a little more)

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None


class Compiler(ABC):
    """One real (or fake) compiler. Subclasses are small and stateless."""

    name: str  # plug-in name on the command line: --compiler NAME
    product: str  # what the compiler calls itself in reports, e.g. rknn-toolkit2
    driver: str  # file name of the driver script shipped in npu_gate/probe/drivers/
    timeout_s: float = 300.0
    # The driver also serves ``--batch FD`` (drivers/_protocol.py): many models in one process.
    batch: bool = False
    # Python versions (major, minor) the venv's pinned packages have wheels for; () is any.
    pythons: tuple[tuple[int, int], ...] = ()

    @abstractmethod
    def setup_steps(self, *, torch: bool) -> list[list[str]]:
        """pip argument lists, run in order inside the new venv (``pip install`` + these)."""

    def stub_torch(self, *, torch: bool) -> bool:
        """Whether setup installs the inert torch import stub."""
        return False

    def python(self, venv: Path) -> Path:
        return venv / "bin" / "python"

    def installed_version(self, venv: Path) -> str | None:
        """The compiler package's version in ``venv``, from its ``.dist-info`` folder name (nothing
        is imported or run); None when it is not installed there."""
        dist = re.sub(r"[-_.]+", "_", self.product).lower()
        found = sorted(venv.glob(f"lib/python*/site-packages/{dist}-*.dist-info"))
        return found[-1].name[len(dist) + 1:-len(".dist-info")] if found else None

    def request(self, model: Path, target: str, inputs: dict[str, list[int]],
                options: dict[str, Any]) -> dict[str, Any]:
        """The JSON handed to the driver script."""
        return {"model": str(model), "target": target,
                "inputs": [{"name": k, "shape": v} for k, v in inputs.items()], **options}

    @abstractmethod
    def parse(self, run: ChildRun, work: Path) -> CompilerOutput:
        """Read the op table, the rewrites and any error out of one run."""

    def retry_options(self, output: CompilerOutput, options: dict[str, Any]) -> dict[str, Any] | None:
        """Options for one retry after a failure, or None. Default: never retry."""
        return None

    def graph_name(self, name: str, original_name: str | None, outputs: list[str]) -> str:
        """The name the compiler's graph, log and op table give an original node.

        ``name`` is npu_gate's name for it, ``original_name`` the model's own when that differs
        ("" for an unnamed node), ``outputs`` its output tensors. Default: npu_gate's name.
        """
        return name


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def clean_log(raw: str) -> list[str]:
    """Strip ANSI colour codes and keep only the last frame of ``\\r`` progress bars."""
    lines = []
    for line in _ANSI.sub("", raw).split("\n"):
        frames = [f for f in line.split("\r") if f.strip()]
        text = frames[-1].rstrip() if frames else ""
        lines.append(text)
    while lines and not lines[-1]:
        lines.pop()
    return lines


@dataclass
class ProbeResult:
    """What ``npu-gate probe`` writes as JSON. ``timings`` and ``log`` vary run to run."""

    model: dict[str, Any]
    compiler: dict[str, Any]  # {name, version, target, plugin}
    status: str  # ok | failed | crashed
    predicted_with: dict[str, Any]  # the profile npu_gate predicted with
    nodes: list[ProbeNode] = field(default_factory=list)
    ops: list[OpRow] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    error: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    @property
    def built(self) -> bool:
        return self.status == OK

    @property
    def evidence(self) -> str:
        c = self.compiler
        return f"measured: {c['name']} {c.get('version') or 'unknown version'} {c['target']}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": PROBE_SCHEMA_VERSION,
            "kind": "probe",
            "verdict": "pass" if self.built else "fail",
            "evidence": self.evidence,
            "note": "A probe measures what the compiler did with the model (op placement); "
                    "it is not a device latency or accuracy result.",
            "model": self.model,
            "compiler": self.compiler,
            "status": self.status,
            "error": self.error,
            "predicted_with": self.predicted_with,
            "summary": self.summary,
            "findings": self.findings,
            "nodes": [n.to_dict() for n in self.nodes],
            "segments": [s.to_dict() for s in self.segments],
            "ops": [r.to_dict() for r in self.ops],
            "rewrites": [r.to_dict() for r in self.rewrites],
            "attempts": [a.to_dict() for a in self.attempts],
            "timings": self.timings,
            "log": self.log,
        }


PROBE_SCHEMA_VERSION = "probe-1.1"  # 1.1: summary.adapters, predicted_*_partitions_with_adapters
