"""How two graphs differ, as the gate sees them: the diff of two result dicts.

``npu-gate diff A B`` (npu_gate/commands/diff.py) turns each side, an ONNX model, a contract
or a result JSON, into a result dict (``GateResult.to_dict()``), and the diff only compares
those: op census, nodes added/removed (matched by name), attribute and shape changes on
matched nodes, placement changes, partitions and boundary bytes, and shape chains. Timings,
versions and hashes are not compared.
"""

from __future__ import annotations

from typing import Any

from npu_gate.compare.baseline import schema_version

DIFF_VERSION = "1.1"  # 1.1: matched_by, stable_key on node entries

# Summary metrics compared side by side, in report order.
METRICS = (
    "node_count",
    "nodes_after_folding",
    "npu_nodes",
    "cpu_nodes",
    "folded_nodes",
    "npu_partitions",
    "cpu_partitions",
    "boundary_bytes",
    "peak_activation_bytes",  # result 1.7: the static memory estimate (NPU partitions)
    "weight_bytes",
    "shape_chains",
    "shape_chains_staying",
)


def diff_results(a: dict[str, Any], b: dict[str, Any], labels: tuple[str, str]) -> dict[str, Any]:
    """The differences between two result dicts (B relative to A)."""
    sa, sb = a.get("summary", {}), b.get("summary", {})
    metrics = []
    for key in METRICS:
        va, vb = sa.get(key), sb.get(key)
        delta = vb - va if isinstance(va, int) and isinstance(vb, int) else None
        metrics.append({"metric": key, "a": va, "b": vb, "delta": delta})
    ops_a, ops_b = a.get("ops", {}), b.get("ops", {})
    ops = {
        op: {
            "a": ops_a.get(op, 0),
            "b": ops_b.get(op, 0),
            "delta": ops_b.get(op, 0) - ops_a.get(op, 0),
        }
        for op in sorted(set(ops_a) | set(ops_b))
        if ops_a.get(op, 0) != ops_b.get(op, 0)
    }
    # Nodes are matched by stable key (schema 1.7: module path, op type and ordinal, which an
    # exporter's renumbering leaves alone) when both results have them, else by name.
    matched_by = "stable_key" if _has_keys(a) and _has_keys(b) else "name"
    nodes_a = {_node_key(n, matched_by): n for n in a.get("nodes", [])}
    nodes_b = {_node_key(n, matched_by): n for n in b.get("nodes", [])}
    added = [_node_ref(n) for key, n in nodes_b.items() if key not in nodes_a]
    removed = [_node_ref(n) for key, n in nodes_a.items() if key not in nodes_b]
    changed, placements = [], []
    for key, na in nodes_a.items():
        nb = nodes_b.get(key)
        if nb is None:
            continue
        named = {"name": nb["name"], **({"stable_key": key} if matched_by == "stable_key" else {})}
        change = _node_change(na, nb)
        if change:
            changed.append({**named, **change})
        if na["placement"] != nb["placement"]:
            placements.append(
                {
                    **named,
                    "op_type": nb["op_type"],
                    "a": na["placement"],
                    "b": nb["placement"],
                    "reasons": nb.get("reasons", []),
                }
            )
    by_op = _placement_by_op(a.get("nodes", []), b.get("nodes", []))
    chains = _chain_delta(a.get("shape_chains", []), b.get("shape_chains", []))
    identical = not (
        ops
        or added
        or removed
        or changed
        or placements
        or by_op
        or any(chains.values())
        # a metric one side does not have (a result from before it existed) tells no difference
        or any(m["a"] != m["b"] for m in metrics if m["metric"] in sa and m["metric"] in sb)
    )
    return {
        "diff_version": DIFF_VERSION,
        "a": _side(a, labels[0]),
        "b": _side(b, labels[1]),
        "identical": identical,
        "metrics": metrics,
        "ops": ops,
        "matched_by": matched_by,
        "nodes_added": added,
        "nodes_removed": removed,
        "nodes_changed": changed,
        "placement_changes": placements,
        "placement_by_op": by_op,
        "shape_chains": chains,
    }


