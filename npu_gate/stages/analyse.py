"""The analysis stage: graph facts, placement, partitions, shape chains of one ONNX graph.

``analyse`` fills the result's analysis part (nodes, partitions, boundaries, summary...) and
returns what the findings are made from. ``findings`` makes them, once: after the probe stage
when a real compiler's placement decides (``target.probe.decide: measured``), so a CPU
fallback the compiler did not make is an info finding from the start, never edited later.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx
from onnx import ModelProto

from npu_gate.contract.parts import InputSpec
from npu_gate.errors import ContractError
from npu_gate.gc_pause import gc_paused
from npu_gate.graph import dims, shape_chains, shape_values, symbolic
from npu_gate.graph import facts as graph_facts
from npu_gate.graph.facts import GraphFacts, TensorInfo
from npu_gate.graph.fold import fold
from npu_gate.graph.fold_budget import FoldBudget, FoldSkip
from npu_gate.graph.layout import tensor_layouts
from npu_gate.graph.model_file import external_tensors
from npu_gate.graph.shape_chains import ShapeChain
from npu_gate.graph.source import node_source, stable_keys
from npu_gate.graph.subgraphs import ScopedNode, collect_subgraph_nodes
from npu_gate.graph.symbols import input_symbols
from npu_gate.placement import fusions as patterns
from npu_gate.placement import memory as memlib
from npu_gate.placement.adapters import graph_adapters
from npu_gate.placement.eliminate import NUMERICS_THRESHOLD, NumericChange, eliminate
from npu_gate.placement.partitions import boundaries, build_partitions, total_bytes
from npu_gate.placement.place import Placement, place_all, place_subgraphs
from npu_gate.placement.refusals import Refusal, refusals
from npu_gate.profile.constraints import Failure
from npu_gate.profile.limits import opset_failure
from npu_gate.result.types import (
    CPU,
    ELIMINATED,
    FOLDED,
    NPU,
    Finding,
    GateResult,
    InputEntry,
    MemorySummary,
    NodeResult,
    OutputEntry,
    PartitionResult,
    RankAdapter,
    TensorEntry,
    evidence_label,
    make_finding,
)
from npu_gate.rules import ERROR, INFO, WARNING
from npu_gate.stages.context import Artifacts, Settings

if TYPE_CHECKING:  # a probe's nodes: `inspect` runs no probe
    from npu_gate.result.probe import ProbeNode


@dataclass
class CompilerPlacement:
    """A real compiler's placement, when it decides (``target.probe.decide: measured`` and
    the compiler built the model): its nodes by name, and the evidence line naming it."""

    nodes: Mapping[str, ProbeNode]
    evidence: str


@dataclass
class Analysis:
    """What the findings of one analysed graph are made from (``findings``)."""

    facts: GraphFacts
    model_inputs: list[TensorInfo]
    inputs: list[InputSpec] | None  # the contract's; None: shapes from the model (inspect)
    checker_errors: list[str]
    strict_error: str | None
    shape_error: str | None
    opset_limit: Failure | None
    placements: list[Placement]
    scoped: list[ScopedNode]
    body: list[Placement]
    chains: list[ShapeChain]
    adapters: list[RankAdapter] | None
    dynamic_severity: str
    evidence: str  # the profile's
    fold_skips: list[FoldSkip] = field(default_factory=list)  # folded values not computed (fold budget)
    order: list[int] = field(default_factory=list)  # the nodes in topological order
    memory: list[memlib.PartitionMemory] = field(default_factory=list)  # NPU partitions' estimates
    memory_budget: dict[str, Any] | None = None  # the profile's ``memory``
    refusals: list[Refusal] = field(default_factory=list)  # the profile's ``refuses`` that match
    folded: set[int] = field(default_factory=set)  # indices of the nodes that fold (the quantization stage's)
    numeric_changes: list[NumericChange] = field(default_factory=list)  # eliminated, not exact no-ops


def graph_inputs(model: ModelProto, as_inputs: frozenset[str]) -> list[TensorInfo]:
    """The model's inputs: graph inputs that are not initializers, and the overridable
    initializers (IR >= 4) that are inputs (``as_inputs``, see ``initializer_inputs``)."""
    initializer_names = {i.name for i in model.graph.initializer}
    return [graph_facts.tensor_info_from_type(v.name, v.type) for v in model.graph.input
            if v.name not in initializer_names or v.name in as_inputs]


def check_contract_inputs(model: ModelProto, specs: Sequence[InputSpec], label: str) -> None:
    """A contract input the model does not have, or whose shape the model's static dims
    contradict (another rank, another static size), is a contract error: one line each, with
    its JSON path and the model's inputs, before any analysis."""
    model_inputs = graph_inputs(model, graph_facts.initializer_inputs(model, {s.name: s for s in specs}))
    by_name = {i.name: i for i in model_inputs}
    listed = ", ".join(f"{i.name} {_shape_text(i.shape) if i.shape is not None else '(no shape)'}"
                       f"{' ' + i.dtype if i.dtype else ''}" for i in model_inputs) or "none"
    problems = []
    for k, spec in enumerate(specs):
        info = by_name.get(spec.name)
        if info is None:
            problems.append(f"{label}: inputs[{k}].name: {spec.name!r} is not an input of the model "
                            f"(model inputs: {listed})")
        elif info.shape is not None and (
                len(info.shape) != len(spec.shape)
                or any(isinstance(m, int) and m >= 0 and m != c for m, c in zip(info.shape, spec.shape, strict=True))):
            problems.append(f"{label}: inputs[{k}].shape: {_shape_text(list(spec.shape))} for input {spec.name} "
                            f"contradicts the model's {_shape_text(info.shape)} (model inputs: {listed})")
    if problems:
        raise ContractError(*problems)


