"""Rank adapters: ops a target adds at graph inputs and outputs whose rank it does not run.

A profile's ``rank_adapters`` (schemas/profile.schema.json) says the target computes in one
rank and wraps every graph input and output of another rank in an adapter op, on the NPU only
when ``npu_when`` holds. The adapters are not model nodes: they are reported beside the
placement (result ``rank_adapters``) and a CPU one is a ``rank-adapter`` finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from npu_gate.placement import CPU, NPU

if TYPE_CHECKING:
    from npu_gate.graph import GraphFacts, TensorInfo
    from npu_gate.profile import Profile
    from npu_gate.result import GateResult


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


def rank_adapters(profile: Profile, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[dict[str, Any]]:
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
            found.append({"tensor": info.name, "at": at, "rank": len(info.shape), "op": op,
                          "device": device, "reason": reason})
    return found


def record(result: GateResult, profile: Profile, facts: GraphFacts, model_inputs: list[TensorInfo]) -> None:
    """``rank_adapters`` into the result (shapes as the contract fixed them), a warning per CPU one."""
    from npu_gate.result import Finding
    from npu_gate.rules import RULES

    inputs = [facts.tensors.get(i.name) or i for i in model_inputs]
    result.rank_adapters = rank_adapters(profile, inputs, facts.outputs)
    for a in result.rank_adapters:
        if a["device"] == CPU:
            result.findings.append(Finding("rank-adapter", RULES["rank-adapter"].severity, a["reason"],
                                           evidence=profile.evidence))
