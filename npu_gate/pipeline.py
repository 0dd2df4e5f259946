"""The gate, in order: contract → model → graph facts → placement/partitions → numerics → result.

``check_contract`` gates a contract; ``inspect_model`` looks at any ONNX file with the
model's own shapes. Both return one GateResult and never print.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
from onnx import ModelProto

from npu_gate.contract.spec import Contract, Gates, InputSpec, Waiver
from npu_gate.gc_pause import gc_paused
from npu_gate.graph import dims, shape_chains, shape_values, symbolic
from npu_gate.graph import facts as graphlib
from npu_gate.graph.facts import GraphFacts, TensorInfo
from npu_gate.graph.layout import tensor_layouts
from npu_gate.graph.model_file import copy_model, external_tensors, load_onnx
from npu_gate.graph.subgraphs import ScopedNode, collect_subgraph_nodes
from npu_gate.placement import adapters
from npu_gate.placement import fusions as patterns
from npu_gate.placement.partitions import boundaries, build_partitions, total_bytes
from npu_gate.placement.place import CPU, FOLDED, NPU, Placement, fold, place_all, place_subgraphs
from npu_gate.result.types import (
    FAIL,
    PASS,
    Finding,
    GateCheck,
    GateResult,
    NodeResult,
    PartitionResult,
)
from npu_gate.rules import ERROR, INFO, RULES, WARNING
from npu_gate.target.limits import opset_failure
from npu_gate.target.profile import Profile
from npu_gate.versions import tool_versions as versions


@dataclass
class Settings:
    """What the analysis needs beyond the model: from a contract, or defaults for inspect."""

    profile: Profile
    inputs: list[InputSpec] | None = None  # None: take shapes from the model
    gates: Gates = field(default_factory=Gates)
    waivers: list[Waiver] = field(default_factory=list)
    today: dt.date = field(default_factory=dt.date.today)


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
    constants: set[str] = field(default_factory=set)
    samples: list[dict[str, Any]] = field(default_factory=list)  # used by numerics


def inspect_model(path: Path, profile: Profile, *, keep: Artifacts | None = None,
                  shapes: dict[str, list[int]] | None = None) -> GateResult:
    """``shapes``: static input shapes that replace the model's (a probe's ``--inputs``), applied
    as a contract's are; None or empty: the model's own."""
    start = time.perf_counter()
    model, sha256 = load_onnx(path, weights=False)
    loaded = time.perf_counter()
    result = _new_result(path.stem, profile, {"source": "onnx", "path": path.name, "sha256": sha256})
    result.stages["export"] = {"status": "skipped", "reason": "ONNX file given"}
    if keep is not None:
        keep.model_path = copy_model(path, keep.folder)
    _analyze(model, Settings(profile=profile, inputs=_given_shapes(model, shapes) if shapes else None), result, keep)
    result.stages["numerics"] = {"status": "skipped", "reason": "no PyTorch reference (inspect)"}
    _finish(result, Settings(profile=profile))
    result.timings = {"load_s": loaded - start, "total_s": time.perf_counter() - start}
    return result


def _given_shapes(model: ModelProto, shapes: dict[str, list[int]]) -> list[InputSpec]:
    """Input specs for the given shapes, with the model's own dtypes (only the shapes are asked for)."""
    dtypes = {v.name: graphlib.tensor_info_from_type(v.name, v.type).dtype for v in model.graph.input}
    return [InputSpec(name, list(shape), dtypes.get(name) or "float32", None, (0.0, 1.0))
            for name, shape in shapes.items()]