@gc_paused()  # see gc_pause.py: collections would rescan every node's objects
def analyse(model: ModelProto, settings: Settings, result: GateResult, keep: Artifacts | None = None) -> Analysis:
    """Graph facts, placement and partitions of ``model`` into ``result``; every finding but
    those comes from ``findings(analysis)``."""
    declared = {s.name: s for s in settings.inputs} if settings.inputs is not None else {}
    as_inputs = graph_facts.initializer_inputs(model, declared)  # IR >= 4: overridable ones too
    model_inputs = graph_inputs(model, as_inputs)
    unread = len(external_tensors(model.graph))
    if unread:
        result.model["external_weights_unread"] = unread  # left on disk: dims suffice

    checker_errors = graph_facts.run_checker(model, external=bool(unread))
    # The contract fixes the dims the model leaves open; a static dim it contradicts stays the
    # model's (a contract error for the contract's own model, check_contract_inputs; an
    # input-mismatch finding for other graphs): the model could not run with the contract's.
    fixable = {i.name: [m if isinstance(m, int) else c for m, c in zip(i.shape, declared[i.name].shape, strict=True)]
               for i in model_inputs
               if i.name in declared and i.shape is not None and len(i.shape) == len(declared[i.name].shape)}
    # Inputs whose symbolic dims the contract fixes: keep the model's own types to see
    # later which shape chains fold only because of the contract.
    model_types = {v.name: onnx.TypeProto.FromString(v.type.SerializeToString())
                   for v in model.graph.input
                   if v.name in fixable
                   and any(not isinstance(d, int) for d in _declared(model_inputs, v.name))}
    graph_facts.apply_input_shapes(model, fixable)
    inferred, strict_error, shape_error = graph_facts.infer_shapes(model)
    facts = graph_facts.collect(inferred, checker_errors, shape_error, as_inputs)

    symbols = input_symbols(model_inputs)
    deps = graph_facts.node_dependencies(facts.nodes)
    order = graph_facts.topological_order(facts.nodes, deps)
    budget = FoldBudget(deadline=settings.deadline.at if settings.deadline is not None else None)
    folded, constants = _fold_refining_shapes(inferred, facts, order, symbols, result.stages, budget)
    chains = shape_chains.find_chains(inferred, facts, folded, constants, symbols)
    if model_types:
        model_view = shape_chains.model_view_chains(model, model_types, as_inputs, symbols)
        shape_chains.mark_fixed_by_contract(chains, model_view)
    declared_layouts = {s.name: s.layout for s in settings.inputs or [] if s.layout}
    layouts = tensor_layouts(facts.nodes, order, facts.tensors, declared_layouts)
    # read only if a test asks
    values = shape_values.ConstantValues(inferred, facts.nodes, facts.tensors, folded, budget, facts.initializers)
    placements = place_all(facts, settings.profile, folded, constants, layouts, values)
    fusions = patterns.fuse(inferred, facts, settings.profile, placements, folded, constants, layouts)
    changes: list[NumericChange] = []
    eliminate(facts, settings.profile.eliminates, placements, inferred, changes)  # partitions are counted after it
    scoped = collect_subgraph_nodes(inferred, facts, constants)
    body = place_subgraphs(scoped, settings.profile, placements, layouts)
    partitions = build_partitions(facts, placements, deps)
    crossings = boundaries(facts, partitions, {i for i, p in enumerate(placements) if p.device == ELIMINATED})
    part_of = {i: p.id for p in reversed(partitions) for i in p.nodes}  # a split node: its first piece's
    dtype = settings.profile.runtime_dtype
    layout = memlib.Layout.from_profile((settings.profile.memory or {}).get("layout"))
    memory = memlib.partition_memory(
        facts, partitions, crossings, constants, scoped, memlib.Precision(dtype, dtype, layout))

    result.model.update({"opset": facts.opset, "ir_version": facts.ir_version,
                         "producer": facts.producer, "node_count": len(facts.nodes)})
    result.inputs = [_input_entry(i, facts, declared) for i in model_inputs]
    result.outputs = [OutputEntry(name=o.name, shape=o.shape, dtype=o.dtype, static=o.static) for o in facts.outputs]
    result.ops = dict(sorted(Counter(n.key for n in facts.nodes).items()))
    tensor_dicts = {name: info.to_dict() for name, info in facts.tensors.items()}  # shared, read-only
    result.nodes = [_node_entry(n, placements[n.index], tensor_dicts, part_of.get(n.index)) for n in facts.nodes]
    _attach_sources(result.nodes, inferred, settings.source_root)
    result.nodes += [_scoped_entry(sn, p) for sn, p in zip(scoped, body, strict=True)]
    if fusions is not None:
        patterns.record(result, fusions, placements)
    adapters = graph_adapters(settings.profile, facts, model_inputs) if settings.profile.rank_adapters else None
    result.rank_adapters = adapters
    names = [n.name for n in facts.nodes]
    result.partitions = [PartitionResult(p.id, p.device, [names[i] for i in p.nodes]) for p in partitions]
    for estimate in memory:
        entry = result.partitions[estimate.partition]
        entry.weight_bytes, entry.peak_activation_bytes = estimate.weight_bytes, estimate.peak_activation_bytes
        entry.at_peak = estimate.at_peak  # LiveEntry dicts, read-only from here
        entry.memory_unknown, entry.estimated = estimate.unknown, True
    peak, weights, top = memlib.whole(memory)
    result.boundaries = crossings
    result.shape_chains = [c.to_dict() for c in chains]
    result.dynamic_dims = dims.dynamic_dims(model_inputs, {n: list(s.shape) for n, s in declared.items()}, chains)
    devices = Counter(p.device for p in placements if p.qdq is None)  # Q/DQ count with their op
    result.summary = {
        "node_count": len(facts.nodes),
        "npu_nodes": devices[NPU],
        "cpu_nodes": devices[CPU],
        "folded_nodes": devices[FOLDED],
        **({"qdq_nodes": sum(1 for p in placements if p.qdq is not None)}
           if any(p.qdq is not None for p in placements) else {}),
        "npu_partitions": sum(1 for p in partitions if p.device == NPU),
        "cpu_partitions": sum(1 for p in partitions if p.device == CPU),
        "boundary_bytes": total_bytes(crossings),
        "peak_activation_bytes": peak,
        "weight_bytes": weights,
        "memory": MemorySummary(
            estimate=memlib.UPPER_BOUND if layout is None else memlib.UPPER_BOUND_LAID_OUT, runtime_dtype=dtype,
            peak_partition=top.partition if top else None,
            peak_tensor=top.at_peak[0]["tensor"] if top and top.at_peak else None,
            peak_producer=top.at_peak[0]["producer"] if top and top.at_peak else None,
            unknown=next((e.unknown for e in memory if e.unknown), None)),
        "dynamic_inputs": [i.name for i in model_inputs if not i.static],
        "subgraph_nodes": len(scoped),
        "subgraph_cpu_nodes": sum(1 for p in body if p.device == CPU),
        "nodes_after_folding": len(facts.nodes) - devices[FOLDED],  # eliminated nodes count: the model's
        "shape_chains": len(chains),
        "shape_chains_staying": sum(1 for c in chains if not c.folds),
    }
    if settings.profile.eliminates is not None:  # 1.8: only under a profile with the pass
        result.summary["eliminated_nodes"] = devices[ELIMINATED]
    result.analysed = True
    if keep is not None:
        keep.inferred, keep.facts, keep.folded = inferred, facts, folded
    return Analysis(
        facts=facts, model_inputs=model_inputs, inputs=settings.inputs, checker_errors=checker_errors,
        strict_error=strict_error, shape_error=shape_error,
        opset_limit=opset_failure(settings.profile.limits, facts.opset), placements=placements, scoped=scoped,
        body=body, chains=chains, adapters=adapters,
        dynamic_severity=WARNING if settings.gates.allow_dynamic_shapes else ERROR,
        evidence=settings.profile.evidence, fold_skips=budget.skips, order=order, memory=memory,
        memory_budget=settings.profile.memory, refusals=refusals(facts, settings.profile.refuses, folded),
        folded=set(folded), numeric_changes=changes,
    )


