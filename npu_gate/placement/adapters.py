"""Rank adapters: ops a target adds at graph inputs and outputs whose rank it does not run.

A profile's ``rank_adapters`` (schemas/profile.schema.json) says the target computes in one
rank and wraps every graph input and output of another rank in an adapter op, on the NPU only
when ``npu_when`` holds. The adapters are not model nodes: they are reported beside the
placement (result ``rank_adapters``) and a CPU one is a ``rank-adapter`` finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from npu_gate.result.types import CPU, NPU, RankAdapter

if TYPE_CHECKING:
    from npu_gate.graph.facts import GraphFacts, TensorInfo
    from npu_gate.profile.spec import Profile
    from npu_gate.result.types import GateResult


def _npu_when(rule: dict[str, Any], shape: list[Any]) -> str | None:
    """None when the adapter runs on the NPU, else why not."""
    when = rule.get("npu_when")
    if when is None:
        return "the profile runs rank adapters on CPU"
    axis = when["axis"]
    if not -len(shape) <= axis < len(shape):
        return f"no axis {axis} in rank {len(shape)}"
    dim = shape[axis]
    if not isinstance(dim, int):
        return f"dim {axis} is dynamic ({dim})"
    multiple = when.get("multiple_of")
    if multiple and dim % multiple:
        return f"dim {axis} = {dim} is not a multiple of {multiple}"
    return None


def rank_adapters(profile: Profile, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[RankAdapter]:
    """One entry per graph input/output whose (known) rank is not the target's."""
    rule = profile.rank_adapters
    if not rule:
        return []
    found = []
    for at, tensors in (("input", inputs), ("output", outputs)):
        for info in tensors:
            if info.shape is None or len(info.shape) == rule["rank"]:
                continue
            why_cpu = _npu_when(rule, info.shape)
            device = NPU if why_cpu is None else CPU
            op = rule.get("op", "Reshape")
            reason = (f"graph {at} {info.name} has rank {len(info.shape)}: {profile.name} adds a {op} to rank "
                      f"{rule['rank']} on {device.upper()}" + (f" ({why_cpu})" if why_cpu else ""))
            found.append(RankAdapter(tensor=info.name, at=at, rank=len(info.shape), op=op, device=device,
                                     reason=reason))
    return found


def graph_adapters(profile: Profile, facts: GraphFacts, model_inputs: list[TensorInfo]) -> list[RankAdapter]:
    """The result's ``rank_adapters``: the model's inputs (shapes as the contract fixed them)
    and outputs. A CPU one is a ``rank-adapter`` finding (the analysis stage makes it)."""
    inputs = [facts.tensors.get(i.name) or i for i in model_inputs]
    return rank_adapters(profile, inputs, facts.outputs)


def partitions_with_adapters(result: GateResult) -> dict[str, int] | None:
    """Predicted NPU/CPU partition counts with the predicted adapters as nodes of their device.

    Each adapter is placed at the graph edge: an input adapter feeds the nodes that read its
    tensor, an output adapter reads the node that writes its tensor. The partitions are then
    formed as for the model's own nodes (partitions.py), so a CPU adapter after an NPU node is
    one more CPU partition, and one next to a CPU node joins that node's partition. None when
    the profile has no ``rank_adapters`` rule. Dependencies come from the top-level nodes' named
    inputs (a control-flow body's implicit inputs are not in the result).
    """
    from npu_gate.placement.partitions import partition_devices

    if result.rank_adapters is None:
        return None
    nodes = [n for n in result.nodes if n.scope is None]
    ins = [a for a in result.rank_adapters if a["at"] == "input"]
    outs = [a for a in result.rank_adapters if a["at"] == "output"]
    first = len(ins)  # index order: input adapters, the model's nodes, output adapters
    source = {a["tensor"]: i for i, a in enumerate(ins)}
    for i, node in enumerate(nodes):
        for tensor in node.outputs:
            source[tensor["name"]] = first + i
    devices = [a["device"] for a in ins] + [n.placement for n in nodes] + [a["device"] for a in outs]
    deps: list[list[int]] = [[] for _ in ins]
    for i, node in enumerate(nodes):
        reads = (source.get(t["name"]) for t in node.inputs)
        deps.append(list(dict.fromkeys(s for s in reads if s is not None and s != first + i)))
    deps += [[source[a["tensor"]]] if a["tensor"] in source else [] for a in outs]
    parts = partition_devices(devices, deps)
    return {NPU: sum(1 for p in parts if p.device == NPU), CPU: sum(1 for p in parts if p.device == CPU)}