def check_contract(
    contract: Contract, *, today: dt.date | None = None, keep: Artifacts | None = None
) -> GateResult:
    start = time.perf_counter()
    settings = Settings(
        profile=contract.profile,
        inputs=contract.inputs,
        gates=contract.gates,
        waivers=contract.waivers,
        today=today or dt.date.today(),
    )
    contract_info = {"path": contract.path.name, "sha256": contract.sha256}
    timings: dict[str, float] = {}
    from npu_gate.stages.rewrites import Rewriting

    rewriting = Rewriting(contract)  # the contract's rewrites, suggestions, review table
    if contract.onnx_path is not None:
        model, sha256 = load_onnx(contract.onnx_path, weights=False)
        timings["load_s"] = time.perf_counter() - start
        result = _new_result(contract.name, contract.profile,
                             {"source": "onnx", "path": contract.onnx_ref, "sha256": sha256})
        result.contract = contract_info
        result.stages["export"] = {"status": "skipped", "reason": "ONNX file given"}
        if keep is not None:
            keep.model_path = copy_model(contract.onnx_path, keep.folder)
        model = rewriting.prepare(model, result)
        _analyze(model, settings, result, keep)
        rewriting.load_weights(contract.onnx_path.resolve().parent, result)
        if contract.probe is not None:
            with tempfile.TemporaryDirectory(prefix="npu-gate-probe-") as work:
                _probe_stage(contract, rewriting.compiled_path(contract.onnx_path, Path(work)), result, timings)
        result.stages["numerics"] = {"status": "skipped", "reason": "no PyTorch reference (ONNX contract)"}
    else:
        result = _check_torch(contract, settings, timings, keep, rewriting)
        result.contract = contract_info
    rewriting.evaluate(settings, result, timings)
    _finish(result, settings)
    if result.exporter_comparison and "diff" in result.exporter_comparison:
        result.exporter_comparison["diff"]["a"]["verdict"] = result.verdict  # known only now
    rewriting.review(result, timings)
    timings["total_s"] = time.perf_counter() - start
    result.timings = timings
    return result


def _check_torch(
    contract: Contract, settings: Settings, timings: dict[str, float], keep: Artifacts | None = None,
    rewriting: Any = None,
) -> GateResult:
    from npu_gate.model import export as exporter  # the torch path only

    assert contract.torch is not None
    build_log: list[str] = []
    module = exporter.build_module(contract, log=build_log)
    spec = contract.torch
    info: dict[str, Any] = {"source": "torch", "factory": spec.factory, "exporter": spec.exporter,
                            "opset_requested": spec.opset, "sha256": None}
    result = _new_result(contract.name, contract.profile, info)
    result.log.extend(build_log)
    with tempfile.TemporaryDirectory(prefix="npu-gate-") as work:
        outcome = exporter.export(contract, module, Path(work))
        timings["export_s"] = outcome.seconds
        result.log.extend(outcome.log)
        outcome.error = _scrub(outcome.error, work)
        if outcome.error or outcome.onnx_path is None:
            result.stages["export"] = {"status": "failed", "reason": outcome.error}
            result.stages["numerics"] = {"status": "skipped", "reason": "export failed"}
            result.findings.append(_finding("export-failed", f"{spec.exporter} export failed: {outcome.error}"))
            return result
        result.stages["export"] = {"status": "ok", "exporter": spec.exporter, "log_lines": len(outcome.log)}
        model, sha256 = load_onnx(outcome.onnx_path, "exported model", weights=False)
        info["sha256"] = sha256
        if keep is not None:
            keep.model_path = copy_model(outcome.onnx_path, keep.folder)
        if rewriting is not None:
            model = rewriting.prepare(model, result)
        _analyze(model, settings, result, keep)
        if rewriting is not None:  # now: the exported model's folder is temporary
            rewriting.load_weights(outcome.onnx_path.parent, result)
        if spec.compare_exporters:
            result.exporter_comparison = _other_exporter(contract, module, settings, Path(work),
                                                         result, timings)
        probed = outcome.onnx_path if rewriting is None else rewriting.compiled_path(outcome.onnx_path, Path(work))
        _probe_stage(contract, probed, result, timings)
        if contract.numerics.samples == 0:
            result.stages["numerics"] = {"status": "skipped", "reason": "numerics.samples is 0"}
            return result
        from npu_gate.model.numerics import compare

        compared = outcome.onnx_path if rewriting is None else rewriting.numerics_path(outcome.onnx_path, Path(work))
        numerics = compare(contract, module, compared)
        timings["numerics_s"] = numerics.seconds
        if keep is not None:
            keep.samples = numerics.samples
        result.log.extend(numerics.log)
        numerics.error = _scrub(numerics.error, work)
    if numerics.error:
        result.stages["numerics"] = {"status": "failed", "reason": numerics.error}
        result.findings.append(_finding("numerics-failed", numerics.error))
        return result
    result.stages["numerics"] = {"status": "ok", "samples": contract.numerics.samples}
    result.numerics = [c.to_dict() for c in numerics.comparisons]
    for c in numerics.comparisons:
        if not c.passed:
            detail = c.problem or (
                f"max abs error {c.max_abs_err:.3g}, max rel error {c.max_rel_err:.3g} "
                f"(atol {c.atol:g}, rtol {c.rtol:g})"
            )
            result.findings.append(_finding("numeric-mismatch", f"output {c.output}: {detail}"))
    return result


