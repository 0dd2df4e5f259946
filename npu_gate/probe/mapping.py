"""Map a compiler's op table back to the original ONNX nodes, and cut it into segments.

Compilers rewrite the graph before they place ops: they fuse patterns (Add+Clip+Mul+Div
becomes HardSwish), lower ops (Gemm becomes Conv), fold constants and add adapters. The
op table names nodes of the compiler's *last* graph. The rewrite log (``rule: removed →
added``) links those back to original nodes; a node of the last graph with no table row
was fused into a neighbouring op (RKNN's ``ConvRelu`` has no row for the Relu); an
original node with nothing left in the last graph was folded away.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from npu_gate.probe.base import CompilerOutput
from npu_gate.result.probe import FUSED, SPLIT, OpRow, ProbeNode, Segment
from npu_gate.result.types import CPU, ELIMINATED, FOLDED, NPU, RankAdapter

MAX_FUSE_HOPS = 4  # how far to walk through rowless neighbours to find the op a node fused into


def lineage(originals: Sequence[str], output: CompilerOutput) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """For every node of the compiler's last graph, the original nodes it came from.

    Also returns, per original node, the rewrite rules that touched it (in log order).
    """
    origin: dict[str, set[str]] = {name: {name} for name in originals}
    via: dict[str, list[str]] = {name: [] for name in originals}
    alive = set(originals)
    for rw in output.rewrites:
        before = {name: origin.get(name, set()) for name in rw.removed}
        touched = set().union(*before.values()) if before else set()
        for name in sorted(touched):
            if name in via and rw.rule not in via[name]:
                via[name].append(rw.rule)
        # A node re-added under its own name keeps its own origin (swap_transpose_relu removes
        # and re-adds both nodes); new nodes take the origin of what was removed without coming back.
        kept = [name for name in rw.added if name in before]
        new = [name for name in rw.added if name not in before]
        gone = set().union(*(before[n] for n in before if n not in kept)) if before else set()
        for name in rw.removed:
            alive.discard(name)
        for name in kept:
            origin[name] = before[name] | (gone if not new else set())
            alive.add(name)
        for name in new:
            origin[name] = origin.get(name, set()) | (gone or touched)
            alive.add(name)
    if output.final_graph is not None:  # the dumped graph is authoritative about what is left
        alive = set(output.final_graph)
    return {name: origin.get(name, set()) for name in alive}, via


def map_nodes(
    originals: Sequence[tuple[str, str]],
    predicted: dict[str, str],
    output: CompilerOutput,
    graph_names: dict[str, str] | None = None,
    tensors: dict[str, tuple[list[str], list[str]]] | None = None,
) -> tuple[list[ProbeNode], list[Segment]]:
    """Per original node (name, op_type) its actual placement; the op table's segments.

    Fills ``OpRow.sources`` for every row (original nodes whose work the row does).
    ``graph_names``: original nodes the compiler knows under another name (``Compiler.graph_name``:
    RKNN names an unnamed node after its output), npu_gate's name -> the compiler's.
    ``tensors``: per original node its (input, output) tensor names, to find where the work of a
    node a ``fuse_*`` rule removed went (``absorber``).
    """
    names = [name for name, _ in originals]
    position = {name: i for i, name in enumerate(names)}
    ours = {theirs: name for name, theirs in (graph_names or {}).items()}
    alive, via = lineage([(graph_names or {}).get(name, name) for name in names], output)
    if ours:
        alive = {node: {ours.get(s, s) for s in sources} for node, sources in alive.items()}
        via = {ours.get(name, name): rules for name, rules in via.items()}
    compute_rows = [r for r in output.rows if not r.io]
    row_of: dict[str, OpRow] = {}
    rows_of_source: dict[str, list[OpRow]] = {}
    for row in compute_rows:
        owner = graph_node(row.full_name, alive)
        if owner is not None:
            row_of.setdefault(owner, row)
        row.sources = sorted(alive.get(owner, set()) if owner else set(), key=position.__getitem__)
        for source in row.sources:
            rows_of_source.setdefault(source, []).append(row)
    _attribute_added_rows(compute_rows, rows_of_source, output, tensors)
    descendants_of: dict[str, list[str]] = {}
    for graph_name in sorted(alive):
        for source in alive[graph_name]:
            descendants_of.setdefault(source, []).append(graph_name)

    nodes = []
    for name, op_type in originals:
        node = ProbeNode(name=name, op_type=op_type, predicted=predicted.get(name), actual=None, via=via[name])
        descendants = descendants_of.get(name, [])
        rows = rows_of_source.get(name, [])
        if rows:
            targets = {r.target for r in rows}
            node.runs_on = targets.pop() if len(targets) == 1 else SPLIT
            node.actual = node.runs_on
            node.rows = [r.id for r in rows]
            ops = list(dict.fromkeys(r.op_type for r in rows))
            if ops != [op_type]:
                node.became = "+".join(ops)
        elif descendants:
            _fuse(node, _fused_into(descendants, op_type, row_of, output), position)
        elif (taker := absorber(name, via[name], tensors, alive, output)) is not None:
            # a fuse_* rule removed it and named no replacement: its work is in the node that took its place
            _fuse(node, row_of.get(taker) or _fused_into([taker], op_type, row_of, output), position)
        else:
            node.actual = FOLDED
        nodes.append(node)
    return nodes, segments(compute_rows, names)


def _attribute_added_rows(rows: Sequence[OpRow], rows_of_source: dict[str, list[OpRow]], output: CompilerOutput,
                          tensors: dict[str, tuple[list[str], list[str]]] | None) -> None:
    """A row no original node's lineage reaches, named after a tensor of the model (``<tensor>_rs``), is
    part of the node writing that tensor when a rewrite of that node added a node named after the same
    tensor, and the node runs as ops of its own. RKNN's ``reduce_reshape_op_around_concat`` moves the
    flattening Reshapes of a Concat's inputs after it as ``<concat output>-rs``; ``unsqueeze_to_4d_split``
    adds ``<concat output>_rs`` and ``fuse_two_reshape`` merges the first into the second, so lineage
    loses it. Reshapes the compiler adds around a node it did not rewrite (rank changes next to a CPU
    op) and the ops at the graph edge (``edge_ops``, ``io_adapters``) stay the compiler's own."""
    if not tensors:
        return
    writer = {out: name for name, (_, outs) in tensors.items() for out in outs if out}
    rewritten: set[str] = set()  # tensors a rewrite of their writer added a node after
    for rw in output.rewrites:
        for added in rw.added:
            tensor = _tensor_named(added, writer)
            if tensor is not None and writer[tensor] in rw.removed:
                rewritten.add(tensor)
    adapters = set(output.io_adapters or {})
    edge = output.final_io or {}
    last_graph = output.final_ops or edge
    for row in rows:
        if row.sources or row.full_name in adapters or graph_node(row.full_name, last_graph) in edge:
            continue
        tensor = _tensor_named(row.full_name, rewritten)
        owner = writer[tensor] if tensor is not None else None
        if owner is not None and rows_of_source.get(owner):
            row.sources = [owner]
            rows_of_source[owner] = sorted([*rows_of_source[owner], row], key=lambda r: r.id)