def findings(analysis: Analysis, measured: CompilerPlacement | None = None) -> list[Finding]:
    """The analysis' findings in report order: inputs, checker and shape inference, the
    opset limit, the compiler's refusals, rank adapters, placement, dynamic shapes, shape chains. ``measured``: the
    compiler's placement decides whether a placement finding is a CPU fallback (error) or a
    node the compiler ran on the NPU or folded away (info, saying so)."""
    a = analysis
    out = _input_findings(a.model_inputs, a.inputs, a.dynamic_severity, a.chains)
    for message in a.checker_errors:  # a checker error naming one node is that node's finding
        named = graph_facts.checker_node(message, a.facts)
        out.append(make_finding("onnx-checker", message, node=named.name if named else None,
                                op_type=named.key if named else None))
    if a.strict_error:  # the full check's strict shape inference failed: the model is invalid
        node = graph_facts.node_named_in(a.strict_error)
        known = {n.name for n in a.facts.nodes}
        out.append(make_finding("onnx-checker", f"full check: {a.strict_error}", node=node if node in known else None))
    if a.shape_error:
        out.append(make_finding("shape-inference", a.shape_error))
    if a.opset_limit is not None and not _opset_refused(a):
        out.append(_failure_finding("profile-limit", a.opset_limit.message, a.opset_limit, a.evidence))
    out += [make_finding("compiler-will-refuse", r.message, node=r.node, op_type=r.op_type, subject=r.subject,
                         constraint=r.id, evidence=evidence_label(r.evidence, a.evidence),
                         evidence_detail=r.evidence, fix=r.fix, doc=r.doc) for r in a.refusals]
    out += [_numeric_change_finding(c, a.evidence) for c in a.numeric_changes]
    out += [make_finding("rank-adapter", adapter["reason"], evidence=a.evidence, subject=adapter["tensor"])
            for adapter in a.adapters or [] if adapter["device"] == CPU]
    out += _placement_findings(a.facts, a.placements, a.evidence, [(sn.path, sn.node.key) for sn in a.scoped],
                               a.body, measured)
    out += [_split_finding(a.facts.nodes[i], p, a.evidence) for i, p in enumerate(a.placements)
            if p.split is not None]
    out += [_fold_budget_finding(a.facts, skip) for skip in a.fold_skips]
    out += _dynamic_shape_findings(a, a.dynamic_severity)
    out += memory_findings(a.memory, a.memory_budget)
    out += [make_finding("shape-computation", shape_chains.describe(chain), severity=a.dynamic_severity,
                         node=chain.consumer, op_type=chain.consumer_op)
            for chain in a.chains if not chain.folds]
    return out