def _scrub(text: str | None, workdir: str) -> str | None:
    """Messages that quote the temporary export folder name it "<export dir>": the result
    must not change from run to run (the evidence bundle compares them byte for byte)."""
    if text is None:
        return None
    for form in {workdir, str(Path(workdir).resolve())}:
        text = text.replace(form, "<export dir>")
    return text
def _other_exporter(
    contract: Contract, module: Any, settings: Settings, work: Path, gated: GateResult,
    timings: dict[str, float],
) -> dict[str, Any]:
    """Export with the exporter the contract does not gate, analyse that graph the same way,
    and diff it against the gated one (``compare_exporters``)."""
    import dataclasses

    from npu_gate.compare.diff import diff_results
    from npu_gate.model import export as exporter

    assert contract.torch is not None
    spec = contract.torch
    other = "torchscript" if spec.exporter == "dynamo" else "dynamo"
    alt_contract = dataclasses.replace(contract, torch=dataclasses.replace(spec, exporter=other))
    folder = work / other
    folder.mkdir()
    outcome = exporter.export(alt_contract, module, folder)
    timings[f"export_{other}_s"] = outcome.seconds
    gated.log.extend(f"[{other}] {line}" for line in outcome.log)
    if outcome.error or outcome.onnx_path is None:
        return {"exporter": other, "status": "failed", "reason": outcome.error}
    model, sha256 = load_onnx(outcome.onnx_path, f"{other} export", weights=False)
    alt = _new_result(contract.name, contract.profile,
                      {"source": "torch", "factory": spec.factory, "exporter": other,
                       "opset_requested": spec.opset, "sha256": sha256})
    _analyze(model, settings, alt)
    _finish(alt, settings)
    diff = diff_results(gated.to_dict(), alt.to_dict(),
                        (f"{spec.exporter} (gated)", f"{other} (compared)"))
    return {"exporter": other, "status": "ok", "verdict": alt.verdict, "diff": diff}


def _new_result(name: str, profile: Profile, model: dict[str, Any]) -> GateResult:
    return GateResult(name=name, verdict=FAIL, profile=profile.to_dict(), versions=versions(), model=model)


def _finding(rule_id: str, message: str, **where: Any) -> Finding:
    return Finding(rule=rule_id, severity=RULES[rule_id].severity, message=message, **where)


