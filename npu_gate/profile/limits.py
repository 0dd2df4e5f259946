"""A profile's global limits: checked on every node the profile supports, and on the model.

``limits`` holds what a target states for all ops at once: the opset range, allowed
domains and dtypes, the maximum rank, bytes and elements of one tensor, and whether
every shape must be static. Tensor limits apply to a node's runtime tensors (inputs and
outputs that are not constants): weights are compiled into the model. A failed limit
puts the node on CPU; a model opset outside the range is a finding of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from npu_gate.graph.facts import NodeFacts, TensorInfo
from npu_gate.profile.constraints import UNKNOWN, Failure

# limit key -> constraint id used in findings (rule profile-limit)
LIMIT_IDS = {
    "opset": "limit-opset",
    "domains": "limit-domains",
    "dtypes": "limit-dtypes",
    "max_rank": "limit-max-rank",
    "max_tensor_elements": "limit-max-tensor-elements",
    "max_tensor_bytes": "limit-max-tensor-bytes",
    "static_shapes": "limit-static-shapes",
}


def _fail(key: str, message: str, actual: Any, allowed: Any, limits: Mapping[str, Any]) -> Failure:
    return Failure(LIMIT_IDS[key], f"limits.{key}: {message}", actual, allowed, limits.get("doc"))


def opset_failure(limits: Mapping[str, Any], opset: int) -> Failure | None:
    spec = limits.get("opset")
    if not spec:
        return None
    lo, hi = spec.get("min"), spec.get("max")
    if (lo is not None and opset < lo) or (hi is not None and opset > hi):
        span = f"{'' if lo is None else lo}..{'' if hi is None else hi}"
        return _fail("opset", f"model opset {opset} outside {span}", opset, spec, limits)
    return None


def node_failures(
    limits: Mapping[str, Any],
    node: NodeFacts,
    tensors: Mapping[str, TensorInfo],
    constants: set[str] | frozenset[str],
) -> list[Failure]:
    if not limits:
        return []
    out: list[Failure] = []
    domains = limits.get("domains")
    if domains is not None:
        allowed = {"" if d == "ai.onnx" else d for d in domains}
        if node.domain not in allowed:
            shown = node.domain or "ai.onnx"
            out.append(
                _fail("domains", f"domain {shown} not in {_list(domains)}", shown, domains, limits)
            )
    seen: set[str] = set()
    for kind, names in (("input", node.inputs), ("output", node.outputs)):
        for index, name in enumerate(names):
            if not name or name in constants or name in seen:
                continue
            seen.add(name)
            tensor = tensors.get(name) or TensorInfo(name, None, None)
            out.extend(_tensor_failures(limits, f"{kind} {index} ({name})", tensor))
    return out


def _tensor_failures(limits: Mapping[str, Any], subject: str, t: TensorInfo) -> list[Failure]:
    out = []
    if "dtypes" in limits and t.dtype not in limits["dtypes"]:
        dtype = t.dtype or UNKNOWN
        out.append(
            _fail(
                "dtypes",
                f"{subject} dtype {dtype} not in {_list(limits['dtypes'])}",
                dtype,
                limits["dtypes"],
                limits,
            )
        )
    if "max_rank" in limits:
        rank = None if t.shape is None else len(t.shape)
        if rank is None or rank > limits["max_rank"]:
            # An unknown value fails (it cannot be shown to hold) but is not "above" the limit.
            shown_rank = f"rank {rank} above" if rank is not None else "rank unknown (shape not inferred), limit"
            out.append(
                _fail(
                    "max_rank",
                    f"{subject} {shown_rank} {limits['max_rank']}",
                    rank if rank is not None else UNKNOWN,
                    limits["max_rank"],
                    limits,
                )
            )
    for key, value, what, unknown in (
        ("max_tensor_elements", t.elements, "elements", "element count unknown (shape not static)"),
        ("max_tensor_bytes", t.nbytes, "bytes", "byte size unknown (shape or dtype not static)"),
    ):
        if key in limits and (value is None or value > limits[key]):
            text = f"{unknown}, limit" if value is None else f"has {value} {what}, above"
            out.append(
                _fail(
                    key,
                    f"{subject} {text} {limits[key]}",
                    UNKNOWN if value is None else value,
                    limits[key],
                    limits,
                )
            )
    if limits.get("static_shapes") and not t.static:
        shape = (
            "?"
            if t.shape is None
            else "[" + ", ".join("?" if d is None else str(d) for d in t.shape) + "]"
        )
        out.append(
            _fail(
                "static_shapes",
                f"{subject} shape {shape} is not static",
                t.shape if t.shape is not None else UNKNOWN,
                "static",
                limits,
            )
        )
    return out


def _list(values: list[Any]) -> str:
    return "{" + ", ".join(str(v) for v in values) + "}"