def _tensor_named(full_name: str, tensors: Collection[str]) -> str | None:
    """The longest tensor name that ``full_name`` extends with ``_`` or ``-``."""
    for end in range(len(full_name) - 1, 0, -1):
        if full_name[end] in "_-" and full_name[:end] in tensors:
            return full_name[:end]
    return None


def absorber(name: str, rules: Sequence[str], tensors: dict[str, tuple[list[str], list[str]]] | None,
             alive: dict[str, set[str]], output: CompilerOutput) -> str | None:
    """The last-graph node that took over the work of original node ``name``, which nothing in the
    last graph descends from, when the last rule that touched it is a ``fuse_*`` rule: such a rule
    (``fuse_two_reshape``, ``fuse_mul_into_sdpa``) merges the node into a neighbour but logs only the
    removal. The neighbour is the node that now writes one of its outputs, else one that now reads
    one of its inputs and did not come from another original reader of that input. None otherwise
    (a constant fold, a no-op removal such as ``bypass_two_reshape``, or no such node: folded).
    """
    final = output.final_tensors
    if not rules or not rules[-1].startswith("fuse_") or final is None or tensors is None or name not in tensors:
        return None
    inputs, outputs = tensors[name]
    writer = next((n for n, (_, outs) in final.items() if set(outs) & set(outputs)), None)
    if writer is not None:
        return writer
    for tensor in inputs:
        readers = {other for other, (ins, _) in tensors.items() if other != name and tensor in ins}
        taker = next((n for n, (ins, _) in final.items() if tensor in ins and not alive.get(n, set()) & readers), None)
        if taker is not None:
            return taker
    return None