@gc_paused()  # see gc_pause.py: collections would rescan every node's objects
def _analyze(
    model: ModelProto, settings: Settings, result: GateResult, keep: Artifacts | None = None
) -> None:
    """Graph facts, placement, partitions and their findings, into ``result``."""
    declared = {s.name: s for s in settings.inputs} if settings.inputs is not None else {}
    initializer_names = {i.name for i in model.graph.initializer}
    as_inputs = frozenset(n for n in declared if n in initializer_names)
    model_inputs = [
        graphlib.tensor_info_from_type(v.name, v.type)
        for v in model.graph.input
        if v.name not in initializer_names or v.name in as_inputs
    ]
    unread = len(external_tensors(model.graph))
    if unread:
        result.model["external_weights_unread"] = unread  # left on disk: dims suffice
    dynamic_severity = WARNING if settings.gates.allow_dynamic_shapes else ERROR
    input_findings = _input_findings(model_inputs, settings.inputs, dynamic_severity)
    result.findings.extend(input_findings)

    checker_errors = graphlib.run_checker(model, external=bool(unread))
    # The contract fixes the dims the model leaves open; a static dim it contradicts stays the
    # model's (an input-mismatch finding): the model could not run with the contract's.
    fixable = {i.name: [m if isinstance(m, int) else c for m, c in zip(i.shape, declared[i.name].shape, strict=True)]
               for i in model_inputs
               if i.name in declared and i.shape is not None and len(i.shape) == len(declared[i.name].shape)}
    # Inputs whose symbolic dims the contract fixes: keep the model's own types to see
    # later which shape chains fold only because of the contract.
    model_types = {v.name: onnx.TypeProto.FromString(v.type.SerializeToString())
                   for v in model.graph.input
                   if v.name in fixable
                   and any(not isinstance(d, int) for d in _declared(model_inputs, v.name))}
    graphlib.apply_input_shapes(model, fixable)
    inferred, strict_error, shape_error = graphlib.infer_shapes(model)
    facts = graphlib.collect(inferred, checker_errors, shape_error, as_inputs)

    for message in checker_errors:
        result.findings.append(_finding("onnx-checker", message))
    if strict_error:  # the full check's strict shape inference failed: the model is invalid
        node = graphlib.node_named_in(strict_error)
        known = {n.name for n in facts.nodes}
        result.findings.append(_finding("onnx-checker", f"full check: {strict_error}",
                                        node=node if node in known else None))
    if shape_error:
        result.findings.append(_finding("shape-inference", shape_error))
    opset_limit = opset_failure(settings.profile.limits, facts.opset)
    if opset_limit is not None:
        result.findings.append(_finding(
            "profile-limit", opset_limit.message, constraint=opset_limit.constraint,
            actual=opset_limit.actual, allowed=opset_limit.allowed, doc=opset_limit.doc,
            evidence=settings.profile.evidence))
    symbols = shape_chains.input_symbols(model_inputs)
    deps = graphlib.node_dependencies(facts.nodes)
    order = graphlib.topological_order(facts.nodes, deps)
    folded, constants = _fold_refining_shapes(inferred, facts, order, symbols, result.stages)
    chains = shape_chains.find_chains(inferred, facts, folded, constants, symbols)
    if model_types:
        model_view = shape_chains.model_view_chains(model, model_types, as_inputs, symbols)
        shape_chains.mark_fixed_by_contract(chains, model_view)
    declared_layouts = {s.name: s.layout for s in settings.inputs or [] if s.layout}
    layouts = tensor_layouts(facts.nodes, order, facts.tensors, declared_layouts)
    values = shape_values.ConstantValues(inferred, facts.nodes, facts.tensors, folded)  # read only if a test asks
    placements = place_all(facts, settings.profile, folded, constants, layouts, values)
    fusions = patterns.fuse(inferred, facts, settings.profile, placements, folded, constants, layouts)
    scoped = collect_subgraph_nodes(inferred, facts, constants)
    body = place_subgraphs(scoped, settings.profile, placements, layouts)
    partitions = build_partitions(facts, placements, deps)
    crossings = boundaries(facts, partitions)
    part_of = {i: p.id for p in partitions for i in p.nodes}

    result.model.update({"opset": facts.opset, "ir_version": facts.ir_version,
                         "producer": facts.producer, "node_count": len(facts.nodes)})
    result.inputs = [_input_entry(i, facts, declared) for i in model_inputs]
    result.outputs = [o.to_dict() | {"static": o.static} for o in facts.outputs]
    result.ops = dict(sorted(Counter(n.key for n in facts.nodes).items()))
    tensor_dicts = {name: info.to_dict() for name, info in facts.tensors.items()}  # shared, read-only
    result.nodes = [_node_entry(n, placements[n.index], tensor_dicts, part_of.get(n.index)) for n in facts.nodes]
    result.nodes += [_scoped_entry(sn, p) for sn, p in zip(scoped, body, strict=True)]
    if fusions is not None:
        patterns.record(result, fusions, placements)
    if settings.profile.rank_adapters:
        adapters.record(result, settings.profile, facts, model_inputs)
    names = [n.name for n in facts.nodes]
    result.partitions = [PartitionResult(p.id, p.device, [names[i] for i in p.nodes]) for p in partitions]
    result.boundaries = crossings
    result.findings.extend(_placement_findings(facts, placements, settings.profile.evidence,
                                               [(sn.path, sn.node.key) for sn in scoped], body))
    result.findings.extend(_dynamic_shape_findings(facts, placements, dynamic_severity))
    result.shape_chains = [c.to_dict() for c in chains]
    result.dynamic_dims = dims.dynamic_dims(model_inputs, declared, chains)
    for chain in chains:
        if not chain.folds:
            message = shape_chains.describe(chain)
            result.findings.append(Finding("shape-computation", dynamic_severity, message,
                                           node=chain.consumer, op_type=chain.consumer_op))
    dims.add_fix_effects(input_findings, model_inputs, chains)
    devices = Counter(p.device for p in placements)
    result.summary = {
        "node_count": len(facts.nodes),
        "npu_nodes": devices[NPU],
        "cpu_nodes": devices[CPU],
        "folded_nodes": devices[FOLDED],
        "npu_partitions": sum(1 for p in partitions if p.device == NPU),
        "cpu_partitions": sum(1 for p in partitions if p.device == CPU),
        "boundary_bytes": total_bytes(crossings),
        "dynamic_inputs": [i.name for i in model_inputs if not i.static],
        "subgraph_nodes": len(scoped),
        "subgraph_cpu_nodes": sum(1 for p in body if p.device == CPU),
        "nodes_after_folding": len(facts.nodes) - devices[FOLDED],
        "shape_chains": len(chains),
        "shape_chains_staying": sum(1 for c in chains if not c.folds),
    }
    if keep is not None:
        keep.inferred, keep.facts, keep.folded, keep.constants = inferred, facts, folded, constants