def _split_finding(node: graph_facts.NodeFacts, placement: Placement, evidence: str) -> Finding:
    """``npu-node-split``: a node on the NPU the profile's ``splits`` says the compiler runs as pieces;
    ``evidence``: the profile's label (the entry's own in ``evidence_detail``, its record in ``doc``)."""
    split = placement.split
    assert split is not None
    pieces = " -> ".join(f"{p['op']} ({p['device'].upper()})" for p in split["pieces"])
    cpu = sum(1 for p in split["pieces"] if p["device"] == CPU)
    message = (f"{node.name} ({node.key}) runs as {pieces}: {'; '.join(split['reasons'])}; "
               f"{cpu} CPU piece(s) inside one node, its output crossing between devices")
    return make_finding("npu-node-split", message, node=node.name, op_type=node.key, constraint=split["id"],
                        actual=[p["device"] for p in split["pieces"]], allowed="one device",
                        evidence=evidence, evidence_detail=split["evidence"], doc=split.get("doc"),
                        fix=split.get("fix"))


def _numeric_change_finding(c: NumericChange, evidence: str) -> Finding:
    """``eliminated-changes-numerics``: the compiler removes ``c.node`` though it is no exact no-op;
    ``evidence``: the profile's label (the entry's own evidence is in the message, its record in ``doc``)."""
    message = (f"the compiler removes this BatchNormalization as an identity (scale 1, bias 0, mean 0, variance 1, "
               f"profile eliminates {c.when}), but its epsilon {c.epsilon:g} makes it y = x / sqrt(1 + {c.epsilon:g}): "
               f"the ONNX model's output is {100 * c.relative_change:.3g} % below the build's "
               f"(relative change above {NUMERICS_THRESHOLD:g}); the elimination: {c.evidence}")
    fix = ("keep nn.BatchNorm2d's default eps=1e-5 (any eps below 2e-3), or fold the BatchNorm away before export "
           "(into the Conv before it: torch.nn.utils.fusion.fuse_conv_bn_eval), or export trained weights")
    return make_finding("eliminated-changes-numerics", message, node=c.node, op_type=c.op_type,
                        constraint="relative-change",
                        actual={"epsilon": c.epsilon, "relative_change": round(c.relative_change, 6)},
                        allowed={"relative_change": NUMERICS_THRESHOLD}, evidence=evidence_label(c.evidence, evidence),
                        evidence_detail=c.evidence, doc=c.doc, fix=fix)


