"""All the findings of one analysed graph, in report order (``stages/analyse.findings``)."""

from __future__ import annotations

from npu_gate.findings import compiler, model, placement, shapes
from npu_gate.findings.analysis import Analysis, CompilerPlacement
from npu_gate.findings.gates import memory_findings
from npu_gate.result.types import Finding


def analysis_findings(a: Analysis, measured: CompilerPlacement | None = None) -> list[Finding]:
    """The analysis' findings in report order: inputs, checker and shape inference, the
    opset limit, the compiler's refusals, rank adapters, placement, dynamic shapes, shape chains. ``measured``: the
    compiler's placement decides whether a placement finding is a CPU fallback (error) or a
    node the compiler ran on the NPU or folded away (info, saying so)."""
    out = shapes.input_findings(a.model_inputs, a.inputs, a.dynamic_severity, a.chains)
    out += model.checker_findings(a.checker_errors, a.strict_error, a.facts)
    if a.shape_error:
        out.append(shapes.shape_inference(a.shape_error))
    if a.opset_limit is not None and not opset_refused(a):
        out.append(placement.opset_limit(a.opset_limit, a.evidence))
    out += compiler.refusal_findings(a.refusals, a.evidence)
    out += [compiler.numeric_change_finding(c, a.evidence) for c in a.numeric_changes]
    out += placement.rank_adapter_findings(a.adapters, a.evidence)
    out += placement.placement_findings(a.facts, a.placements, a.evidence,
                                        [(sn.path, sn.node.key) for sn in a.scoped], a.body, measured)
    out += [placement.split_finding(a.facts.nodes[i], p, a.evidence) for i, p in enumerate(a.placements)
            if p.split is not None]
    out += [shapes.fold_budget_finding(a.facts, skip) for skip in a.fold_skips]
    out += shapes.dynamic_shape_findings(a.facts, a.placements, a.order, a.model_inputs, a.dynamic_severity)
    out += memory_findings(a.memory, a.memory_budget)
    out += shapes.shape_computation_findings(a.chains, a.dynamic_severity)
    return out


def opset_refused(a: Analysis) -> bool:
    """The model's opset, outside the profile's limit, is above the compiler's maximum too (a
    ``refuses`` opset-above entry matched): that entry's ``compiler-will-refuse``, in the compiler's
    own words and with its evidence, is the one finding for it (issue 20)."""
    return any(r.graph == "opset-above" for r in a.refusals)