def _declared(model_inputs: list[TensorInfo], name: str) -> list[Any]:
    info = next((i for i in model_inputs if i.name == name), None)
    return list(info.shape or []) if info is not None else []


def _input_entry(info: TensorInfo, facts: GraphFacts, declared: dict[str, InputSpec]) -> dict[str, Any]:
    used = facts.tensors.get(info.name, info)
    return {"name": info.name, "shape": used.shape, "dtype": used.dtype, "static": info.static,
            "model_shape": info.shape, "declared": info.name in declared}


def _fold_refining_shapes(
    inferred: onnx.ModelProto, facts: GraphFacts, order: list[int], symbols: dict[str, list[str]],
    stages: dict[str, Any],
) -> tuple[set[int], set[str]]:
    """Fold constants, filling the dims ONNX left unknown on the way (``facts.tensors``).

    Cheapest first: ONNX inference again on the folded graph (``stages.folded_shapes``), then
    onnxruntime's symbolic inference for what is still unknown (``stages.symbolic_shapes``;
    loading it and sympy costs ~0.5 s). A dim either makes known may let more Shape nodes fold.
    """
    folded, constants = fold(facts, order, facts.initializers)
    by_folding = symbolic.refine_by_folding(inferred, facts, folded, symbols)
    if by_folding is not None:
        stages["folded_shapes"] = by_folding
        if by_folding["resolved"]:
            folded, constants = fold(facts, order, facts.initializers)
    by_symbols = symbolic.refine_stage(inferred, facts, symbols, folded)
    if by_symbols is not None:
        stages["symbolic_shapes"] = by_symbols
        if by_symbols["resolved"]:
            folded, constants = fold(facts, order, facts.initializers)
            again = symbolic.refine_by_folding(inferred, facts, folded, symbols)
            if again is not None and again["resolved"]:
                first = stages.get("folded_shapes", again)
                stages["folded_shapes"] = {"status": "ok", "unknown": first["unknown"],
                                           "resolved": first["resolved"] + again["resolved"]}
                folded, constants = fold(facts, order, facts.initializers)
    return folded, constants