def _opset_refused(a: Analysis) -> bool:
    """The model's opset, outside the profile's limit, is above the compiler's maximum too (a
    ``refuses`` opset-above entry matched): that entry's ``compiler-will-refuse``, in the compiler's
    own words and with its evidence, is the one finding for it (issue 20)."""
    return any(r.graph == "opset-above" for r in a.refusals)


def analyse_with_findings(model: ModelProto, settings: Settings, result: GateResult,
                          keep: Artifacts | None = None) -> None:
    """``analyse`` and its findings into ``result``, for a graph no compiler measures
    (``inspect``, a rewrite candidate, the exporter the contract does not gate)."""
    result.findings.extend(findings(analyse(model, settings, result, keep)))


def _declared(model_inputs: list[TensorInfo], name: str) -> list[Any]:
    info = next((i for i in model_inputs if i.name == name), None)
    return list(info.shape or []) if info is not None else []


def _input_entry(info: TensorInfo, facts: GraphFacts, declared: dict[str, InputSpec]) -> InputEntry:
    used = facts.tensors.get(info.name, info)
    return InputEntry(name=info.name, shape=used.shape, dtype=used.dtype, static=info.static,
                      model_shape=info.shape, declared=info.name in declared)


def _fold_refining_shapes(
    inferred: onnx.ModelProto, facts: GraphFacts, order: list[int], symbols: dict[str, list[str]],
    stages: dict[str, Any], budget: FoldBudget,
) -> tuple[set[int], set[str]]:
    """Fold constants, filling the dims ONNX left unknown on the way (``facts.tensors``).

    Cheapest first: ONNX inference again on the folded graph (``stages.folded_shapes``), then
    onnxruntime's symbolic inference for what is still unknown (``stages.symbolic_shapes``;
    loading it and sympy costs ~0.5 s). A dim either makes known may let more Shape nodes fold.
    """
    folded, constants = fold(facts, order, facts.initializers)
    by_folding = symbolic.refine_by_folding(inferred, facts, folded, symbols, budget)
    if by_folding is not None:
        stages["folded_shapes"] = by_folding
        if by_folding["resolved"]:
            folded, constants = fold(facts, order, facts.initializers)
    by_symbols = symbolic.refine_stage(inferred, facts, symbols, folded, budget)
    if by_symbols is not None:
        stages["symbolic_shapes"] = by_symbols
        if by_symbols["resolved"]:
            folded, constants = fold(facts, order, facts.initializers)
            again = symbolic.refine_by_folding(inferred, facts, folded, symbols, budget)
            if again is not None and again["resolved"]:
                first = stages.get("folded_shapes", again)
                stages["folded_shapes"] = {"status": "ok", "unknown": first["unknown"],
                                           "resolved": first["resolved"] + again["resolved"]}
                folded, constants = fold(facts, order, facts.initializers)
    return folded, constants


