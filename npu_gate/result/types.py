"""The one plain result of a gate run. Renderers only read it; ``to_dict`` is the JSON.

Everything except ``timings`` is reproducible: the same inputs give the same result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from npu_gate.rules import RULES

# 1.1: optional "minimal" (bundle runs), shape_chains, dynamic_dims, exporter_comparison;
# 1.2: optional "cache" (a result answered from the cache);
# 1.3: rewrites, rewrite_check, suggestions, review, metric, device_timings, replacement
# 1.4: optional "fusions" and nodes[].fused (profiles with fusion patterns), "rank_adapters"
# 1.5: device_timings.unmatched; optional nodes[].original_name (the model's name of a
#      node shown by a display name)
# 1.6: optional findings[].subject (what a finding names when it names no node)
# 1.7: stages.probe may be {status: skipped, reason} (the run reached its --timeout first);
#      optional nodes[].source, nodes[].stable_key, findings[].fix, findings[].cause (a
#      dynamic-shape finding's root cause)
#      and the static memory estimate: summary.peak_activation_bytes, summary.weight_bytes,
#      summary.memory, partitions[].peak_activation_bytes/weight_bytes/at_peak/memory_unknown
#      (NPU partitions), optional findings[].partition; optional "quantization" (contract
#      quantization: float vs quantized on hold-out samples), summary.qdq_nodes
# 1.8: placement "eliminated" (the profile's compiler clean-up, ``eliminates``) and, under
#      such a profile, summary.eliminated_nodes; rule compiler-will-refuse
# 1.9: stages.probe.estimates (the compiler's own estimates, Vela's) and stages.probe.memory (its
#      memory figures beside the static estimate), as in a probe result; gates max_sram_bytes and
#      max_estimated_ms (limit and actual may be fractional ms)
#      and stages.probe.quantization (a contract quantization built by the real compiler: its
#      request and the compiler's per-layer accuracy, as in a probe-1.4 result)
#      and stages.probe.preparation (how the model the compiler built was prepared: QNN's QDQ preparation)
# 1.11: optional nodes[].split (a profile ``splits`` entry matched: the node runs on the NPU as
#      pieces on several devices, partitions counted over them; docs/target-profiles.md#splits),
#      boundaries[].tensor ``<output>@<k>`` between two of its pieces; rule npu-node-split
SCHEMA_VERSION = "1.11"
PASS = "pass"
FAIL = "fail"
# Where a node runs (NodeResult.placement): the NPU, CPU fallback, or nowhere (folded ahead of
# time, or eliminated by the compiler as a no-op or merged into a neighbour).
NPU = "npu"
CPU = "cpu"
FOLDED = "folded"
ELIMINATED = "eliminated"  # removed by the compiler's clean-up before placement (profile `eliminates`)



# ---------------------------------------------------------------- the JSON's parts, typed
# TypedDicts: the result stays plain JSON-ready dicts, and mypy checks every key read or written.


class TensorEntry(TypedDict):
    """A tensor as nodes[].inputs/outputs show it: shape None when unknown, a dim None or a
    symbol (str) when not static."""

    name: str
    shape: list[Any] | None
    dtype: str | None


class InputEntry(TensorEntry):
    static: bool  # the model's own shape is static
    model_shape: list[Any] | None  # before the contract's shapes were applied
    declared: bool  # the contract declares it


class OutputEntry(TensorEntry):
    static: bool


class ModelInfo(TypedDict, total=False):
    source: str  # onnx | torch
    path: str | None
    sha256: str | None
    factory: str
    exporter: str
    opset_requested: int
    opset: int
    ir_version: int
    producer: str
    node_count: int
    external_weights_unread: int


class FindingCounts(TypedDict):
    error: int
    warning: int
    info: int
    waived: int


class MeasuredCounts(TypedDict):
    """``target.probe.decide: measured``: what the compiler made, which the gates judge."""

    cpu_nodes: int
    npu_partitions: int
    cpu_partitions: int


class LiveEntry(TypedDict):
    """A tensor live at a partition's peak: its bytes (in the target's dtype) and producer
    (None: a graph input)."""

    tensor: str
    bytes: int
    producer: str | None


class QuantSamplesInfo(TypedDict):
    samples: int
    synthetic: bool  # drawn from the inputs' ranges, not the contract's samples file


class QuantizationMetric(TypedDict, total=False):
    """1.9: the contract's metric on the quantized model (only with a metric)."""

    metric: dict[str, Any]  # rewrites.metric.evaluate's document with its evidence
    graph: str  # which float graph was quantized: the folded one (what was replaced) or the checked one