def _input_findings(
    model_inputs: list[TensorInfo], declared: list[InputSpec] | None, dynamic_severity: str
) -> list[Finding]:
    findings = []
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
            message = f"input {info.name} has {shape} in the model{fix}"
            findings.append(Finding("dynamic-input", dynamic_severity, message))
    if declared is None:
        return findings
    by_name = {i.name: i for i in model_inputs}
    for spec in declared:
        found = by_name.get(spec.name)
        if found is None:
            findings.append(_finding("input-mismatch", f"contract input {spec.name} is not an input of the model "
                                     f"(model inputs: {', '.join(by_name) or 'none'})"))
            continue
        info = found
        if info.dtype is not None and info.dtype != spec.dtype:
            findings.append(_finding("input-mismatch", f"input {spec.name}: contract dtype {spec.dtype}, "
                                     f"model dtype {info.dtype}"))
        if info.shape is not None:
            if len(info.shape) != len(spec.shape):
                findings.append(_finding("input-mismatch", f"input {spec.name}: contract shape "
                                         f"{_shape_text(list(spec.shape))} has rank {len(spec.shape)}, "
                                         f"the model's {_shape_text(info.shape)} rank {len(info.shape)}"))
            elif any(isinstance(m, int) and m != c for m, c in zip(info.shape, spec.shape, strict=True)):
                findings.append(_finding("input-mismatch", f"input {spec.name}: contract shape "
                                         f"{_shape_text(list(spec.shape))}, model shape {_shape_text(info.shape)}"))
    names = {s.name for s in declared}
    for info in model_inputs:
        if info.name not in names:
            findings.append(_finding("input-mismatch", f"model input {info.name} is not declared in the contract"))
    return findings


def _shape_text(shape: list[Any] | None) -> str:
    if shape is None:
        return "[?]"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _node_entry(
    node: graphlib.NodeFacts, placement: Placement, tensor_dicts: dict[str, dict[str, Any]], partition: int | None
) -> NodeResult:
    get = tensor_dicts.get  # called for every node: no nested helper per call
    return NodeResult(
        name=node.name, op_type=node.op_type, domain=node.domain,
        inputs=[get(name) or {"name": name, "shape": None, "dtype": None} for name in node.inputs],
        outputs=[get(name) or {"name": name, "shape": None, "dtype": None} for name in node.outputs],
        attributes=node.attributes, defaulted_attributes=node.defaulted,
        placement=placement.device, reasons=placement.reasons, partition=partition,
        original_name=node.original_name,
    )


def _placement_findings(
    facts: GraphFacts,
    placements: list[Placement],
    evidence: str,
    body_nodes: Sequence[tuple[str, str]] = (),
    body: Sequence[Placement] = (),
) -> list[Finding]:
    """Findings of placements (CPU fallbacks, unchecked conditions on NPU nodes): top-level
    nodes, then subgraph nodes named by path."""
    findings = []
    named = [(n.name, n.key) for n in facts.nodes] + list(body_nodes)
    for (name, key), placement in zip(named, [*placements, *body], strict=True):
        for f in placement.unchecked if placement.device == NPU else []:
            findings.append(_finding("unchecked-condition", f.message, node=name, op_type=key,
                                     constraint=f.constraint, actual=f.actual, allowed=f.allowed,
                                     doc=f.doc, evidence=evidence))
        if placement.device != CPU:
            continue
        if not placement.op_supported:
            findings.append(_finding("unsupported-op", placement.reasons[0], node=name,
                                     op_type=key))
        for f in placement.failures:  # which constraint failed, then how
            findings.append(_finding("op-constraint", f"{f.constraint}: {f.message}", node=name, op_type=key,
                                     constraint=f.constraint, actual=f.actual, allowed=f.allowed,
                                     doc=f.doc, evidence=evidence))
        for f in placement.limit_failures:
            findings.append(_finding("profile-limit", f.message, node=name, op_type=key,
                                     constraint=f.constraint, actual=f.actual, allowed=f.allowed,
                                     doc=f.doc, evidence=evidence))
    return findings