def _input_findings(
    model_inputs: list[TensorInfo], declared: list[InputSpec] | None, dynamic_severity: str,
    chains: list[ShapeChain],
) -> list[Finding]:
    out = []
    for info in model_inputs:
        if not info.static:
            fix = ""
            spec = next((s for s in declared or [] if s.name == info.name), None)
            if spec is not None and info.shape is None:
                fix = (f"; the contract fixes {_shape_text(list(spec.shape))}: export with static "
                       "shapes or declare the input's shape in the model")
            elif spec is not None:
                fixed = ", ".join(f"{info.name}[{d}] = {spec.shape[d]}"
                                  for d, v in enumerate(info.shape or [])
                                  if not isinstance(v, int) and d < len(spec.shape))
                fix = (f"; the contract fixes {_shape_text(list(spec.shape))}: export with static "
                       f"shapes or fix the dim in the model ({fixed})")
            # No shape at all is not "[?]", which would read as rank 1.
            shape = "no shape (not even a rank)" if info.shape is None else f"dynamic shape {_shape_text(info.shape)}"
            effect = dims.fix_effect(info, chains) if info.shape is not None else ""
            message = f"input {info.name} has {shape} in the model{fix}{effect}"
            out.append(make_finding("dynamic-input", message, severity=dynamic_severity, subject=info.name))
    if declared is None:
        return out
    by_name = {i.name: i for i in model_inputs}
    for spec in declared:
        found = by_name.get(spec.name)
        if found is None:
            out.append(make_finding("input-mismatch", f"contract input {spec.name} is not an input of the model "
                                    f"(model inputs: {', '.join(by_name) or 'none'})", subject=spec.name))
            continue
        info = found
        if info.dtype is not None and info.dtype != spec.dtype:
            out.append(make_finding("input-mismatch", f"input {spec.name}: contract dtype {spec.dtype}, "
                                    f"model dtype {info.dtype}", subject=spec.name))
        if info.shape is not None:
            if len(info.shape) != len(spec.shape):
                out.append(make_finding("input-mismatch", f"input {spec.name}: contract shape "
                                        f"{_shape_text(list(spec.shape))} has rank {len(spec.shape)}, "
                                        f"the model's {_shape_text(info.shape)} rank {len(info.shape)}",
                                        subject=spec.name))
            elif any(isinstance(m, int) and m != c for m, c in zip(info.shape, spec.shape, strict=True)):
                out.append(make_finding("input-mismatch", f"input {spec.name}: contract shape "
                                        f"{_shape_text(list(spec.shape))}, model shape {_shape_text(info.shape)}",
                                        subject=spec.name))
    names = {s.name for s in declared}
    out += [make_finding("input-mismatch", f"model input {info.name} is not declared in the contract",
                         subject=info.name)
            for info in model_inputs if info.name not in names]
    return out


def _shape_text(shape: list[Any] | None) -> str:
    if shape is None:
        return "[?]"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _node_entry(
    node: graph_facts.NodeFacts, placement: Placement, tensor_dicts: dict[str, TensorEntry], partition: int | None
) -> NodeResult:
    get = tensor_dicts.get  # called for every node: no nested helper per call
    return NodeResult(
        name=node.name, op_type=node.op_type, domain=node.domain,
        inputs=[get(name) or TensorEntry(name=name, shape=None, dtype=None) for name in node.inputs],
        outputs=[get(name) or TensorEntry(name=name, shape=None, dtype=None) for name in node.outputs],
        attributes=node.attributes, defaulted_attributes=node.defaulted,
        placement=placement.device, reasons=placement.reasons, partition=partition,
        original_name=node.original_name, split=placement.split,
    )


def _attach_sources(nodes: list[NodeResult], model: ModelProto, root: Path | None) -> None:
    """Each top-level node's PyTorch source and stable key (``graph.source``); ``nodes`` are in
    the graph's node order."""
    found = [node_source(proto, root) for proto in model.graph.node]
    if not any(found):
        return  # no node's source known: no source, and every key is the node's name
    modules = [s["module_path"] if s is not None else None for s in found]
    keys = stable_keys([n.op_type for n in nodes], modules, [n.name for n in nodes])
    for node, source, key in zip(nodes, found, keys, strict=True):
        node.source = dict(source) if source is not None else None
        node.stable_key = key if key != node.name else None  # absent: the name is the key


