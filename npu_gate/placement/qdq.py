"""Quantized (QDQ) graphs: each op with its DequantizeLinear inputs and QuantizeLinear outputs is
one unit, placed by its op with the unit's integer dtypes (as onnxruntime's NodeUnit groups them).

A QDQ model says "run this Conv in int8" as DQ -> Conv -> Q: the Q/DQ nodes are not work a target
does on their own, so they are never placed (or counted) as separate nodes. Each takes the device
of its unit; a Q that quantizes a graph input and a DQ that dequantizes a graph output are I/O
adapters, on the device of the unit they feed or are fed by. The op is judged with its inputs'
dtypes read from the DQ inputs (the quantized tensors) and its outputs' from the Q outputs, so a
profile's dtype conditions (``when``) see int8, not float.

onnxruntime does not form every unit: its Conv and Gemm selectors (``ConvNodeGroupSelector``,
``GemmNodeGroupSelector`` in ``qdq_selectors.cc``) refuse a unit whose bias DequantizeLinear is not
int32 (a bias quantized like an activation). Such an op runs in float, and its Q/DQ nodes are nodes
of their own (``QdqUnits.standalone``): what a target does with a standalone weight DQ is what its
profile's ``standalone_qdq`` entries say (``standalone_entry``), e.g. QNN's HTP refuses a per-channel
one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from npu_gate.graph.facts import GraphFacts, NodeFacts, TensorInfo

QUANTIZE = "QuantizeLinear"
DEQUANTIZE = "DequantizeLinear"
INTEGER_DTYPES = frozenset({"int8", "uint8", "int16", "uint16", "int32", "int4", "uint4"})
# onnxruntime's quantizer writes 16-bit Q/DQ in its contrib domain before opset 21 (QNN's int16 config)
QDQ_DOMAINS = ("", "ai.onnx", "com.microsoft")
# ops whose unit onnxruntime forms only with an int32 bias DQ (input 2): its Conv and Gemm selectors
INT32_BIAS_OPS = ("Conv", "Gemm")


@dataclass
class Standalone:
    """A Q/DQ node in no unit: the op whose unit onnxruntime does not form, and why."""

    op: int
    why: str  # "the bias of conv1 (Conv) is uint8, not int32"
    per_channel: bool  # its scale has more than one element


@dataclass
class QdqUnits:
    member_of: dict[int, int] = field(default_factory=dict)  # Q/DQ node -> the op node of its unit
    adapters: dict[int, str] = field(default_factory=dict)  # Q/DQ node -> "input" | "output"
    dtypes: dict[int, dict[str, str]] = field(default_factory=dict)  # op node -> tensor -> integer dtype
    standalone: dict[int, Standalone] = field(default_factory=dict)  # Q/DQ node of no unit -> why

    def absorbed(self) -> set[int]:
        """The Q/DQ nodes that are part of a unit or an I/O adapter: not nodes of their own."""
        return set(self.member_of) | set(self.adapters)


def node_units(facts: GraphFacts) -> QdqUnits | None:
    """The QDQ units of a graph (None: the graph has no Q/DQ node)."""
    nodes = facts.nodes
    if not any(_is_qdq(n.op_type, n.domain) for n in nodes):
        return None
    producer = {o: n.index for n in nodes for o in n.outputs if o}
    consumers: dict[str, list[int]] = {}
    for n in nodes:
        for name in dict.fromkeys(i for i in n.inputs if i):
            consumers.setdefault(name, []).append(n.index)
    graph_inputs = {t.name for t in facts.inputs}
    graph_outputs = {t.name for t in facts.outputs}
    units = QdqUnits()

    def dtype(name: str) -> str | None:
        info = facts.tensors.get(name)
        return info.dtype if info is not None else None

    def quantized_dtype(qdq: int, name: str) -> str | None:
        """The quantized side's dtype: the tensor's, else (a contrib-domain Q/DQ, which ONNX shape
        inference does not type) its zero point's, which has the quantized type."""
        own = dtype(name)
        zero_point = nodes[qdq].inputs[2] if len(nodes[qdq].inputs) > 2 else ""
        return own if own is not None or not zero_point else dtype(zero_point)

    refused: dict[int, tuple[int, str]] = {}  # Q/DQ node -> (the op whose unit is not formed, why)
    for n in nodes:
        if _is_qdq(n.op_type, n.domain):
            continue
        why = _unit_refused(n, producer, nodes, quantized_dtype)
        if why is not None:
            for name in n.inputs:
                dq = producer.get(name)
                if dq is not None and nodes[dq].op_type == DEQUANTIZE:
                    refused.setdefault(dq, (n.index, why))
            for name in n.outputs:
                for q in consumers.get(name, []):
                    if nodes[q].op_type == QUANTIZE:
                        refused.setdefault(q, (n.index, why))
            continue
        view: dict[str, str] = {}
        for name in n.inputs:
            dq = producer.get(name)
            if dq is None or nodes[dq].op_type != DEQUANTIZE or name in graph_outputs:
                continue
            # A DQ read by several ops is in each one's unit (onnxruntime duplicates it,
            # EnsureUniqueDQForNodeUnit); it is placed with the first of them.
            units.member_of.setdefault(dq, n.index)
            quantized = quantized_dtype(dq, nodes[dq].inputs[0])
            if quantized in INTEGER_DTYPES:
                view[name] = quantized
        for name in n.outputs:
            readers = consumers.get(name, [])
            if not readers or name in graph_outputs or any(nodes[r].op_type != QUANTIZE for r in readers):
                continue
            for q in readers:
                units.member_of[q] = n.index
            quantized = quantized_dtype(readers[0], nodes[readers[0]].outputs[0])
            if quantized in INTEGER_DTYPES:
                view[name] = quantized
        if view:
            units.dtypes[n.index] = view
    for n in nodes:
        if not _is_qdq(n.op_type, n.domain):
            continue
        if n.index in refused and not (n.op_type == QUANTIZE and n.inputs and n.inputs[0] in graph_inputs) \
                and not (n.op_type == DEQUANTIZE and any(o in graph_outputs for o in n.outputs)):
            # A DQ that a refused op reads is a node of its own for that op even when another op's
            # unit holds it too (each reader gets its own copy): it is placed as the standalone one.
            units.member_of.pop(n.index, None)
            op, why = refused[n.index]
            units.standalone[n.index] = Standalone(op, why, _per_channel(facts, n.inputs))
        elif n.index in units.member_of:
            continue
        elif n.op_type == QUANTIZE and n.inputs and n.inputs[0] in graph_inputs:
            units.adapters[n.index] = "input"
        elif n.op_type == DEQUANTIZE and any(o in graph_outputs for o in n.outputs):
            units.adapters[n.index] = "output"
    return units


