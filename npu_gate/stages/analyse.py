"""The analysis stage: graph facts, placement, partitions, shape chains of one ONNX graph.

``analyse`` fills the result's analysis part (nodes, partitions, boundaries, summary...) and
returns what the findings are made from (``Analysis``, defined in ``findings/analysis.py`` and
re-exported here). ``findings`` makes them, once, with the builders of ``npu_gate/findings/``:
after the probe stage when a real compiler's placement decides (``target.probe.decide:
measured``), so a CPU fallback the compiler did not make is an info finding from the start,
never edited later.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import onnx
from onnx import ModelProto

from npu_gate.contract.parts import InputSpec
from npu_gate.errors import ContractError
from npu_gate.findings.analysis import Analysis, CompilerPlacement
from npu_gate.findings.collect import analysis_findings
from npu_gate.findings.shapes import shape_text
from npu_gate.graph import dims, shape_chains, shape_values, symbolic
from npu_gate.graph import facts as graph_facts
from npu_gate.graph.facts import GraphFacts, TensorInfo
from npu_gate.graph.fold import fold
from npu_gate.graph.fold_budget import FoldBudget
from npu_gate.graph.layout import tensor_layouts
from npu_gate.graph.model_file import external_tensors
from npu_gate.graph.source import node_source, stable_keys
from npu_gate.graph.subgraphs import ScopedNode, collect_subgraph_nodes
from npu_gate.graph.symbols import input_symbols
from npu_gate.placement import fusions as patterns
from npu_gate.placement import memory as memlib
from npu_gate.placement.adapters import graph_adapters
from npu_gate.placement.eliminate import NumericChange, eliminate
from npu_gate.placement.partitions import boundaries, build_partitions, total_bytes
from npu_gate.placement.place import Placement, place_all, place_subgraphs
from npu_gate.placement.refusals import refusals
from npu_gate.process.gc_pause import gc_paused
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
    TensorEntry,
)
from npu_gate.rules import ERROR, WARNING
from npu_gate.stages.context import Artifacts, Settings

__all__ = ["Analysis", "CompilerPlacement", "analyse", "analyse_with_findings", "check_contract_inputs", "findings",
           "graph_inputs"]


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
    listed = ", ".join(f"{i.name} {shape_text(i.shape) if i.shape is not None else '(no shape)'}"
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
            problems.append(f"{label}: inputs[{k}].shape: {shape_text(list(spec.shape))} for input {spec.name} "
                            f"contradicts the model's {shape_text(info.shape)} (model inputs: {listed})")
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
    """The analysis' findings in report order (``findings.collect.analysis_findings``). ``measured``:
    the compiler's placement decides whether a placement finding is a CPU fallback (error) or a
    node the compiler ran on the NPU or folded away (info, saying so)."""
    return analysis_findings(analysis, measured)


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