def _scoped_entry(sn: ScopedNode, placement: Placement) -> NodeResult:
    """A node inside a control-flow body: named by its path, outside the partitions."""
    def tensors(names: list[str]) -> list[TensorEntry]:
        out = []
        for name in names:
            info = sn.tensors.get(name) if name else None
            out.append(info.to_dict() if info else TensorEntry(name=name, shape=None, dtype=None))
        return out

    node = sn.node
    return NodeResult(
        name=sn.path, op_type=node.op_type, domain=node.domain,
        inputs=tensors(node.inputs), outputs=tensors(node.outputs),
        attributes=node.attributes, defaulted_attributes=node.defaulted,
        placement=placement.device, reasons=placement.reasons, partition=None, scope=sn.scope,
        original_name=node.original_name,
    )


def _failure_finding(rule_id: str, message: str, f: Failure, evidence: str, **where: Any) -> Finding:
    """A finding of one failed (or unchecked) constraint, with its id and values."""
    return make_finding(rule_id, message, constraint=f.constraint, actual=f.actual, allowed=f.allowed, doc=f.doc,
                        evidence=evidence, fix=f.fix, **where)


def _placement_findings(
    facts: GraphFacts,
    placements: list[Placement],
    evidence: str,
    body_nodes: Sequence[tuple[str, str]] = (),
    body: Sequence[Placement] = (),
    measured: CompilerPlacement | None = None,
) -> list[Finding]:
    """Findings of placements (CPU fallbacks, unchecked conditions on NPU nodes): top-level
    nodes, then subgraph nodes named by path."""
    out = []
    named = [(n.name, n.key) for n in facts.nodes] + list(body_nodes)
    for (name, key), placement in zip(named, [*placements, *body], strict=True):
        for f in placement.unchecked if placement.device == NPU else []:
            out.append(_failure_finding("unchecked-condition", f.message, f, evidence, node=name, op_type=key))
        if placement.device != CPU:
            continue
        # CPU fallback, unless the compiler's measurement says the node runs on the NPU or nowhere
        severity, note = _measured(measured, name)
        if placement.quantized is not None:  # runs in float, not in its unit's integer dtypes
            why = "; ".join(f"{f.constraint}: {f.message}" for f in (*placement.failures, *placement.limit_failures))
            first = (placement.failures or placement.limit_failures)[0]
            out.append(_failure_finding("quantized-op-unsupported", f"{key} has no {placement.quantized} kernel on "
                                        f"the target ({why}){note}", first, evidence, severity=severity,
                                        node=name, op_type=key))
            continue
        if placement.standalone is not None:  # a Q/DQ node in no unit the profile puts on CPU
            alone = placement.standalone
            out.append(make_finding("standalone-qdq", "; ".join(placement.reasons) + note, severity=severity,
                                    node=name, op_type=key, constraint=alone["id"], evidence=alone["evidence"]))
            continue
        if placement.qdq is not None:
            continue  # a Q/DQ node is judged with its unit's op
        if not placement.op_supported:
            out.append(make_finding("unsupported-op", placement.reasons[0] + note, severity=severity, node=name,
                                    op_type=key))
        for f in placement.failures:  # which constraint failed, then how
            out.append(_failure_finding("op-constraint", f"{f.constraint}: {f.message}{note}", f, evidence,
                                        severity=severity, node=name, op_type=key))
        for f in placement.limit_failures:
            out.append(_failure_finding("profile-limit", f.message + note, f, evidence, severity=severity,
                                        node=name, op_type=key))
    return out


def _measured(measured: CompilerPlacement | None, name: str) -> tuple[str | None, str]:
    """The severity (None: the rule's) and the note of a node's placement findings (the
    rules of ``PLACEMENT_RULES``) when a compiler's placement decides: info, and why, when
    the compiler ran the node on the NPU or removed it at compile time (it runs nowhere)."""
    node = measured.nodes.get(name) if measured is not None else None
    if measured is None or node is None:
        return None, ""
    if node.runs_on == NPU:
        return INFO, f" (measured on the NPU{' as ' + node.became if node.became else ''}: {measured.evidence})"
    if node.actual == FOLDED:
        return INFO, f" (measured: folded away by the compiler: {measured.evidence})"
    return None, ""