def graph_node(full_name: str, alive: Collection[str]) -> str | None:
    """The last-graph node a table row belongs to: its exact name, else the longest node name
    it extends with ``_`` (the compiler names ops it fuses late ``<node>_ConvAddRelu``)."""
    if full_name in alive:
        return full_name
    return max((n for n in alive if full_name.startswith(n + "_")), key=len, default=None)


def _fuse(node: ProbeNode, host: OpRow | None, position: dict[str, int]) -> None:
    """``node``'s work is in ``host``, the compiler op it fused into (None: not found in the table)."""
    node.actual = FUSED
    if host is not None:
        node.became, node.runs_on, node.rows = host.op_type, host.target, [host.id]
        host.sources = sorted({*host.sources, node.name}, key=position.__getitem__)


def _fused_into(start: list[str], op_type: str, row_of: dict[str, OpRow], output: CompilerOutput) -> OpRow | None:
    """The op a rowless node was fused into: the nearest producers with a row, else consumers.

    Among equally near candidates, one whose op type names the node's (``Add`` in ``ConvAdd``)
    wins, so a residual Add goes to the ``ConvAdd`` rather than to its other input's op.
    """
    wanted = {(output.final_ops or {}).get(name, op_type) for name in start} | {op_type}
    for edges in (output.final_graph, output.final_consumers):
        if not edges:
            continue
        frontier, seen = list(start), set(start)
        for _ in range(MAX_FUSE_HOPS):
            nxt: list[str] = []
            found: list[OpRow] = []
            for name in frontier:
                for other in edges.get(name, []):
                    if other in row_of:
                        found.append(row_of[other])
                    elif other not in seen:
                        seen.add(other)
                        nxt.append(other)
            if found:
                return next((r for r in found if any(w in r.op_type for w in wanted)), found[0])
            frontier = nxt
    return None


def segments(rows: Sequence[OpRow], order: Sequence[str]) -> list[Segment]:
    """Maximal runs of consecutive rows on one device, in the op table's execution order."""
    out: list[Segment] = []
    for row in rows:
        if not out or out[-1].device != row.target:
            out.append(Segment(index=len(out), device=row.target, rows=[], ops=[], nodes=[]))
        seg = out[-1]
        seg.rows.append(row.id)
        seg.ops.append(row.op_type)
        seg.nodes.extend(s for s in row.sources if s not in seg.nodes)
    position = {name: i for i, name in enumerate(order)}
    for seg in out:
        seg.nodes.sort(key=lambda n: position.get(n, len(position)))
    return out


def edge_ops(originals: Sequence[tuple[str, str]], output: CompilerOutput) -> list[dict[str, Any]] | None:
    """The ops the compiler added at the graph inputs and outputs (rank adapters), in table order.

    A row counts when its node of the compiler's last graph reads a graph input or writes a graph
    output, is not an original node nor the renamed row of an original node of its own op type,
    and changes the rank where the table gives both shapes. Call after ``map_nodes`` (it reads
    ``OpRow.sources``). None when the plug-in gives no graph inputs/outputs of its last graph.
    """
    if output.final_io is None:
        return None
    op_of = dict(originals)
    last_graph = output.final_ops or output.final_io
    found = []
    for row in output.rows:
        owner = None if row.io else graph_node(row.full_name, last_graph)
        if owner is None or owner not in output.final_io or owner in op_of:
            continue
        if any(op_of.get(source) == row.op_type for source in row.sources):
            continue
        rank_in, rank_out = _rank(row.input_shapes), _rank(row.output_shapes)
        if rank_in is not None and rank_in == rank_out:
            continue
        found += [{"row": row.id, "op_type": row.op_type, "device": row.target, "side": side, "tensor": tensor}
                  for side, tensor in output.final_io[owner]]
    return found


