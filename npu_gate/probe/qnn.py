"""Qualcomm HTP through onnxruntime-qnn: prepares (compiles) ONNX graphs for Snapdragon NPUs
offline on x86 Linux and says, per ONNX node, whether the QNN execution provider took it.

Facts this module relies on (measured with onnxruntime-qnn 2.7.0 = QNN 2.51, see docs/qnn.md):
- it is a plugin execution provider; with the session config entry
  ``session.record_ep_graph_assignment_info = 1`` the session lists its subgraphs, each with
  ``ep_name`` and the ONNX nodes (op type, name) in it. The driver writes that list as
  ``assignment.json`` in its work folder, in the order the session gives it;
- nodes the EP adds itself are named ``*_token_N``: no original node, skipped;
- with ``log_severity_level = 0`` the log says why a node unit was refused:
  ``Validation FAILED for N nodes in OrtNodeUnit (Op) : REASON : ...`` followed by the
  unit's nodes (``Node name: [...] type: [...]`` lines), or for a single node
  ``... node ... REASON : ...``;
- a graph-input QuantizeLinear and a graph-output DequantizeLinear stay on CPU by design
  ("configured to not take Q nodes that consume a graph input"): I/O adapters, not refusals;
- a float model needs ``enable_htp_fp16_precision=1`` and a ``soc_model`` to finalize.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npu_gate.probe.base import ChildRun, Compiler, CompilerOutput
from npu_gate.result.probe import OpRow, Rewrite
from npu_gate.result.types import CPU, NPU

PACKAGE = "onnxruntime-qnn==2.7.0"
EP = "QNNExecutionProvider"
DEFAULT_SOC_MODEL = 57  # QNN's SoC id of the Snapdragon 8 Gen 3 (SM8650)
QUANTIZED = ("QuantizeLinear", "DequantizeLinear")
_TOKEN = re.compile(r"_token_\d+$")
# onnxruntime's EnsureUniqueDQForNodeUnit gives each reader of a shared DequantizeLinear its own copy,
# named ``<dq>/duplicated`` (``_token_N`` after the layout pass): the same DQ, not a fusion
DUPLICATED = "duplicated"
UNIQUE_DQ = "EnsureUniqueDQForNodeUnit"


VALIDATION = re.compile(r"Validation (?P<verdict>PASSED|FAILED) for \d+ nodes? in (?:OrtNodeUnit|node unit)")
_NODE = re.compile(r"Operator type: (?P<op>\S+) Node name: (?P<name>.*?) Node index: \d+\s*$")
# the EP ends each reason with "<Op> node `name` will not be assigned to QNN EP.": said by the result
_NOT_ASSIGNED = re.compile(r"\s*\w+ node `[^`]*` will not be assigned to QNN EP\.?$")
_REASON = re.compile(r"^\s*REASON\s*:\s*(?P<reason>.+?)\s*$")


class QnnCompiler(Compiler):
    name = "qnn"
    product = "onnxruntime-qnn"
    driver = "qnn_driver.py"
    default_target = "htp"
    timeout_s = 600.0
    batch = True
    # onnxruntime-qnn 2.7.0 has wheels for cp311, cp312 and cp313 (Requires-Python >=3.11)
    pythons = ((3, 11), (3, 12), (3, 13))
    # int8/int16: the float model is quantized to QDQ for the HTP before the build
    # (stages/compiler.py ``prepare``); fp16 and none: enable_htp_fp16_precision
    quant_modes = ("int8", "int16", "fp16", "none")

    def setup_steps(self, *, torch: bool) -> list[list[str]]:
        return [[PACKAGE]]

    def request(self, model: Path, target: str, inputs: dict[str, list[int]],
                options: dict[str, Any]) -> dict[str, Any]:
        """The driver's request, with what the driver cannot read itself (its venv has no onnx):
        the precision, the nodes in the model's (topological) order, and the graph-edge
        QuantizeLinear / DequantizeLinear nodes that the EP keeps on CPU as I/O adapters."""
        facts = model_facts(model)
        precision = "qdq" if facts["quantized"] else "fp16"  # a float model quantized first: stages/compiler.py
        return {**super().request(model, target, inputs, options), "precision": precision,
                "soc_model": int(options.get("soc_model") or DEFAULT_SOC_MODEL),
                "order": facts["order"], "unnamed": facts["unnamed"], "readers": facts["readers"],
                "graph_io": facts["graph_io"], "qdq": facts["qdq"]}

    def parse(self, run: ChildRun, work: Path) -> CompilerOutput:
        out = parse_log(run.log)
        response = run.response
        out.version = response.get("version")
        backend = response.get("backend")
        out.backend = short_backend(backend) if isinstance(backend, str) else None
        out.error = response.get("error")
        try:
            subgraphs = json.loads((work / "assignment.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return out
        qdq = response.get("qdq") or {}
        units = parse_units(run.log) if qdq else []
        out.rows = assignment_rows(subgraphs, response.get("order") or [], response.get("unnamed") or {},
                                   set(qdq.get("weight_dq") or []) - standalone_dqs(units))
        out.rewrites = ort_fusions(out.rows, response.get("order") or [], response.get("readers") or {})
        graph_io = response.get("graph_io") or {}
        out.io_adapters = {r.full_name: [(side, tensor) for side, tensor in graph_io[r.full_name]]
                           for r in out.rows if r.target == CPU and r.full_name in graph_io}
        if qdq:
            mapped = map_recreated_dq(units, out.rows, response.get("order") or [], qdq, graph_io)
            out.rewrites += mapped.rewrites
            out.unmapped = mapped.unmapped
            out.io_adapters.update(mapped.adapters)
        out.final_graph = {r.full_name: [] for r in out.rows}  # what is left; what is not was folded
        return out


def model_facts(model: Path) -> dict[str, Any]:
    """The nodes in file order, whether the model is QDQ, and its graph-edge Q/DQ nodes."""
    import onnx

    graph = onnx.load(str(model), load_external_data=False).graph
    weights = {t.name for t in graph.initializer}
    inputs = {i.name for i in graph.input if i.name not in weights}
    outputs = {o.name for o in graph.output}
    graph_io: dict[str, list[list[str]]] = {}
    for n in graph.node:
        if n.op_type == "QuantizeLinear" and n.input and n.input[0] in inputs:
            graph_io[n.name] = [["input", n.input[0]]]
        elif n.op_type == "DequantizeLinear" and n.output and n.output[0] in outputs:
            graph_io[n.name] = [["output", n.output[0]]]
    unnamed = {display_name(n, i): n.op_type for i, n in enumerate(graph.node) if not n.name}
    reader_of: dict[str, list[str]] = {}
    for i, n in enumerate(graph.node):
        for tensor in n.input:
            reader_of.setdefault(tensor, []).append(display_name(n, i))
    readers = {display_name(n, i): found for i, n in enumerate(graph.node)
               if (found := [r for o in n.output for r in reader_of.get(o, [])])}
    quantized = any(n.op_type in QUANTIZED for n in graph.node)
    return {"order": execution_order(graph), "unnamed": unnamed, "readers": readers, "graph_io": graph_io,
            "quantized": quantized, "qdq": qdq_facts(graph, weights) if quantized else {}}


def qdq_facts(graph: Any, weights: set[str]) -> dict[str, Any]:
    """What tying a QDQ model's assignment back to its nodes needs: the weight DequantizeLinear
    nodes (they read initializers, or tensors computed from them alone, only) and, per node, the
    activation DequantizeLinear nodes it reads (npu_gate's names)."""
    nodes = [(display_name(n, i), n) for i, n in enumerate(graph.node)]
    # tensors computed from weights alone (an exporter's Identity of a weight, and the DQ -> Identity -> Q
    # the quantizer writes around it: onnxruntime folds those before the EP sees them)
    constant = set(weights)
    for _, n in nodes:
        if all(not t or t in constant for t in n.input):
            constant.update(n.output)
    weight_dq = [name for name, n in nodes
                 if n.op_type == "DequantizeLinear" and all(not t or t in constant for t in n.input)]
    dq_of = {n.output[0]: name for name, n in nodes
             if n.op_type == "DequantizeLinear" and n.output and name not in weight_dq}
    dq_inputs = {name: found for name, n in nodes
                 if (found := list(dict.fromkeys(dq_of[t] for t in n.input if t in dq_of)))}
    return {"weight_dq": weight_dq, "dq_inputs": dq_inputs}


def display_name(node: Any, index: int) -> str:
    """npu_gate's name for a node: its own, or ``<op type>#<index>`` when it has none (graph.facts)."""
    return node.name or f"{node.op_type}#{index}"


def execution_order(graph: Any) -> list[str]:
    """The node names in file (topological) order, except that a node reading only weights (a
    weight's DequantizeLinear, a Constant) goes right before its first reader: exporters and
    quantizers write those first, and they run where they are read."""
    weights = {t.name for t in graph.initializer}
    constant: set[str] = set()  # tensors computed from weights alone
    readers_of: dict[str, list[str]] = {}
    place: dict[str, float] = {}
    for n in graph.node:
        if all(not i or i in weights or i in constant for i in n.input):
            constant.update(n.output)
        for i in n.input:
            readers_of.setdefault(i, []).append(display_name(n, len(place)))
        place[display_name(n, len(place))] = float(len(place))
    for i, n in reversed(list(enumerate(graph.node))):
        readers = [place[r] for o in n.output for r in readers_of.get(o, [])]
        if n.output and all(o in constant for o in n.output) and readers:
            place[display_name(n, i)] = min(readers) - 0.5 + i / (2 * len(graph.node) + 1)
    return sorted(place, key=place.__getitem__)


def short_backend(backend: str) -> str:
    """``QNN 2.51.0`` -> ``QNN 2.51``: the QNN SDK release as Qualcomm names it."""
    return re.sub(r"^(QNN \d+\.\d+)\.0$", r"\1", backend)


def original_name(name: str) -> str:
    """The ONNX node an assigned node stands for: the EP's layout pass renames the nodes it
    rewrites ``<node>_token_N`` (``conv1_token_1``)."""
    return _TOKEN.sub("", name)


def assignment_rows(subgraphs: list[dict[str, Any]], order: list[str],
                    unnamed: dict[str, str] | None = None, weight_dq: set[str] | None = None) -> list[OpRow]:
    """One op row per assigned node, in execution order.

    The session lists the QNN subgraphs first and the CPU nodes last; a QNN subgraph runs as one
    block, a CPU node on its own, so blocks are ordered by the earliest original node in them (the
    model's node order is topological). A node the EP added with no original node (the layout
    transposes, ``Transpose``, ``Transpose_token_4``) keeps its name and its block's place. An
    unnamed original node (``unnamed``: npu_gate's name -> op type) comes back named "" (or
    ``_token_N``): it takes the next unnamed original of its op type, in the model's order.
    A weight's DequantizeLinear (``weight_dq``) in a QNN subgraph gets no row: the EP makes no QNN
    op of it but a static quantized tensor of the op reading it (the log's ``<weight>_quantized``
    ``QNN_TENSOR_TYPE_STATIC``), so it is folded, as the QDQ placement predicts.
    """
    position = {name: i for i, name in enumerate(order)}
    pool: dict[str, list[str]] = {}
    for name in order:
        if name in (unnamed or {}):
            pool.setdefault((unnamed or {})[name], []).append(name)
    for sub in subgraphs:
        for n in sub["nodes"]:
            if not original_name(n["name"]) and pool.get(n["op_type"]):
                n["name"] = pool[n["op_type"]].pop(0)
    blocks: list[tuple[float, int, str, list[dict[str, Any]]]] = []
    for index, sub in enumerate(subgraphs):
        target = NPU if sub.get("ep") == EP else CPU
        nodes = [n for n in sub["nodes"] if target != NPU or dq_original(n["name"]) not in (weight_dq or ())]
        groups = [nodes] if target == NPU else [[n] for n in nodes]
        for nodes in groups:
            places = [position[original_name(n["name"])] for n in nodes if original_name(n["name"]) in position]
            blocks.append((min(places, default=float(len(order))), index, target, nodes))
    rows: list[OpRow] = []
    for _, _, target, nodes in sorted(blocks, key=lambda b: (b[0], b[1])):
        for n in nodes:
            name = original_name(n["name"])
            rows.append(OpRow(id=len(rows), op_type=n["op_type"], target=target,
                              full_name=name if name in position else n["name"]))
    return rows


def dq_original(name: str) -> str:
    """The model's DequantizeLinear a (possibly copied, ``<dq>/duplicated``) assigned DQ is."""
    base = original_name(name)
    return base[:-len("/" + DUPLICATED)] if base.endswith("/" + DUPLICATED) else base


def ort_fusions(rows: list[OpRow], order: list[str], readers: dict[str, list[str]]) -> list[Rewrite]:
    """onnxruntime's own graph fusions, run before the EP sees the graph: a fused node is named
    ``<first node>/<Fusion>`` (``/qkv/MatMul/MatMulAddFusion``, a Gemm). It stands for that node and
    for the nodes reading its output that are gone from the assignment (the Add), as a rewrite
    ``Fusion`` (the log names the fusion pass, not the nodes). A ``<dq>/duplicated`` copy
    (``EnsureUniqueDQForNodeUnit``) stands for that DQ alone."""
    known = set(order)
    assigned = {r.full_name for r in rows}
    found = []
    for row in rows:
        first, _, fusion = row.full_name.rpartition("/")
        if row.full_name in known or first not in known or not fusion:
            continue
        if original_name(fusion) == DUPLICATED:  # a copy of one DQ per reader, not a fusion: no partners
            found.append(Rewrite(rule=UNIQUE_DQ, removed=[first], added=[row.full_name]))
            continue
        partners = [r for r in readers.get(first, []) if r not in assigned]
        found.append(Rewrite(rule=fusion, removed=[first, *partners], added=[row.full_name]))
    return found


@dataclass
class Unit:
    """One node unit the EP validated: its op (the header's), PASSED or not, its nodes (op, name)."""

    op_type: str
    passed: bool
    nodes: list[tuple[str, str]]
    reason: str | None = None


@dataclass
class DqMapping:
    rewrites: list[Rewrite]
    unmapped: list[str]
    adapters: dict[str, list[tuple[str, str]]]


_UNIT = re.compile(r"Validation (?P<verdict>PASSED|FAILED) for \d+ nodes? in (?:OrtNodeUnit|node unit) "
                   r"\((?P<op>[^)]*)\)")
_PASS_2 = "GetCapability pass 2"
OUTPUT_DQ_REASON = "not take DQ nodes that generate a graph output"
LAYOUT_RULE = "QnnLayoutTransform"  # the EP's layout pass, which re-creates DequantizeLinear nodes


def parse_units(lines: list[str]) -> list[Unit]:
    """The node units of the EP's last capability pass (after its layout transform, the one that
    decides; every unit when the log names no pass), in log order."""
    start = max((i for i, line in enumerate(lines) if _PASS_2 in line), default=-1) + 1
    units: list[Unit] = []
    reading = False
    for line in lines[start:]:
        if m := _UNIT.search(line):
            units.append(Unit(m.group("op"), m.group("verdict") == "PASSED", []))
            reading = True
        elif reading and (m := _NODE.search(line)):
            units[-1].nodes.append((m.group("op"), m.group("name").strip()))
        elif reading and (m := _REASON.match(line)):
            units[-1].reason = m.group("reason")
            reading = False
        elif reading and not line.strip():
            reading = False
    return units


def standalone_dqs(units: list[Unit]) -> set[str]:
    """The model's DequantizeLinear nodes the EP validated as a unit of their own (onnxruntime formed
    no QDQ unit with their reader, e.g. a Conv whose bias is not int32). A weight's DQ alone is a
    QNN ``Dequantize`` op of a static tensor on the HTP (or refused: "standalone DQ op with
    per-channel quantization"), not a tensor folded into its reader."""
    return {dq_original(name) for unit in units if unit.op_type == "DequantizeLinear" and len(unit.nodes) == 1
            for op, name in unit.nodes if op == "DequantizeLinear"}


def map_recreated_dq(units: list[Unit], rows: list[OpRow], order: list[str], qdq: dict[str, Any],
                     graph_io: dict[str, list[list[str]]]) -> DqMapping:
    """Tie the DequantizeLinear nodes the EP's layout pass re-creates under new names
    (``DequantizeLinear``, ``DequantizeLinear_token_19``) to the model's, where the log determines it.

    An activation DQ input of a node that is not in the node's unit (the EP's last pass) was
    re-created for that unit: a DQ there with no name of the model's is its new form when the unit
    has exactly one such DQ and the node exactly one such missing DQ input: a rewrite
    ``QnnLayoutTransform`` (original -> new). When the unit holds re-created DQs but not one for
    one, the missing DQs that are nowhere in the assignment are ``unmapped`` (never guessed), and
    so are those of a node that is alone in its unit when the log holds re-created DQs alone in theirs
    (onnxruntime formed no QDQ unit around the node); a unit with no re-created DQ leaves them as
    they are (folded when nowhere). A shared DQ can so
    stand for several assigned DQs (its ``/duplicated`` copy, a re-created one). A re-created DQ
    refused with "not take DQ nodes that generate a graph output" is the output's I/O adapter when
    the model has exactly one graph-output DQ that is not on CPU (the one it replaced).
    """
    known = set(order)
    present = {dq_original(r.full_name) for r in rows}
    dq_inputs: dict[str, list[str]] = qdq.get("dq_inputs") or {}
    weight_dq = set(qdq.get("weight_dq") or [])
    unit_of = {original_name(name): unit for unit in units for _, name in unit.nodes}
    recreated_alone = any(unit.op_type == "DequantizeLinear" and len(unit.nodes) == 1
                          and dq_original(unit.nodes[0][1]) not in known for unit in units)
    rewrites, unmapped = [], []
    claimed: set[str] = set()
    for node, dqs in dq_inputs.items():
        unit = unit_of.get(node)
        if unit is None:
            continue
        in_unit = {dq_original(name) for _, name in unit.nodes}
        missing = [d for d in dqs if d not in in_unit and d not in weight_dq]
        if not missing:
            continue
        new = [name for op, name in unit.nodes
               if op == "DequantizeLinear" and dq_original(name) not in known and name not in claimed]
        if len(new) == 1 and len(missing) == 1:
            rewrites.append(Rewrite(rule=LAYOUT_RULE, removed=missing, added=new))
            claimed.add(new[0])
        elif new or (len(unit.nodes) == 1 and recreated_alone):
            # no unit around the node (it is its unit's only node): the layout pass re-created its
            # DQs as units of their own, which the log does not tie to it
            unmapped += [d for d in missing if d not in present and d not in unmapped]
    on_cpu = {r.full_name for r in rows if r.target == CPU}
    outputs = [tensor for name, edges in graph_io.items() if name not in on_cpu
               for side, tensor in edges if side == "output"]
    adapters: dict[str, list[tuple[str, str]]] = {}
    for unit in units:
        for op, name in unit.nodes:
            if (op == "DequantizeLinear" and not unit.passed and OUTPUT_DQ_REASON in (unit.reason or "")
                    and dq_original(name) not in known and len(outputs) == 1):
                adapters[name] = [("output", outputs[0])]
    return DqMapping(rewrites, unmapped, adapters)


def parse_log(lines: list[str]) -> CompilerOutput:
    """The EP's reason per refused node from its validation log (the last one said wins: the
    second capability pass, after the layout transform, is the one that decides)."""
    out = CompilerOutput(reasons={})
    assert out.reasons is not None
    unit: list[str] | None = None  # nodes of the FAILED unit being read
    for line in lines:
        if m := VALIDATION.search(line):
            unit = [] if m.group("verdict") == "FAILED" else None
        elif unit is not None and (m := _NODE.search(line)):
            unit.append(original_name(m.group("name").strip()))
        elif unit is not None and (m := _REASON.match(line)):
            for name in unit:
                out.reasons[name] = _NOT_ASSIGNED.sub("", m.group("reason"))
            unit = None
    return out