def _unit_refused(node: NodeFacts, producer: Mapping[str, int], nodes: list[NodeFacts],
                  quantized_dtype: Callable[[int, str], str | None]) -> str | None:
    """Why onnxruntime forms no QDQ unit around ``node`` (None: it does, as far as modelled here):
    a Conv or Gemm whose bias comes from a DequantizeLinear that is not int32."""
    if node.op_type not in INT32_BIAS_OPS or node.domain not in ("", "ai.onnx") or len(node.inputs) < 3:
        return None
    dq = producer.get(node.inputs[2])
    if dq is None or nodes[dq].op_type != DEQUANTIZE or not nodes[dq].inputs:
        return None
    dtype = quantized_dtype(dq, nodes[dq].inputs[0])
    if dtype is None or dtype == "int32":
        return None
    return f"the bias of {node.name} ({node.op_type}) is {dtype}, not int32"


def _per_channel(facts: GraphFacts, inputs: list[str]) -> bool:
    """Whether a Q/DQ's scale (input 1) has more than one element (per channel or per block)."""
    info = facts.tensors.get(inputs[1]) if len(inputs) > 1 else None
    if info is None or info.shape is None:
        return False
    count = 1
    for d in info.shape:
        if not isinstance(d, int):
            return False
        count *= d
    return count > 1


def standalone_entry(entries: list[dict[str, Any]] | None, standalone: Standalone, op_type: str,
                     weight: bool) -> dict[str, Any] | None:
    """The profile's ``standalone_qdq`` entry for a Q/DQ node in no unit, if one matches: its
    ``op``, and ``weight`` (it reads constants only) / ``per_channel`` when the entry states them."""
    for entry in entries or []:
        if entry.get("op", DEQUANTIZE) != op_type:
            continue
        if "weight" in entry and entry["weight"] != weight:
            continue
        if "per_channel" in entry and entry["per_channel"] != standalone.per_channel:
            continue
        return entry
    return None


def _is_qdq(op_type: str, domain: str) -> bool:
    return op_type in (QUANTIZE, DEQUANTIZE) and domain in QDQ_DOMAINS


def integer_tensors(tensors: Mapping[str, TensorInfo], dtypes: Mapping[str, str]) -> dict[str, TensorInfo]:
    """``tensors`` with the unit's tensors in their integer dtypes (the rest unchanged)."""
    out = dict(tensors)
    for name, dtype in dtypes.items():
        if name in out:
            out[name] = dataclasses.replace(out[name], dtype=dtype)
    return out


def adapter_unit(facts: GraphFacts, units: QdqUnits, index: int) -> int | None:
    """The unit an I/O adapter feeds (input) or is fed by (output), if any."""
    node = facts.nodes[index]
    if units.adapters.get(index) == "input":
        names = set(node.outputs)
        for n in facts.nodes:
            if names & set(n.inputs):
                return units.member_of.get(n.index, n.index)
        return None
    names = set(node.inputs)
    for n in facts.nodes:
        if names & set(n.outputs):
            return units.member_of.get(n.index, n.index)
    return None
