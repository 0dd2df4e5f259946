"""The model file and its export: ``contract-invalid``, ``export-failed``, ``onnx-checker``."""

from __future__ import annotations

from npu_gate.findings.doc import RuleDoc
from npu_gate.graph import facts as graph_facts
from npu_gate.graph.facts import GraphFacts
from npu_gate.result.types import Finding, make_finding

CONTRACT_INVALID = RuleDoc(
    "contract-invalid",
    finds="The contract, a profile it names, or the model file cannot be used. Not a finding: npu-gate "
          "prints one line per problem (file and JSON path) and exits 2 before any model is analysed.",
    why="Nothing was judged yet: no placement, no numerics. A gate that cannot read its contract must not "
        "pass, so the run stops instead of reporting.",
    example="None: the problem is in `npu-gate.json` (or a profile, or the model file), not in the module.",
    fix="Fix the contract (the line names the file and the JSON path); nothing was judged yet.",
    evidence="The contract's schema and semantic checks, and the profile and model files it names.",
    fields="None: no result is written; stderr holds one line per problem and the exit code is 2.",
)

EXPORT_FAILED = RuleDoc(
    "export-failed",
    finds="The PyTorch model could not be exported to ONNX (or a contract's `replacement` model could not "
          "be loaded).",
    why="Without an ONNX graph there is nothing to place: nothing downstream (placement, numerics) ran, so "
        "the gate knows nothing about the target.",
    example="""class Net(torch.nn.Module):
    def forward(self, x):
        return x.numpy()  # leaves torch: the exporter cannot trace it""",
    fix="Read the exporter's message in the finding and the full output in the conversion log (`--log`); "
        "make the module traceable by the contract's exporter, or try the other exporter.",
    evidence="The exporter's own message, kept in the finding; the full output in the conversion log (--log).",
    fields="`message` only: `<exporter> export failed: <error>` (or `replacement: <error>`).",
)


def export_failed(exporter: str, error: str | None) -> Finding:
    """The contract's exporter raised: its message in one line."""
    return make_finding("export-failed", f"{exporter} export failed: {error}")


def replacement_failed(error: str | None) -> Finding:
    """The contract's ``replacement`` model could not be loaded or exported."""
    return make_finding("export-failed", f"replacement: {error}")


ONNX_CHECKER = RuleDoc(
    "onnx-checker",
    finds="onnx.checker rejects the model (full check): the model violates the ONNX specification (unknown "
          "op, bad attribute, wrong IR), or the full check's strict shape inference fails (incompatible "
          "shapes, wrong types).",
    why="Vendor compilers usually reject such models outright.",
    example="""# an ONNX file edited by hand, or a custom op exported without its schema:
torch.onnx.export(model, x, "m.onnx", custom_opsets={"my.ops": 1})""",
    fix="Export again with a supported exporter and opset, or repair the graph the message names.",
    evidence="onnx.checker's full check and its strict shape inference; the message is theirs (a strict "
             "shape inference failure reads `full check: ...`).",
    fields="`node` and `op_type` when the checker's message names one node of the graph, else only `message`.",
)


def checker_findings(checker_errors: list[str], strict_error: str | None, facts: GraphFacts) -> list[Finding]:
    """One finding per checker error (a checker error naming one node is that node's finding),
    then the strict shape inference's failure, if any."""
    out = []
    for message in checker_errors:
        named = graph_facts.checker_node(message, facts)
        out.append(make_finding("onnx-checker", message, node=named.name if named else None,
                                op_type=named.key if named else None))
    if strict_error:  # the full check's strict shape inference failed: the model is invalid
        name = graph_facts.node_named_in(strict_error)
        node = next((n for n in facts.nodes if n.name == name), None)
        out.append(make_finding("onnx-checker", f"full check: {strict_error}", node=node.name if node else None,
                                op_type=node.key if node else None))
    return out


DOCS = (CONTRACT_INVALID, EXPORT_FAILED, ONNX_CHECKER)