class QuantizationResult(QuantizationMetric):
    """``quantization`` (stages/quantize.py): how the graph was quantized, per output float vs
    quantized on the hold-out samples, the worst layers (onnxruntime's qdq_loss_debug)."""

    mode: str
    format: str
    activations: str
    weights: str
    per_channel: bool
    method: str
    evidence: str
    calibration: QuantSamplesInfo
    holdout: QuantSamplesInfo
    placement: dict[str, Any] | None  # the quantized graph's placement counts (QDQ units); None: not placed
    outputs: list[dict[str, Any]]  # quantize.run.OutputAccuracy.to_dict()
    worst_layers: list[dict[str, Any]]  # quantize.run.LayerError.to_dict() with the node's source


# summary.memory.estimate: what the figures are (placement/memory.py), unpadded or, under a
# profile's memory.layout, in the target's layout
ESTIMATE_UNPADDED = ("estimated upper bound on unpadded tensor bytes: topological schedule of each partition, every "
                     "tensor live from its producer to its last consumer, no in-place reuse, no tiling")
ESTIMATE_LAID_OUT = ("estimated upper bound on tensor bytes in the profile's memory layout (padded channels, "
                     "aligned buffers): topological schedule of each partition, every tensor live from its "
                     "producer to its last consumer, no in-place reuse, no tiling")


class MemorySummary(TypedDict):
    """What the model's memory figures are and where the peak is (placement/memory.py)."""

    estimate: str  # the upper bound's assumptions, in words
    runtime_dtype: str | None  # float tensors sized in it; None: the model's own dtypes
    peak_partition: int | None  # the NPU partition with the largest peak
    peak_tensor: str | None  # the largest tensor live at it
    peak_producer: str | None
    unknown: str | None  # why a figure is null


class Summary(TypedDict, total=False):
    """Counts over the analysed graph (absent keys: the graph was not analysed)."""

    node_count: int
    npu_nodes: int
    cpu_nodes: int
    folded_nodes: int
    eliminated_nodes: int  # 1.8: only under a profile with ``eliminates``
    qdq_nodes: int  # QDQ graphs: Q/DQ nodes placed with their op or as I/O adapters, not counted above
    npu_partitions: int
    cpu_partitions: int
    boundary_bytes: int | None  # None: a crossing tensor's size is not static
    peak_activation_bytes: int | None  # largest NPU partition peak (upper bound); None: not static
    weight_bytes: int | None  # every NPU partition's weights; None: not static
    memory: MemorySummary
    dynamic_inputs: list[str]
    subgraph_nodes: int
    subgraph_cpu_nodes: int
    nodes_after_folding: int
    shape_chains: int
    shape_chains_staying: int
    findings: FindingCounts
    evidence: str  # target.probe runs: what decided the placement
    measured: MeasuredCounts


class DynamicDim(TypedDict):
    input: str
    dim: int
    symbol: Any  # the model's symbolic name, or None
    contract: int | None  # the contract's value for it
    chains_folded_by_fixing: list[str]


class RankAdapter(TypedDict):
    tensor: str
    at: str  # input | output
    rank: int
    op: str
    device: str
    reason: str


class NumericsEntry(TypedDict, total=False):
    output: str
    max_abs_err: float | None
    max_rel_err: float | None
    atol: float
    rtol: float
    passed: bool
    samples: int
    problem: str
    reference_range: list[float]  # [min, max] of the reference's finite values
    uninformative: str  # below-atol | zero | constant: why the comparison tells little
    scale_rel_err: float  # below-atol: max abs error / max |reference|, judged against rtol


# A stage row (``stages.<name>``): ``status`` ok | failed | skipped, and what the stage says.
StageRow = dict[str, Any]


