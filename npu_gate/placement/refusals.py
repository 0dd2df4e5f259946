"""Builds the target's compiler refuses: a profile's ``refuses`` matched against the graph.

Each entry (schemas/profile.schema.json, docs/target-profiles.md#refuses) is either a node
pattern (``op``, with the optional ``opset_max``, ``min_outputs`` and ``attribute`` tests)
or a graph condition (``graph``); folded nodes never match (the compiler evaluates them first):

- ``opset-above``: the model's default-domain opset is above ``max``;
- ``dynamic-quantization``: a DynamicQuantizeLinear node (scales computed at run time);
- ``input-only-in-subgraph``: a graph input that only If/Loop/Scan bodies read;
- ``quantized-attention``: a MatMul -> Softmax -> MatMul chain (attention) with every tensor
  in QDQ: each MatMul input a DequantizeLinear output, the first MatMul's and the Softmax's
  outputs each through a QuantizeLinear -> DequantizeLinear pair, the second MatMul's output
  read by a QuantizeLinear (one match per such Softmax);
- ``stacked-concat-slice-order``: tf.stack pairs concatenated into a Concat chain read by a Slice
  and a Transpose, in a node order that leaves RKNN-Toolkit2's ``remove_concat_slice`` to crash
  (``stack_order.py``: the order of the nodes in the file decides it).

Every match is one ``Refusal``; the analysis stage makes each a ``compiler-will-refuse``
finding with the compiler's own wording (``message``) when the profile knows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu_gate.graph.facts import GraphFacts, NodeFacts
from npu_gate.placement.stack_order import stacked_concat_slice_refusals

_DYNAMIC_QUANTIZATION = frozenset({"DynamicQuantizeLinear"})
_ONNX = ("", "ai.onnx")


@dataclass(frozen=True)
class Refusal:
    id: str  # the profile entry's
    message: str  # the compiler's wording (placeholders filled) or what the entry matched
    evidence: str
    node: str | None = None
    op_type: str | None = None
    subject: str | None = None  # a graph input, for input-only-in-subgraph
    graph: str | None = None  # the graph condition matched (opset-above, ...); None for a node pattern
    fix: str | None = None  # the entry's: what to change so that the compiler builds it
    doc: str | None = None


def refusals(
    facts: GraphFacts, rules: list[dict[str, Any]] | None, folded: set[int] | frozenset[int] = frozenset()
) -> list[Refusal]:
    """The matches of ``rules`` (a profile's ``refuses``), in rule order then graph order.
    Node patterns skip ``folded`` nodes: the compiler evaluates them before it builds."""
    out: list[Refusal] = []
    for rule in rules or []:
        if "op" in rule:
            out += [_refusal(rule, f"{n.op_type} node {n.name}", node=n)
                    for n in facts.nodes if n.index not in folded and _node_matches(rule, n, facts.opset)]
        elif rule["graph"] == "opset-above" and facts.opset > rule["max"]:
            out.append(_refusal(rule, f"opset {facts.opset} above the compiler's maximum {rule['max']}",
                                opset=facts.opset))
        elif rule["graph"] == "dynamic-quantization":
            out += [_refusal(rule, f"{n.op_type} node {n.name} makes the graph dynamic", node=n)
                    for n in facts.nodes
                    if n.index not in folded and n.op_type in _DYNAMIC_QUANTIZATION and n.domain in ("", "ai.onnx")]
        elif rule["graph"] == "input-only-in-subgraph":
            out += [_refusal(rule, f"graph input {name} is read only inside control-flow bodies", name=name)
                    for name in _inputs_only_in_subgraphs(facts)]
        elif rule["graph"] == "quantized-attention":
            out += [_refusal(rule, f"Softmax node {softmax.name} in a quantized attention (QDQ MatMul {first}, "
                                   f"Softmax, MatMul {second})", node=softmax)
                    for softmax, first, second in _quantized_attentions(facts, folded)]
        elif rule["graph"] == "stacked-concat-slice-order":
            by_name = {n.name: n for n in facts.nodes}
            out += [_refusal(rule, f"Concat node {name} heads stacked paths read by a Slice and a Transpose, in a "
                                   "node order that leaves the compiler's rewrites to crash", node=by_name[name])
                    for name in stacked_concat_slice_refusals(facts, folded)]
    return out


def _node_matches(rule: dict[str, Any], node: NodeFacts, opset: int) -> bool:
    if node.op_type != rule["op"] or node.domain not in ("", "ai.onnx"):
        return False
    if "opset_max" in rule and opset > rule["opset_max"]:
        return False
    if "min_outputs" in rule and sum(1 for o in node.outputs if o) < rule["min_outputs"]:
        return False
    attribute = rule.get("attribute")
    if attribute is not None:
        value = node.attributes.get(attribute["name"])
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        return value in attribute["in"]
    return True


def _inputs_only_in_subgraphs(facts: GraphFacts) -> list[str]:
    read = {name for n in facts.nodes for name in n.inputs}
    inside = {name for n in facts.nodes for name in n.implicit_inputs}
    outputs = {o.name for o in facts.outputs}
    return [i.name for i in facts.inputs if i.name in inside and i.name not in read and i.name not in outputs]


def _quantized_attentions(facts: GraphFacts, folded: set[int] | frozenset[int]) -> list[tuple[NodeFacts, str, str]]:
    """(Softmax, first MatMul's name, second MatMul's name) of each MatMul -> Q/DQ -> Softmax -> Q/DQ ->
    MatMul chain whose MatMul inputs are all DequantizeLinear outputs and whose last output is quantized."""
    onnx_nodes = [n for n in facts.nodes if n.domain in _ONNX]  # a folded DQ (of a weight) still quantizes
    producer = {o: n for n in onnx_nodes for o in n.outputs if o}
    readers: dict[str, list[NodeFacts]] = {}
    for n in onnx_nodes:
        for name in n.inputs:
            readers.setdefault(name, []).append(n)

    def made_by(tensor: str, op: str) -> NodeFacts | None:
        node = producer.get(tensor)
        return node if node is not None and node.op_type == op else None

    def readers_of(tensor: str, op: str) -> list[NodeFacts]:
        return [r for r in readers.get(tensor, []) if r.op_type == op and r.outputs and r.index not in folded]

    def dequantized(tensor: str) -> bool:
        return made_by(tensor, "DequantizeLinear") is not None

    def through_qdq(tensor: str, op: str) -> NodeFacts | None:
        """The ``op`` node that made ``tensor`` through a DequantizeLinear of a QuantizeLinear."""
        dq = made_by(tensor, "DequantizeLinear")
        q = made_by(dq.inputs[0], "QuantizeLinear") if dq is not None and dq.inputs else None
        return made_by(q.inputs[0], op) if q is not None and q.inputs else None

    found: list[tuple[NodeFacts, str, str]] = []
    for softmax in (n for n in onnx_nodes if n.op_type == "Softmax" and n.index not in folded and n.inputs):
        first = through_qdq(softmax.inputs[0], "MatMul")
        if (first is None or first.index in folded or len(first.inputs) < 2
                or not all(dequantized(i) for i in first.inputs[:2])):
            continue
        seconds = [mm for q in readers_of(softmax.outputs[0], "QuantizeLinear")
                   for dq in readers_of(q.outputs[0], "DequantizeLinear")
                   for mm in readers_of(dq.outputs[0], "MatMul")]
        for second in seconds:
            others = [i for i in second.inputs[:2] if through_qdq(i, "Softmax") is not softmax]
            if len(others) == 1 and dequantized(others[0]) and readers_of(second.outputs[0], "QuantizeLinear"):
                found.append((softmax, first.name, second.name))
                break
    return found


def _refusal(rule: dict[str, Any], matched: str, *, node: NodeFacts | None = None, opset: int | None = None,
             name: str | None = None) -> Refusal:
    wording = rule.get("message")
    if wording:
        fields = {"node": node.name if node else "", "op": node.op_type if node else "",
                  "opset": "" if opset is None else str(opset), "input": name or ""}
        text = f"{matched}: the compiler says \"{_fill(wording, fields)}\""
    else:
        text = f"{matched} (the compiler's wording is not known)"
    return Refusal(id=rule["id"], message=text, evidence=rule["evidence"], node=node.name if node else None,
                   op_type=node.key if node else None, subject=name, graph=rule.get("graph"), fix=rule.get("fix"),
                   doc=rule.get("doc"))


def _fill(wording: str, fields: dict[str, str]) -> str:
    """``wording`` with {node}, {op}, {opset}, {input} replaced (other braces kept as written)."""
    for key, value in fields.items():
        wording = wording.replace("{" + key + "}", value)
    return wording
