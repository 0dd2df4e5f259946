"""What a real compiler did with a model (``npu-gate probe``, ``target.probe``): the probe result types.

Plain data, written by ``npu_gate.probe`` and read by renderers and the gate's probe stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npu_gate.result.types import CPU, ELIMINATED, FOLDED, NPU

# Placements a probe can report for an original ONNX node: NPU, CPU, FOLDED (the compiler
# evaluated it ahead of time or removed it as a no-op), and these two.
SPLIT = "split"  # its computation ended up in ops on both devices
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
class ProbeNode:
    name: str
    op_type: str
    # npu | cpu | folded | eliminated | split (probe-1.6: a profile ``splits`` entry matched) from
    # npu_gate's own analysis; None if it did not run
    predicted: str | None
    actual: str | None  # one of ACTUALS; None when the compiler did not build
    became: str | None = None  # the compiler op(s) this node ended up in, when not itself
    runs_on: str | None = None  # npu | cpu | split | None: where its computation actually runs
    rows: list[int] = field(default_factory=list)
    via: list[str] = field(default_factory=list)  # rewrite rules that touched it
    # probe-1.3: the compiler's own words for where it put the node (QNN's reason for a CPU placement,
    # the Ethos-U partitioner's rejection)
    reason: str | None = None
    # probe-1.3: an I/O adapter the compiler keeps at the graph edge by design (QNN's graph-input
    # QuantizeLinear / graph-output DequantizeLinear on CPU): counted in summary.adapters, not compared
    adapter: bool = False
    unmapped: bool = False  # the compiler's output could not be tied to this node: actual stays None

    @property
    def agrees(self) -> bool | None:
        """The strict rule: a node the compiler removed (folded) agrees only with a prediction
        that it runs nowhere (folded, eliminated), never with one placing it on a device; a
        predicted-eliminated node agrees when the compiler kept no op of its own for it."""
        if self.predicted is None or self.actual is None or self.adapter:
            return None
        if self.predicted == ELIMINATED:
            # "BatchNormalizationRelu" is the node's own op with a Relu fused in; "Relu" is not
            return self.actual in (FOLDED, FUSED) or (
                self.became is not None and not any(part.startswith(self.op_type) for part in self.became.split("+")))
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
class ProbeResult:
    """What ``npu-gate probe`` writes as JSON. ``timings`` and ``log`` vary run to run."""

    model: dict[str, Any]
    compiler: dict[str, Any]  # {name, version, target, plugin} (+ backend, probe-1.3, when the plug-in names one)
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
    # probe-1.2: the compiler's memory totals beside npu_gate's static estimate, each with its
    # evidence: {"compiler": {internal_bytes, weight_bytes, evidence} | None, "estimate": {...} | None}
    memory: dict[str, Any] = field(default_factory=lambda: {"compiler": None, "estimate": None})
    # probe-1.3: the compiler's own memory/performance estimates with their evidence ("estimated by
    # Vela 5.2.0 for ..."), None when the compiler gives none
    estimates: dict[str, Any] | None = None
    # probe-1.4: a quantized build (--quantize, the contract's quantization): the mode, the samples it
    # was calibrated and measured with (synthetic or not), and the compiler's own per-layer accuracy
    # with its evidence; None for the default build
    quantization: dict[str, Any] | None = None
    # probe-1.4: how the model the compiler built was prepared (QNN: "qnn-qdq" quantized by npu-gate
    # for the HTP, "as-is" a QDQ model, "fp16"), None when the plug-in prepares nothing
    preparation: dict[str, Any] | None = None

    @property
    def built(self) -> bool:
        return self.status == OK

    @property
    def evidence(self) -> str:
        c = self.compiler
        backend = f" ({c['backend']})" if c.get("backend") else ""
        return f"measured: {c['name']} {c.get('version') or 'unknown version'}{backend} {c['target']}"

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
            "memory": self.memory,
            "estimates": self.estimates,
            "quantization": self.quantization,
            "preparation": self.preparation,
            "timings": self.timings,
            "log": self.log,
        }


# 1.1: summary.adapters, predicted_*_partitions_with_adapters; 1.2: memory (compiler totals, estimate);
# 1.3: nodes[].reason and nodes[].adapter, compiler.backend (QNN); estimates (the compiler's own),
#      nodes[].unmapped, compiler.core (Ethos-U); predicted "eliminated", summary.partitions_agree,
#      disagreement cause "eliminated in prediction"; 1.4: preparation (QNN's QDQ preparation);
# 1.5: findings[].rule quantization-failed and preparation.error (the preparation raised: no compiler run)
# 1.6: predicted "split" (a profile ``splits`` entry: the node runs as pieces on NPU and CPU; it
#      agrees with a node the compiler split), the predicted partitions counted over the pieces
PROBE_SCHEMA_VERSION = "probe-1.6"