def _side(doc: dict[str, Any], label: str) -> dict[str, Any]:
    model = doc.get("model", {})
    return {
        "label": label,
        "name": doc.get("name"),
        "verdict": doc.get("verdict"),
        "source": model.get("source"),
        "exporter": model.get("exporter"),
        "opset": model.get("opset"),
        "profile": doc.get("profile", {}).get("name"),
        # What the placements rest on (illustrative, vendor-documentation, measured), as every report shows it.
        "evidence": doc.get("profile", {}).get("evidence"),
    }


def _has_keys(doc: dict[str, Any]) -> bool:
    """Written with stable keys (schema 1.7; a node without one is keyed by its name)."""
    return schema_version(doc) >= (1, 7)


def _node_key(node: dict[str, Any], matched_by: str) -> str:
    return str(node.get("stable_key") or node["name"]) if matched_by == "stable_key" else str(node["name"])


def _node_ref(node: dict[str, Any]) -> dict[str, Any]:
    ref = {"name": node["name"], "op_type": node["op_type"], "placement": node["placement"]}
    if "stable_key" in node:
        ref["stable_key"] = node["stable_key"]
    return ref


def _node_change(na: dict[str, Any], nb: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if (na["op_type"], na.get("domain")) != (nb["op_type"], nb.get("domain")):
        out["op_type"] = {"a": na["op_type"], "b": nb["op_type"]}
    attrs = {}
    for key in sorted(set(na["attributes"]) | set(nb["attributes"])):
        va, vb = na["attributes"].get(key), nb["attributes"].get(key)
        if va != vb:
            attrs[key] = {"a": va, "b": vb}
    if attrs:
        out["attributes"] = attrs
    shapes = []
    for io in ("inputs", "outputs"):
        ta, tb = na[io], nb[io]
        for k in range(max(len(ta), len(tb))):
            x = ta[k] if k < len(ta) else None
            y = tb[k] if k < len(tb) else None
            if x is None or y is None or (x["shape"], x["dtype"]) != (y["shape"], y["dtype"]):
                shapes.append(
                    {
                        "io": io[:-1],
                        "index": k,
                        "a": None
                        if x is None
                        else {"name": x["name"], "shape": x["shape"], "dtype": x["dtype"]},
                        "b": None
                        if y is None
                        else {"name": y["name"], "shape": y["shape"], "dtype": y["dtype"]},
                    }
                )
    if shapes:
        out["tensors"] = shapes
    return out


def _placement_by_op(na: list[dict[str, Any]], nb: list[dict[str, Any]]) -> dict[str, Any]:
    """Per op, how many nodes are npu/cpu/folded on each side (only ops that differ): the
    placement delta even when node names do not match (two exporters name nodes differently)."""

    def count(nodes: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for n in nodes:
            op = n["op_type"] if not n.get("domain") else f"{n['domain']}::{n['op_type']}"
            per = out.setdefault(op, {"npu": 0, "cpu": 0, "folded": 0})
            per[n["placement"]] = per.get(n["placement"], 0) + 1
        return out

    ca, cb = count(na), count(nb)
    empty = {"npu": 0, "cpu": 0, "folded": 0}
    return {
        op: {"a": ca.get(op, empty), "b": cb.get(op, empty)}
        for op in sorted(set(ca) | set(cb))
        if ca.get(op, empty) != cb.get(op, empty)
    }


def _chain_key(chain: dict[str, Any]) -> str:
    return f"{chain['graph']}/{chain['consumer']}" if chain["graph"] else chain["consumer"]


def _chain_ref(chain: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": _chain_key(chain),
        "consumer_op": chain["consumer_op"],
        "slots": chain["slots"],
        "status": chain["status"],
        "nodes": chain["nodes"],
    }


def _chain_delta(ca: list[dict[str, Any]], cb: list[dict[str, Any]]) -> dict[str, list[Any]]:
    by_a = {_chain_key(c): c for c in ca}
    by_b = {_chain_key(c): c for c in cb}
    changed = []
    for key, x in by_a.items():
        y = by_b.get(key)
        if y is not None and (x["status"], x["nodes"]) != (y["status"], y["nodes"]):
            changed.append(
                {
                    "key": key,
                    "a": x["status"],
                    "b": y["status"],
                    "nodes_a": x["nodes"],
                    "nodes_b": y["nodes"],
                }
            )
    return {
        "added": [_chain_ref(c) for k, c in by_b.items() if k not in by_a],
        "removed": [_chain_ref(c) for k, c in by_a.items() if k not in by_b],
        "changed": changed,
    }