def _fold_budget_finding(facts: GraphFacts, skip: FoldSkip) -> Finding:
    """A folded node whose value was not computed: what was left unknown and why."""
    node = facts.nodes[skip.index]
    outputs = ", ".join(o for o in node.outputs if o)
    readers = f" (nor {skip.dependents} folded node{'s' if skip.dependents != 1 else ''} reading it)" \
        if skip.dependents else ""
    message = (f"value of {outputs} not computed while folding{readers}: {skip.why}; it still folds, "
               "but the dims that depend on it stay unknown")
    return make_finding("fold-budget", message, node=node.name, op_type=node.key, constraint=skip.limit,
                        actual=skip.actual, allowed=skip.allowed)


def memory_findings(estimates: Sequence[memlib.PartitionMemory], budget: Mapping[str, Any] | None) -> list[Finding]:
    """``memory-budget`` errors: an NPU partition's peak above ``sram_bytes``, the model's
    weights above ``weight_bytes``, both together above ``dram_bytes``; a figure unknown
    where a budget is declared cannot be checked, and fails (a gate never fails open)."""
    if not budget or not estimates:
        return []
    peak, weights, top = memlib.whole(estimates)
    heaviest = max(estimates, key=lambda e: e.weight_bytes or 0)
    together = None if peak is None or weights is None else peak + weights
    # (budget key, the partition named, the figure, what it is, whether its peak tensors matter)
    checks = [("sram_bytes", e, e.peak_activation_bytes, "peak live activations", True) for e in estimates]
    checks.append(("weight_bytes", heaviest, weights, "weights of the NPU partitions", False))
    checks.append(("dram_bytes", top or heaviest, together, "peak live activations and weights together", True))
    out = []
    for key, at, actual, what, at_peak in checks:
        allowed = budget.get(key)
        if allowed is None or (actual is not None and actual <= allowed):
            continue
        first = at.at_peak[0] if at_peak and at.at_peak else None
        if actual is None:
            unknown = next((e.unknown for e in estimates if e.unknown), None)
            message = (f"partition {at.partition}: {what} unknown ({unknown}): memory.{key} {allowed:,} "
                       "cannot be checked")
        else:
            message = (f"partition {at.partition}: {what} {actual:,} bytes (estimated upper bound) exceed "
                       f"memory.{key} {allowed:,}")
            if first is not None:
                message += "; largest live at the peak: " + ", ".join(
                    f"{t['tensor']} ({t['bytes']:,} B, from {t['producer'] or 'a graph input'})" for t in at.at_peak)
        message += f" (the profile's budget: {budget.get('evidence', '')})"
        out.append(make_finding("memory-budget", message, node=first["producer"] if first else None,
                                subject=first["tensor"] if first else None, partition=at.partition,
                                constraint=f"memory.{key}", actual=actual, allowed=allowed))
    return out


def _dynamic_shape_findings(a: Analysis, severity: str) -> list[Finding]:
    """A finding per non-folded node with an output whose shape is not static, each with its
    root cause (``Finding.cause``: the dynamic input dims it follows from)."""
    facts = a.facts
    causes: dict[int, list[str]] | None = None
    out = []
    for node, placement in zip(facts.nodes, a.placements, strict=True):
        if placement.device in (FOLDED, ELIMINATED):
            continue  # constants the compiler evaluates ahead of time, or nodes it removes
        dynamic = []
        for name in node.outputs:
            info = facts.tensors.get(name) if name else None
            if name and (info is None or not info.static):
                dynamic.append(info or TensorInfo(name, None, None))
        if dynamic:
            shapes = ", ".join(f"{t.name} {_shape_text(t.shape) if t.shape is not None else 'unknown'}"
                               for t in dynamic)
            if causes is None:  # only for a model with dynamic shapes
                order = a.order or list(range(len(facts.nodes)))
                causes = dims.dynamic_causes(facts, order, a.model_inputs)
            out.append(make_finding("dynamic-shape", f"output shape not static: {shapes}", severity=severity,
                                    node=node.name, op_type=node.key, cause=causes.get(node.index)))
    return out