def io_adapter_ops(output: CompilerOutput) -> list[dict[str, Any]]:
    """The rows of the I/O adapters the compiler itself names (``CompilerOutput.io_adapters``), as
    ``edge_ops`` gives them: {row, op_type, device, side, tensor}."""
    named = output.io_adapters or {}
    return [{"row": row.id, "op_type": row.op_type, "device": row.target, "side": side, "tensor": tensor}
            for row in output.rows if row.full_name in named for side, tensor in named[row.full_name]]


def note_compiler(nodes: Sequence[ProbeNode], output: CompilerOutput) -> None:
    """What the compiler said per node, after ``map_nodes``: its reason for a CPU placement
    (``CompilerOutput.reasons``, by op-table name) and whether the node is one of its I/O adapters
    (all its rows are: then it is not compared with the prediction)."""
    adapter_rows = {row.id for row in output.rows if row.full_name in (output.io_adapters or {})}
    name_of = {row.id: row.full_name for row in output.rows}
    reasons = output.reasons or {}
    for node in nodes:
        if node.rows and all(r in adapter_rows for r in node.rows):
            node.adapter = True
        if node.runs_on in (CPU, SPLIT):
            found = [reasons[name_of[r]] for r in node.rows if name_of.get(r) in reasons]
            node.reason = found[0] if found else None


def _rank(shapes: str | None) -> int | None:
    """Rank of the first shape in a table cell such as ``(1,2,1,12),(4)``."""
    first = re.match(r"\(([^)]*)\)", shapes or "")
    if first is None:
        return None
    return len(first.group(1).split(",")) if first.group(1).strip() else 0