def _scoped_entry(sn: ScopedNode, placement: Placement) -> NodeResult:
    """A node inside a control-flow body: named by its path, outside the partitions."""
    def tensors(names: list[str]) -> list[dict[str, Any]]:
        out = []
        for name in names:
            info = sn.tensors.get(name) if name else None
            out.append(info.to_dict() if info else {"name": name, "shape": None, "dtype": None})
        return out

    node = sn.node
    return NodeResult(
        name=sn.path, op_type=node.op_type, domain=node.domain,
        inputs=tensors(node.inputs), outputs=tensors(node.outputs),
        attributes=node.attributes, defaulted_attributes=node.defaulted,
        placement=placement.device, reasons=placement.reasons, partition=None, scope=sn.scope,
        original_name=node.original_name,
    )


def _dynamic_shape_findings(facts: GraphFacts, placements: list[Placement], severity: str) -> list[Finding]:
    findings = []
    for node, placement in zip(facts.nodes, placements, strict=True):
        if placement.device == FOLDED:
            continue  # constants: the compiler evaluates them ahead of time
        dynamic = []
        for name in node.outputs:
            info = facts.tensors.get(name) if name else None
            if name and (info is None or not info.static):
                dynamic.append(info or TensorInfo(name, None, None))
        if dynamic:
            shapes = ", ".join(f"{t.name} {_shape_text(t.shape) if t.shape is not None else 'unknown'}"
                               for t in dynamic)
            findings.append(Finding("dynamic-shape", severity, f"output shape not static: {shapes}",
                                    node=node.name, op_type=node.key))
    return findings


def _finish(result: GateResult, settings: Settings) -> None:
    """Gates, waivers and the verdict."""
    summary = result.summary
    measured = summary.get("measured", {})  # target.probe.decide = measured, and the compiler built it
    checks = [
        ("max_cpu_nodes", settings.gates.max_cpu_nodes, measured.get("cpu_nodes", summary.get("cpu_nodes"))),
        ("max_npu_partitions", settings.gates.max_npu_partitions,
         measured.get("npu_partitions", summary.get("npu_partitions"))),
        ("max_boundary_bytes", settings.gates.max_boundary_bytes, summary.get("boundary_bytes")),
    ]
    analysed = "node_count" in summary
    for name, limit, actual in checks:
        if limit is None or not analysed:
            result.gates.append(GateCheck(name, limit, actual, True))
            continue
        passed = actual is not None and actual <= limit
        result.gates.append(GateCheck(name, limit, actual, passed))
        if not passed:
            what = "unknown (shapes not static)" if actual is None else actual
            result.findings.append(_finding("gate-exceeded", f"{name}: {what} exceeds the limit {limit}"))

    used: set[int] = set()  # every waiver matching a finding, also one an earlier waiver shadows
    for finding in result.findings:
        matching = [i for i, waiver in enumerate(settings.waivers) if _matches(waiver, finding)]
        used.update(matching)
        live = [i for i in matching if not _expired(settings.waivers[i], settings.today)]
        if live:
            finding.waived = True
            finding.waiver_reason = settings.waivers[live[0]].reason
    for i, waiver in enumerate(settings.waivers):
        where = ", ".join(f"{k}={v}" for k, v in waiver.to_dict().items() if k in ("rule", "node", "op_type"))
        if _expired(waiver, settings.today):
            result.findings.append(_finding("waiver-expired", f"waivers[{i}] ({where}) expired on "
                                            f"{waiver.expires} and no longer waives"))
        elif i not in used:
            hint = _not_unique_hint(waiver, result.nodes)
            result.findings.append(_finding("waiver-unused", f"waivers[{i}] ({where}) matched no finding{hint}"))

    errors = result.active_findings(ERROR)
    result.verdict = FAIL if errors else PASS
    counts = Counter(f.severity for f in result.findings if not f.waived)
    result.summary["findings"] = {"error": counts["error"], "warning": counts["warning"],
                                  "info": counts["info"], "waived": sum(f.waived for f in result.findings)}


