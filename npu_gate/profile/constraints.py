"""Evaluate a profile's per-op constraints on one node.

Constraints are data (see schemas/profile.schema.json), checked by the code of their kind
(``npu_gate/profile/checks/``, one module per kind, listed in ``checks.registry.CHECKS``);
no expression from a profile is ever evaluated as Python. Every failed test is reported,
not only the first, each with the value seen and the value allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from npu_gate.profile.checks.base import UNKNOWN, Context, Failure, ValueOf
from npu_gate.profile.checks.matches import matches
from npu_gate.profile.checks.registry import TESTS, parse_all

if TYPE_CHECKING:  # graph imports onnx: keep profile validation (and cache hits) free of it
    from npu_gate.graph.facts import NodeFacts, TensorInfo

__all__ = ["TESTS", "UNKNOWN", "Failure", "ValueOf", "evaluate", "matches", "unchecked"]


def evaluate(
    constraints: list[dict[str, Any]],
    node: NodeFacts,
    tensors: Mapping[str, TensorInfo],
    constants: set[str] | frozenset[str],
    layouts: Mapping[str, str] | None = None,
    values: ValueOf | None = None,
) -> list[Failure]:
    ctx = Context(node, tensors, constants, layouts or {}, values)
    failures: list[Failure] = []
    for constraint in parse_all(constraints):
        if constraint.checked and constraint.applies(ctx):
            failures.extend(constraint.evaluate(ctx))
    return failures


def unchecked(
    constraints: list[dict[str, Any]], node: NodeFacts, tensors: Mapping[str, TensorInfo]
) -> list[Failure]:
    """Conditions the profile's source states but npu_gate cannot check (vague, or about
    tensor values): never a CPU fallback, reported so a reviewer knows what rests on them.
    One with a ``when`` is reported only where its condition holds."""
    ctx = Context(node, tensors, frozenset(), {})
    return [c.unchecked_failure() for c in parse_all(constraints) if not c.checked and c.applies(ctx)]