def compare_adapters(predicted: Sequence[RankAdapter] | None,
                     actual: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The profile's predicted rank adapters against the ops the compiler added at the graph edge.

    They agree when both name the same (side, graph tensor, device) set. ``agree`` is None when
    the profile has no rank_adapters rule (``predicted`` None) or the plug-in cannot tell which
    ops sit at the graph edge (``actual`` None).
    """
    pred = None if predicted is None else [
        {"tensor": a["tensor"], "side": a["at"], "device": a["device"]} for a in predicted]
    agree = None
    if pred is not None and actual is not None:
        agree = sorted(map(_edge_key, pred)) == sorted(map(_edge_key, actual))
    return {"predicted": pred, "actual": actual, "agree": agree}


def _edge_key(adapter: dict[str, Any]) -> tuple[str, str, str]:
    return adapter["side"], adapter["tensor"], adapter["device"]


def agreement(nodes: Sequence[ProbeNode], segs: Sequence[Segment], predicted_partitions: dict[str, int | None],
              added: int, adapters: dict[str, Any] | None = None, *, failed: bool = False) -> dict[str, Any]:
    """Predicted vs actual: per node, per partition count and (``compare_adapters``) per rank adapter.

    ``failed``: the compiler did not build the model; every node the prediction placed
    disagrees, with the cause "compiler failure".

    ``predicted_partitions``: ``npu``/``cpu`` from the model's nodes alone and
    ``npu_with_adapters``/``cpu_with_adapters`` with the predicted adapters as nodes (None
    without a rank_adapters rule).
    """
    edge_rows = {a["row"] for a in (adapters or {}).get("actual") or []}
    if failed:  # the prediction said the model builds and runs: wrong for every node it placed
        judged = [n for n in nodes if n.predicted is not None]
        agree = 0
        disagreements = [{"node": n.name, "op_type": n.op_type, "predicted": n.predicted, "actual": None,
                          "became": None, "runs_on": None, "cause": COMPILER_FAILURE} for n in judged]
    else:
        judged = [n for n in nodes if n.agrees is not None]
        agree = sum(1 for n in judged if n.agrees)
        disagreements = [
            {"node": n.name, "op_type": n.op_type, "predicted": n.predicted, "actual": n.actual,
             "became": n.became, "runs_on": n.runs_on, "cause": cause(n, edge_rows)}
            for n in judged if not n.agrees
        ]
    actual_counts = {d: sum(1 for n in nodes if n.actual == d) for d in (NPU, CPU, SPLIT, FOLDED, FUSED)}
    npu_segments = sum(1 for s in segs if s.device == NPU)
    with_adapters = predicted_partitions.get("npu_with_adapters")
    predicted_npu = with_adapters if with_adapters is not None else predicted_partitions.get(NPU)
    return {
        "nodes": len(nodes),
        "compared": len(judged),
        "agree": agree,
        "disagree": len(judged) - agree,
        "agreement_rate": round(agree / len(judged), 4) if judged else None,
        "actual": actual_counts,
        "predicted_npu_partitions": predicted_partitions.get(NPU),
        "predicted_cpu_partitions": predicted_partitions.get(CPU),
        "npu_segments": npu_segments,
        # probe-1.3: the predicted NPU partitions (with adapters when the profile predicts them)
        # equal the compiler's NPU segments; None when the compiler built nothing or nothing was predicted
        "partitions_agree": None if failed or predicted_npu is None else predicted_npu == npu_segments,
        "cpu_segments": sum(1 for s in segs if s.device == CPU),
        "predicted_npu_partitions_with_adapters": predicted_partitions.get("npu_with_adapters"),
        "predicted_cpu_partitions_with_adapters": predicted_partitions.get("cpu_with_adapters"),
        "compiler_added_ops": added,
        "adapters": adapters if adapters is not None else compare_adapters(None, None),
        "disagreements": disagreements,
        "disagreements_by_cause": dict(sorted(Counter(d["cause"] for d in disagreements).items())),
    }


COMPILER_FAILURE = "compiler failure"


def cause(node: ProbeNode, edge_rows: set[int] | frozenset[int] = frozenset()) -> str:
    """A coarse reason for a disagreement, from what the compiler did to the node.

    ``edge_rows``: the compiler's op rows that are rank adapters at the graph edge
    (``edge_ops``); a node that ended up in one of them disagrees by rank adaptation.
    """
    if node.predicted == ELIMINATED:
        return "eliminated in prediction"
    if node.actual == FOLDED:
        return "folded by the compiler"
    if edge_rows and any(r in edge_rows for r in node.rows):
        return "rank adaptation"
    if node.actual == FUSED or node.via or node.became:
        return "fusion/lowering"
    return "op support, shape or attribute rule"


# Suffixes the compiler gives the integer copy of a tensor it converts (RKNN: ``out_int8``).
_DTYPE_SUFFIXES = ("_int8", "_uint8", "_int16", "_uint16", "_fp16", "_float16")
ADAPTER_LAYERS = ("Input", "exDataConvert")  # RKNN's graph input and its float <-> integer conversions


def accuracy_layers(layers: Sequence[dict[str, Any]], originals: Sequence[str], output: CompilerOutput,
                    tensors: dict[str, tuple[list[str], list[str]]] | None) -> list[dict[str, Any]]:
    """The compiler's per-layer accuracy rows (``CompilerOutput.accuracy``) with the original ONNX
    nodes each layer's tensor comes from: the producer of that tensor (or of the tensor it is the
    integer copy of) in the compiler's last graph, traced back through the rewrite log; else its
    producer in the original graph. Graph-input and conversion layers are adapters (no node)."""
    alive, _ = lineage(originals, output)
    position = {name: i for i, name in enumerate(originals)}
    final = {t: node for node, (_, outs) in (output.final_tensors or {}).items() for t in outs}
    original = {t: node for node, (_, outs) in (tensors or {}).items() for t in outs}
    out = []
    for layer in layers:
        tensor = layer["tensor"]
        names = [tensor] + [tensor[:-len(s)] for s in _DTYPE_SUFFIXES if tensor.endswith(s) and len(tensor) > len(s)]
        nodes: list[str] = []
        adapter = layer["op_type"] in ADAPTER_LAYERS
        if not adapter:
            for name in names:
                if name in final:
                    nodes = sorted(alive.get(final[name], set()), key=lambda n: position.get(n, len(position)))
                elif name in original:
                    nodes = [original[name]]
                if nodes:
                    break
        out.append({**layer, "nodes": nodes, "adapter": adapter})
    return out
