"""The probe plug-in interface: what a compiler module provides (the result types are in
``npu_gate.result.probe``).

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
from typing import TYPE_CHECKING, Any

from npu_gate.errors import GateError
from npu_gate.result.probe import OpRow, Rewrite

if TYPE_CHECKING:
    import numpy as np

QUANT_MODES = ("int8", "int16", "fp16", "none")  # --quantize and the contract's quantization.mode
INTEGER_MODES = ("int8", "int16")  # modes that calibrate (need samples)


@dataclass
class QuantRequest:
    """A quantized build: the mode and the samples to calibrate with and to measure on.

    ``calibration`` and ``holdout`` are rows (one array per model input, keyed by input name),
    the same rows the quantization stage uses (``quantize/samples.py``); ``*_synthetic`` says
    they were drawn from the inputs' ranges rather than read from a samples file."""

    mode: str  # one of QUANT_MODES
    calibration: list[dict[str, np.ndarray]] = field(default_factory=list)
    holdout: list[dict[str, np.ndarray]] = field(default_factory=list)
    calibration_synthetic: bool = True
    holdout_synthetic: bool = True

    @property
    def integer(self) -> bool:
        return self.mode in INTEGER_MODES

    def describe(self) -> dict[str, Any]:
        """The request as the probe result records it (``quantization`` minus the compiler's figures)."""
        return {"mode": self.mode,
                "calibration": {"samples": len(self.calibration), "synthetic": self.calibration_synthetic},
                "holdout": {"samples": len(self.holdout), "synthetic": self.holdout_synthetic}}


def save_rows(rows: list[dict[str, np.ndarray]], folder: Path, prefix: str) -> list[list[Path]]:
    """Each row's arrays as ``.npy`` files in ``folder`` (``PREFIX-K-NAME.npy``, one per input in the
    row's order); per row, its files."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k, row in enumerate(rows):
        paths = []
        for i, (_, array) in enumerate(row.items()):
            path = folder / f"{prefix}-{k}-{i}.npy"
            np.save(path, array, allow_pickle=False)
            paths.append(path.resolve())
        out.append(paths)
    return out


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
    # the compiler's own memory totals, when its log prints them: {internal_bytes, weight_bytes}
    memory: dict[str, int] | None = None
    # the compiler's backend when it is not the package itself, e.g. "QNN 2.51" (onnxruntime-qnn)
    backend: str | None = None
    # op-table name -> the compiler's reason for leaving that node on CPU (QNN's validation log)
    reasons: dict[str, str] | None = None
    # op-table names of the I/O adapters the compiler keeps at the graph edge by design, with
    # their ("input" | "output", graph tensor): QNN's graph-input Q and graph-output DQ on CPU
    io_adapters: dict[str, list[tuple[str, str]]] | None = None
    # original nodes the compiler's output cannot be tied to (reported so, never guessed)
    unmapped: list[str] = field(default_factory=list)
    node_reasons: dict[str, str] = field(default_factory=dict)  # original node -> the compiler's words (Ethos-U)
    estimates: dict[str, Any] | None = None  # the compiler's own memory/performance estimates, with their evidence
    core: str | None = None  # which compiler core produced the result, when it has several
    # a quantized build's accuracy as the compiler measured it (RKNN's accuracy_analysis): the
    # layers of its table, each {layer, op_type, tensor, entire: {cos, euc}, single: {cos, euc}},
    # worst over the hold-out samples, with the evidence and the samples it ran on
    accuracy: dict[str, Any] | None = None


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
    default_target: str = ""  # --target when none is given
    timeout_s: float = 300.0
    # The driver also serves ``--batch FD`` (drivers/_protocol.py): many models in one process.
    batch: bool = False
    # Python versions (major, minor) the venv's pinned packages have wheels for; () is any.
    pythons: tuple[tuple[int, int], ...] = ()
    # The venv always holds real torch (the compiler works on the PyTorch module): --torch changes nothing.
    needs_torch: bool = False
    # The compiler lowers the PyTorch module (a factory run in its venv), not the ONNX file.
    needs_factory: bool = False

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

    # --quantize modes the plug-in builds (QUANT_MODES); "none" is the compiler's default build.
    quant_modes: tuple[str, ...] = ("none",)

    def check_quant_mode(self, mode: str, where: str = "--quantize") -> None:
        """Refuse a quantization mode this plug-in does not build (exit 2, before anything runs)."""
        if mode not in self.quant_modes:
            raise GateError(f"{where} {mode}: the {self.name} plug-in builds {' or '.join(self.quant_modes)} only")

    def quantization_options(self, quant: QuantRequest, work: Path) -> dict[str, Any]:
        """The driver options for a quantized build (a mode ``check_quant_mode`` let through),
        writing what the driver reads (samples) into ``work``. Default: nothing to add."""
        return {}

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