@dataclass
class Finding:
    rule: str
    severity: str
    message: str
    node: str | None = None
    op_type: str | None = None
    constraint: str | None = None
    actual: Any = None
    allowed: Any = None
    waived: bool = False
    waiver_reason: str | None = None
    doc: str | None = None  # link given by the profile constraint
    evidence: str | None = None  # the profile's evidence, for constraint findings
    # What the finding is about when it names no node: an input or output name, a gate, a
    # waiver (``waivers[2]``), a rewrite, a tensor. The baseline matches findings by it.
    subject: str | None = None
    fix: str | None = None  # what to change in the PyTorch model (a profile constraint's ``fix``)
    # A dynamic-shape finding's root cause: the dynamic input dims it follows from (``x[0]``),
    # or the tensor whose shape is first unknown (a data-dependent shape). Findings of one
    # cause share a row in the reports.
    cause: list[str] | None = None

    partition: int | None = None  # the partition it is about (memory-budget, memory gates)
    # 1.10: a profile entry's own evidence in full (``measured: <compiler> <version> <target>, probe case ...``
    # or a document with its URL and date) beside ``evidence``, the schema's label of it
    evidence_detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "severity": self.severity, "message": self.message}
        for key in ("node", "op_type", "constraint", "subject", "cause", "partition"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.constraint is not None:
            out["actual"] = self.actual
            out["allowed"] = self.allowed
        for key in ("doc", "evidence", "evidence_detail", "fix"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["waived"] = self.waived
        if self.waiver_reason is not None:
            out["waiver_reason"] = self.waiver_reason
        return out


def evidence_label(text: str, default: str) -> str:
    """The result schema's evidence label of a profile entry's own evidence text: ``measured`` for a
    measurement (``measured: rknn-toolkit2 2.5.0 rk3588, ...``, ``measured by ...``),
    ``vendor-documentation`` for a transcribed document, else ``default`` (the profile's label)."""
    head = text.strip().lower()
    if head.startswith("measured"):
        return "measured"
    if head.startswith(("vendor", "transcribed")):
        return "vendor-documentation"
    return default


def make_finding(rule_id: str, message: str, *, severity: str | None = None, **where: Any) -> Finding:
    """A finding of a registered rule, with the rule's default severity unless ``severity``
    says otherwise (a dynamic shape is a warning under ``gates.allow_dynamic_shapes``)."""
    return Finding(rule=rule_id, severity=severity or RULES[rule_id].severity, message=message, **where)


@dataclass
class NodeResult:
    name: str
    op_type: str
    domain: str
    inputs: list[TensorEntry]
    outputs: list[TensorEntry]
    attributes: dict[str, Any]
    defaulted_attributes: list[str]
    placement: str  # npu | cpu | folded
    reasons: list[str]
    partition: int | None
    scope: str | None = None  # set for nodes inside a control-flow body: "<node>/<attribute>"
    fused: dict[str, Any] | None = None  # {pattern, op, nodes}: a profile pattern matched it
    original_name: str | None = None  # the model's name ("" if none) when ``name`` is a display name
    # where the node came from in the user's PyTorch code (graph.source.Source); None: unknown
    source: dict[str, Any] | None = None
    stable_key: str | None = None  # module_path/OpType#n: survives a re-export (graph.source)
    # 1.11: {id, pieces: [{op, device}], reasons, evidence, fix?, doc?}: a profile ``splits`` entry
    # matched; placement stays npu, the node's pieces run on the devices they name
    split: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for optional in ("scope", "fused", "original_name", "source", "stable_key", "split"):
            if out[optional] is None:
                del out[optional]  # the JSON of nodes without them stays as it was
        return out


@dataclass
class PartitionResult:
    id: int
    device: str
    nodes: list[str]
    # NPU partitions: the static memory estimate (an upper bound; None: a size is not static)
    weight_bytes: int | None = None
    peak_activation_bytes: int | None = None
    at_peak: list[LiveEntry] | None = None  # the largest tensors live at the peak, largest first
    memory_unknown: str | None = None  # why a figure is None
    estimated: bool = False  # the memory fields are set

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "device": self.device, "nodes": self.nodes}
        if self.estimated:
            out |= {"weight_bytes": self.weight_bytes, "peak_activation_bytes": self.peak_activation_bytes,
                    "at_peak": self.at_peak or []}
            if self.memory_unknown is not None:
                out["memory_unknown"] = self.memory_unknown
        return out


@dataclass
class BoundaryResult:
    tensor: str
    bytes: int | None
    source: int  # partition id that produces the tensor
    target: int  # partition id that consumes it

    def to_dict(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "bytes": self.bytes, "from": self.source, "to": self.target}


@dataclass
class GateCheck:
    name: str
    limit: Any
    actual: Any
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class GateResult:
    name: str
    verdict: str
    profile: dict[str, Any]
    versions: dict[str, Any]
    model: ModelInfo
    contract: dict[str, Any] | None = None
    stages: dict[str, StageRow] = field(default_factory=dict)
    inputs: list[InputEntry] = field(default_factory=list)
    outputs: list[OutputEntry] = field(default_factory=list)
    ops: dict[str, int] = field(default_factory=dict)
    nodes: list[NodeResult] = field(default_factory=list)
    partitions: list[PartitionResult] = field(default_factory=list)
    boundaries: list[BoundaryResult] = field(default_factory=list)
    summary: Summary = field(default_factory=Summary)
    findings: list[Finding] = field(default_factory=list)
    numerics: list[NumericsEntry] = field(default_factory=list)
    gates: list[GateCheck] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)  # conversion log; written with --log, not in JSON
    # The contract's own code files the run imported (absolute): the cache's dependencies, not in
    # JSON. None: not known (then a torch contract's result is not cached).
    code_files: list[str] | None = None
    # Evidence bundle runs only (--out/--bundle): one entry per distinct failure, see evidence/minimal.py.
    minimal: dict[str, Any] | None = None
    shape_chains: list[dict[str, Any]] = field(default_factory=list)  # ShapeChain.to_dict()
    dynamic_dims: list[DynamicDim] = field(default_factory=list)  # graph.dims.dynamic_dims
    exporter_comparison: dict[str, Any] | None = None  # compare_exporters: the other graph's diff
    # Rewrites (npu_gate/stages/rewrites.py): applied ones with their proof, verified
    # suggestions, the review table; rewrite_check/metric/device_timings only when they apply.
    rewrites: list[dict[str, Any]] = field(default_factory=list)
    rewrite_check: dict[str, Any] | None = None
    suggestions: list[dict[str, Any]] = field(default_factory=list)
    review: list[dict[str, Any]] = field(default_factory=list)
    metric: dict[str, Any] | None = None
    device_timings: dict[str, Any] | None = None
    replacement: dict[str, Any] | None = None  # contract `replacement`: the user's own model
    fusions: list[dict[str, Any]] | None = None  # profile patterns matched (profiles with patterns only)
    rank_adapters: list[RankAdapter] | None = None  # adapters the target adds (profile rank_adapters only)
    quantization: QuantizationResult | None = None  # contract quantization (stages/quantize.py)
    # Whether a graph was analysed (False: the export failed, or the run stopped before); not
    # in the JSON, where an analysed result is one with ``summary.node_count``.
    analysed: bool = False

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def active_findings(self, severity: str | None = None) -> list[Finding]:
        return [f for f in self.findings if not f.waived and (severity is None or f.severity == severity)]

    def to_dict(self) -> dict[str, Any]:
        out = {
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "verdict": self.verdict,
            "prediction": (
                f"Static prediction against profile {self.profile.get('name')} "
                f"({self.profile.get('evidence')}): not a device compatibility result."
            ),
            "contract": self.contract,
            "profile": self.profile,
            "versions": self.versions,
            "model": self.model,
            "stages": self.stages,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "ops": self.ops,
            "nodes": [n.to_dict() for n in self.nodes],
            "partitions": [p.to_dict() for p in self.partitions],
            "boundaries": [b.to_dict() for b in self.boundaries],
            "summary": self.summary,
            "findings": [f.to_dict() for f in self.findings],
            "numerics": self.numerics,
            "gates": [g.to_dict() for g in self.gates],
            "shape_chains": self.shape_chains,
            "dynamic_dims": self.dynamic_dims,
            "exporter_comparison": self.exporter_comparison,
        }
        if self.minimal is not None:
            out["minimal"] = self.minimal
        out["rewrites"] = self.rewrites
        if self.rewrite_check is not None:
            out["rewrite_check"] = self.rewrite_check
        out["suggestions"] = self.suggestions
        out["review"] = self.review
        for key in ("metric", "device_timings", "replacement", "fusions", "rank_adapters", "quantization"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["timings"] = self.timings
        return out