def _not_unique_hint(waiver: Waiver, nodes: list[NodeResult], most: int = 10) -> str:
    """For a waiver naming a node by a name several nodes share: the display names to use."""
    if not waiver.node:
        return ""
    names = [n.name for n in nodes if n.original_name == waiver.node]
    if not names:
        return ""
    shown = ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
    return f": node '{waiver.node}' is not unique in the model: use {shown}"


def _expired(waiver: Waiver, today: dt.date) -> bool:
    return waiver.expires is not None and waiver.expires < today


def _matches(waiver: Waiver, finding: Finding) -> bool:
    return (
        waiver.rule == finding.rule
        and (waiver.node is None or waiver.node == finding.node)
        and (waiver.op_type is None or waiver.op_type == finding.op_type)
    )


def _probe_stage(contract: Contract, onnx_path: Path, result: GateResult, timings: dict[str, float]) -> None:
    """target.probe: build with the real compiler; with decide = measured its placement decides."""
    spec = contract.probe
    if spec is None or "node_count" not in result.summary:
        return
    from npu_gate.probe import get_compiler, venv_for
    from npu_gate.probe.runner import probe

    compiler = get_compiler(spec.compiler)
    venv = venv_for(spec.venv, compiler)
    given = f"{venv}" if spec.venv is not None else f"not given, so .venv-{compiler.name} in the current folder"
    measured = probe(onnx_path, compiler, spec.target, compiler.python(venv), profile=contract.profile,
                     inputs={s.name: list(s.shape) for s in contract.inputs}, timeout=spec.timeout,
                     venv_key=f"{contract.path}: target.probe.venv: {given}")
    timings["probe_s"] = measured.timings["total_s"]
    result.log.extend(f"probe: {line}" for line in measured.log)
    decides = spec.decide == "measured" and measured.built
    result.stages["probe"] = {
        "status": "ok" if measured.built else "failed", "probe_status": measured.status,
        "reason": measured.error, "evidence": measured.evidence, "decide": spec.decide,
        "compiler": measured.compiler, "summary": measured.summary,
        "nodes": [n.to_dict() for n in measured.nodes], "segments": [g.to_dict() for g in measured.segments],
    }
    for f in measured.findings:
        result.findings.append(Finding(rule=f["rule"], severity=f["severity"], message=f["message"]))
    result.summary["evidence"] = measured.evidence if decides else f"prediction: profile {contract.profile.name}"
    if not decides:
        return
    nodes = {n.name: n for n in measured.nodes}
    for finding in result.findings:  # CPU fallbacks the compiler did not make are not errors
        node = nodes.get(finding.node or "")
        if finding.rule not in ("unsupported-op", "op-constraint") or node is None:
            continue
        if node.runs_on == NPU:
            finding.severity = INFO
            finding.message += (f" (measured on the NPU{' as ' + node.became if node.became else ''}: "
                                f"{measured.evidence})")
        elif node.actual == FOLDED:  # removed at compile time: it runs nowhere, so it is no CPU fallback
            finding.severity = INFO
            finding.message += f" (measured: folded away by the compiler: {measured.evidence})"
    s = measured.summary
    result.summary["measured"] = {
        "cpu_nodes": sum(1 for n in measured.nodes if n.runs_on in (CPU, "split")),
        "npu_partitions": s["npu_segments"], "cpu_partitions": s["cpu_segments"],
    }
