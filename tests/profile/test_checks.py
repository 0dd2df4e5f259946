"""Each kind of check of the constraint vocabulary (npu_gate/profile/checks/), data-driven: a node it
passes, a node it fails with the exact Failure, its words, and its profile-check problems."""

from __future__ import annotations

from typing import Any

import pytest

from npu_gate.graph.facts import NodeFacts, TensorInfo
from npu_gate.profile.checks.base import Failure
from npu_gate.profile.checks.registry import CHECKS, condition_problems, parse, shape_problems
from npu_gate.profile.constraints import evaluate, unchecked

X, W, Y = "x", "w", "y"  # input 0, input 1 (a constant when the case says so), output 0


def _node(attributes: dict[str, Any] | None = None, defaulted: tuple[str, ...] = (),
          inputs: tuple[str, ...] = (X, W)) -> NodeFacts:
    return NodeFacts(index=0, name="n", op_type="Op", domain="", inputs=list(inputs), outputs=[Y],
                     attributes=dict(attributes or {}), defaulted=list(defaulted))


def _tensors(**shapes: tuple[str | None, list[Any] | None]) -> dict[str, TensorInfo]:
    return {name: TensorInfo(name, dtype, shape) for name, (dtype, shape) in shapes.items()}


FLOAT_4D = _tensors(x=("float32", [1, 3, 8, 8]), w=("float32", [4]), y=("float32", [1, 4, 8, 8]))


# (kind, constraint, node, tensors, constants, layouts, values, expected failures: (message, actual, allowed))
CASES: list[tuple[str, dict[str, Any], NodeFacts, dict[str, TensorInfo], set[str], dict[str, str],
                  dict[str, tuple[int, list[Any]]], list[tuple[str, Any, Any]]]] = [
    ("in", {"attribute": "group", "in": [1]}, _node({"group": 1}), {}, set(), {}, {}, []),
    ("in", {"attribute": "group", "in": [1, 2]}, _node({"group": 4}), {}, set(), {}, {},
     [("attribute group 4 not in {1, 2}", 4, [1, 2])]),
    ("in", {"attribute": "group", "in": [1]}, _node(), {}, set(), {}, {},
     [("attribute group is absent and has no default", "unknown", {"in": [1]})]),
    ("in", {"attribute": "strides", "each": True, "in": [1, 2]}, _node({"strides": [1, 3, 3]}), {}, set(), {}, {},
     [("attribute strides [3, 3] not in {1, 2}", [3, 3], [1, 2])]),
    ("not_in", {"attribute": "mode", "not_in": ["cubic"]}, _node({"mode": "linear"}), {}, set(), {}, {}, []),
    ("not_in", {"attribute": "mode", "not_in": ["cubic"]}, _node({"mode": "cubic"}), {}, set(), {}, {},
     [("attribute mode cubic is one of the forbidden values [cubic]", "cubic", {"not_in": ["cubic"]})]),
    ("not_in", {"attribute": "mode", "not_in": ["cubic"]}, _node(), {}, set(), {}, {}, []),  # absent: none of them
    ("min", {"attribute": "axis", "min": 0}, _node({"axis": 0}), {}, set(), {}, {}, []),
    ("min", {"attribute": "axis", "min": 0}, _node({"axis": -1}), {}, set(), {}, {},
     [("attribute axis -1 is below the minimum 0", -1, {"min": 0})]),
    ("max", {"attribute": "kernel", "each": True, "max": 3}, _node({"kernel": [3, 1]}), {}, set(), {}, {}, []),
    ("max", {"attribute": "kernel", "each": True, "max": 3}, _node({"kernel": [3, 5]}), {}, set(), {}, {},
     [("attribute kernel 5 is above the maximum 3", 5, {"max": 3})]),
    ("max", {"attribute": "pads", "each": True, "max": {"ref": {"attribute": "kernel"}, "add": -1}},
     _node({"pads": [0, 2, 0, 1], "kernel": [2, 2]}), {}, set(), {}, {},
     [("attribute pads 2 is above the maximum 1", 2, {"max": 1})]),
    ("max", {"attribute": "size", "max": {"ref": {"input": 0, "axis": 1}}}, _node({"size": 5}), FLOAT_4D, set(), {},
     {}, [("attribute size 5 is above the maximum 3", 5, {"max": 3})]),
    ("all_equal", {"attribute": "kernel", "all_equal": True}, _node({"kernel": [3, 3]}), {}, set(), {}, {}, []),
    ("all_equal", {"attribute": "kernel", "all_equal": True, "each": True, "max": 3}, _node({"kernel": [3, 5]}),
     {}, set(), {}, {}, [("attribute kernel [3, 5] has unequal elements", [3, 5], "all elements equal"),
                         ("attribute kernel 5 is above the maximum 3", 5, {"max": 3})]),
    ("absent", {"attribute": "ratio", "absent": True}, _node({"ratio": 2}, defaulted=("ratio",)), {}, set(), {}, {},
     []),
    ("absent", {"attribute": "ratio", "absent": True, "in": [9]}, _node({"ratio": 2}), {}, set(), {}, {},
     [("attribute ratio = 2 is set; it must be left at its default", 2, "absent")]),  # its value is not tested
    ("matches", {"attribute": "eq", "matches": ["ij,jk->ik"]}, _node({"eq": "ij, jk -> ik"}), {}, set(), {}, {}, []),
    ("matches", {"attribute": "eq", "matches": ["ij,jk->ik"]}, _node({"eq": "ij,kj->ik"}), {}, set(), {}, {},
     [("attribute eq ij,kj->ik matches none of the forms allowed", "ij,kj->ik", {"matches": ["ij,jk->ik"]})]),
    ("dtype", {"input": 0, "dtype": ["float32"]}, _node(), FLOAT_4D, set(), {}, {}, []),
    ("dtype", {"input": 0, "dtype": ["int8", "uint8"]}, _node(), FLOAT_4D, set(), {}, {},
     [("input 0 dtype float32 not in [int8, uint8]", "float32", ["int8", "uint8"])]),
    ("dtype", {"input": 0, "dtype": ["int8"]}, _node(), {}, set(), {}, {},
     [("input 0 dtype unknown not in [int8]", "unknown", ["int8"])]),
    ("rank", {"input": 0, "rank": {"min": 3, "max": 4}}, _node(), FLOAT_4D, set(), {}, {}, []),
    ("rank", {"input": 0, "rank": {"max": 3}}, _node(), FLOAT_4D, set(), {}, {},
     [("input 0 rank 4 outside ..3", 4, {"max": 3})]),
    ("rank", {"input": 0, "rank": {"max": 3}}, _node(), {}, set(), {}, {},
     [("input 0 rank unknown (shape not inferred)", "unknown", {"max": 3})]),
    ("dim", {"input": 0, "dim": {"axis": 1, "max": 3}}, _node(), FLOAT_4D, set(), {}, {}, []),
    ("dim", {"input": 0, "dim": {"axis": -1, "multiple_of": 16, "min": 9}}, _node(), FLOAT_4D, set(), {}, {},
     [("input 0 dim -1 = 8 is below the minimum 9", 8, {"min": 9}),
      ("input 0 dim -1 = 8 is not a multiple of 16", 8, {"multiple_of": 16})]),
    ("dim", {"output": 0, "dim": {"axis": 1, "in": [{"ref": {"input": 0, "axis": 1}}]}}, _node(), FLOAT_4D, set(),
     {}, {}, [("output 0 dim 1 = 4 not in {3}", 4, {"in": [3]})]),
    ("dim", {"input": 0, "dim": {"axes": [-2, -1], "max": 32}}, _node(), FLOAT_4D, set(), {}, {},
     [("input 0 dims -2 x -1 = 8 x 8 = 64 is above the maximum 32", 64, {"max": 32})]),
    ("dim", {"input": 0, "dim": {"axis": 0, "max": 1}}, _node(), _tensors(x=("float32", ["N", 3])), set(), {}, {},
     [("input 0 dim 0 is not static (N)", "N", {"axis": 0, "max": 1})]),
    ("dim", {"input": 0, "dim": {"axis": 0, "max": 1, "batch": True}}, _node(), _tensors(x=("int64", [4])), set(),
     {}, {}, []),  # a shape vector has no batch
    ("constant", {"input": 1, "constant": True}, _node(), FLOAT_4D, {W}, {}, {}, []),
    ("constant", {"input": 1, "constant": True}, _node(), FLOAT_4D, set(), {}, {},
     [("input 1 must be a constant (initializer or folded)", "runtime tensor", "constant")]),
    ("static", {"input": 0, "static": True}, _node(), FLOAT_4D, set(), {}, {}, []),
    ("static", {"input": 0, "static": True}, _node(), _tensors(x=("float32", [None, 3])), set(), {}, {},
     [("input 0 shape [?, 3] is not static", [None, 3], "static")]),
    ("max_elements", {"input": 0, "max_elements": 192}, _node(), FLOAT_4D, set(), {}, {}, []),
    ("max_elements", {"input": 0, "max_elements": 100}, _node(), FLOAT_4D, set(), {}, {},
     [("input 0 has 192 elements, above the maximum 100", 192, 100)]),
    ("max_bytes", {"input": 0, "max_bytes": 768}, _node(), FLOAT_4D, set(), {}, {}, []),
    ("max_bytes", {"input": 0, "max_bytes": 500}, _node(), FLOAT_4D, set(), {}, {},
     [("input 0 has 768 bytes, above the maximum 500", 768, 500)]),
    ("max_bytes", {"input": 0, "max_bytes": 500}, _node(), _tensors(x=("float32", [None])), set(), {}, {},
     [("input 0 byte size unknown (shape or dtype not static)", "unknown", 500)]),
    ("same_non_unit_dims_as", {"output": 0, "same_non_unit_dims_as": {"input": 0}}, _node(),
     _tensors(x=("float32", [1, 76, 34, 1]), y=("float32", [1, 1, 76, 34])), set(), {}, {}, []),
    ("same_non_unit_dims_as", {"output": 0, "same_non_unit_dims_as": {"input": 0}}, _node(), FLOAT_4D, set(), {}, {},
     [("output 0 dims [1, 4, 8, 8] without their 1s are [4, 8, 8], input 0's are [3, 8, 8]: it does more than "
       "move dims of size 1", [1, 4, 8, 8], {"same_non_unit_dims_as": {"input": 0}})]),
    ("layout", {"input": 0, "layout": ["NCHW"]}, _node(), FLOAT_4D, set(), {}, {}, []),  # not declared: the op's own
    ("layout", {"input": 0, "layout": ["NCHW"]}, _node(), FLOAT_4D, set(), {X: "NHWC"}, {},
     [("input 0 layout NHWC not in [NCHW]", "NHWC", ["NCHW"])]),
    ("value", {"input": 1, "value": {"each": True, "in": [1, 2]}}, _node(), FLOAT_4D, {W}, {}, {W: (1, [1, 2, 2])},
     []),
    ("value", {"input": 1, "value": {"elements": [2, 3], "each": True, "in": [2]}}, _node(), FLOAT_4D, {W}, {},
     {W: (1, [1, 1, 2, 3])}, [("input 1 values [1, 1, 2, 3] (elements [2, 3]): 3 not in {2}", 3, [2])]),
    ("value", {"input": 1, "value": {"in": [1]}}, _node(), FLOAT_4D, set(), {}, {},
     [("input 1 is not a constant: its value is not known", "not a constant", {"in": [1]})]),
    ("value", {"input": 2, "value": {"max": 1}}, _node(), FLOAT_4D, set(), {}, {},
     [("input 2 is absent: its value is not known", "absent", {"max": 1})]),
    ("value", {"input": 2, "value": {"max": 1, "default": 1}}, _node(), FLOAT_4D, set(), {}, {}, []),
    ("value", {"input": 1, "value": {"ratio_to_input": 0, "each": True, "in": [1]}}, _node(), FLOAT_4D, {W}, {},
     {W: (1, [1, 3, 16, 16])},
     [("input 1 values [1, 3, 16, 16] divided by input 0's dims [1, 3, 8, 8]: [2.0, 2.0] not in {1}", [2.0, 2.0],
       [1])]),
    ("value", {"input": 1, "value": {"padded_axes": True, "each": True, "in": [2, 3]}}, _node(), FLOAT_4D, {W}, {},
     {W: (1, [0, 1, 0, 0, 0, 0, 1, 1])},
     [("input 1 values [0, 1, 0, 0, 0, 0, 1, 1] (padded axes): 1 not in {2, 3}", 1, [2, 3])]),
    ("value", {"input": 1, "value": {"axes_from_end_of_input": 0, "each": True, "in": [-1]}}, _node(), FLOAT_4D,
     {W}, {}, {W: (1, [2])},
     [("input 1 values [2] (axes from the end of input 0's rank 4): -2 not in {-1}", -2, [-1])]),
    ("value", {"input": 1, "value": {"in": [1]}}, _node(), FLOAT_4D, {W}, {}, {},
     [("input 1 value not known (only scalars and 1-D constants of up to 64 elements are read)", "value not known",
       {"in": [1]})]),
    ("any_of", {"any_of": [{"input": 1, "constant": True}, {"attribute": "transB", "in": [1]}]},
     _node({"transB": 1}), FLOAT_4D, set(), {}, {}, []),
    ("any_of", {"any_of": [{"input": 1, "constant": True}, {"attribute": "transB", "in": [1]}]},
     _node({"transB": 0}), FLOAT_4D, set(), {}, {},
     [("attribute transB 0 not in {1} (the closest of 2 ways to meet it; the finding's `allowed` and "
       "`npu-gate explain` list them all)", ["runtime tensor", 0], {"any_of": ["constant", [1]]})]),
    ("unchecked", {"unchecked": True, "message": "not checked"}, _node(), {}, set(), {}, {}, []),
]


@pytest.mark.parametrize(("kind", "constraint", "node", "tensors", "constants", "layouts", "values", "expected"),
                         CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_check_passes_or_fails_with_the_value_seen_and_allowed(
    kind: str, constraint: dict[str, Any], node: NodeFacts, tensors: dict[str, TensorInfo], constants: set[str],
    layouts: dict[str, str], values: dict[str, tuple[int, list[Any]]], expected: list[tuple[str, Any, Any]],
) -> None:
    c = {"id": "c", "doc": "https://example.com/doc", "fix": "do x", **constraint}
    assert kind in c
    got = evaluate([c], node, tensors, constants, layouts, values.get)
    assert got == [Failure("c", message, actual, allowed, "https://example.com/doc", "do x")
                   for message, actual, allowed in expected]


def test_every_kind_of_check_has_a_passing_and_a_failing_case() -> None:
    failing = {kind for kind, *_, expected in CASES if expected}
    passing = {kind for kind, *_, expected in CASES if not expected}
    assert set(CHECKS) - {"unchecked"} <= failing
    assert set(CHECKS) <= passing


def test_an_unchecked_condition_is_reported_not_failed() -> None:
    c = {"id": "u", "unchecked": True, "message": "the source says: small tensors", "doc": "d",
         "when": {"input": 0, "dtype": ["int8"]}}
    assert unchecked([c], _node(), _tensors(x=("int8", [1]))) == [
        Failure("u", "the source says: small tensors", "unknown", "not checked", "d")]
    assert unchecked([c], _node(), _tensors(x=("float32", [1]))) == []  # its condition does not hold


@pytest.mark.parametrize(("template", "message"), [
    ("group {actual}, allowed {allowed}", "group 4, allowed [1, 2]"),  # the profile words the failure
    ("the vendor table says so", "attribute group 4 not in {1, 2}; the vendor table says so"),  # an explanation
])
def test_a_constraints_message_words_or_explains_its_failure(template: str, message: str) -> None:
    c = {"id": "g", "attribute": "group", "in": [1, 2], "message": template}
    [failure] = evaluate([c], _node({"group": 4}), {}, set())
    assert failure.message == message


@pytest.mark.parametrize(("when", "fails"), [
    ({"input": 0, "dtype": ["int8"]}, False),
    ({"input": 0, "dtype": ["float32"]}, True),
    ({"input": 1, "dtype": ["int8"]}, True),  # a dtype not known applies the constraint
    ({"attribute": "group", "in": [2]}, False),
    ({"attribute": "group", "not_in": [2]}, True),
])
def test_a_when_condition_decides_whether_the_constraint_applies(when: dict[str, Any], fails: bool) -> None:
    c = {"id": "r", "input": 0, "rank": {"max": 3}, "when": when}
    tensors = _tensors(x=("float32", [1, 3, 8, 8]))
    assert bool(evaluate([c], _node({"group": 1}), tensors, set())) is fails


DESCRIBED: list[tuple[dict[str, Any], str]] = [
    ({"attribute": "group", "in": [1, 2]}, "attribute group: in {1, 2}"),
    ({"attribute": "strides", "each": True, "in": [1, 2], "max": 2}, "attribute strides: each element in {1, 2}, "
     "each element ≤ 2"),
    ({"attribute": "mode", "not_in": ["", "cubic"]}, 'attribute mode: not in {"", cubic}'),
    ({"attribute": "pads", "each": True, "min": 0, "max": {"ref": {"attribute": "kernel_shape"}, "add": -1}},
     "attribute pads: each element ≥ 0, each element ≤ attribute kernel_shape − 1"),
    ({"attribute": "kernel_shape", "all_equal": True}, "attribute kernel_shape: all elements equal"),
    ({"attribute": "ratio", "absent": True}, "attribute ratio: not set (its default only)"),
    ({"attribute": "eq", "matches": ["ij,jk->ik"]}, "attribute eq: without spaces, matches one of `ij,jk->ik`"),
    ({"input": 0, "dtype": ["int8", "uint8"]}, "input 0: dtype in {int8, uint8}"),
    ({"input": 0, "rank": {"min": 4, "max": 4}}, "input 0: rank 4"),
    ({"input": 0, "rank": {"min": 2, "max": 4}}, "input 0: rank 2 to 4"),
    ({"input": 0, "rank": {"max": 4}}, "input 0: rank ≤ 4"),
    ({"input": 0, "rank": {"min": 1}}, "input 0: rank ≥ 1"),
    ({"input": 0, "dim": {"axis": 1, "min": 1, "max": 8, "multiple_of": 4, "in": [{"ref": {"input": 1, "axis": 0}}]}},
     "input 0: dim 1 ≥ 1 and ≤ 8 and a multiple of 4 and in {input 1 dim 0}"),
    ({"input": 0, "dim": {"axes": [-2, -1], "max": 4096, "batch": True}},
     "input 0: batch dims -2 × -1 multiplied ≤ 4096"),
    ({"input": 1, "constant": True}, "input 1: constant (initializer or folded)"),
    ({"input": 0, "static": True}, "input 0: static shape"),
    ({"input": 0, "max_elements": 65536, "max_bytes": 1048576},
     "input 0: at most 65,536 elements, at most 1,048,576 bytes"),
    ({"output": 0, "same_non_unit_dims_as": {"input": 0}},
     "output 0: the dims of input 0 with only dims of size 1 added, dropped or moved"),
    ({"input": 0, "layout": ["NCHW"]}, "input 0: layout in {NCHW} (where the contract declares it)"),
    ({"input": 1, "value": {"elements": [2, 3], "each": True, "in": [1, 2], "default": [1]}},
     "input 1: constant value, elements [2, 3]: each element in {1, 2} (when absent: [1], the op's default)"),
    ({"input": 1, "value": {"ratio_to_input": 0, "min": 0.5, "all_equal": True}},
     "input 1: constant value divided by input 0's dims: ≥ 0.5 and all elements equal"),
    ({"input": 1, "value": {"padded_axes": True, "each": True, "in": [2, 3]}},
     "input 1: constant value, the axes it pads (begin or end ≠ 0): each element in {2, 3}"),
    ({"input": 2, "value": {"axes_from_end_of_input": 0, "each": True, "in": [-1]}},
     "input 2: constant value, as axes counted from the end of input 0 (-1: the last): each element in {-1}"),
    # the order of a test's words: the setting, values, type and shape, then layout and value
    ({"input": 0, "value": {"in": [1]}, "layout": ["NCHW"], "static": True, "dtype": ["int8"]},
     "input 0: dtype in {int8}, static shape, layout in {NCHW} (where the contract declares it), "
     "constant value: in {1}"),
    ({"any_of": [{"input": 1, "constant": True}, {"attribute": "transB", "in": [1]}]},
     "one of: (input 1: constant (initializer or folded)) | (attribute transB: in {1})"),
    ({"unchecked": True, "message": "m"}, "not checked by npu_gate (reported as unchecked-condition)"),
    ({"input": 0, "rank": {"max": 4}, "when": {"input": 0, "dtype": ["int8"]}},
     "when input 0 dtype in {int8} (or not known): input 0: rank ≤ 4"),
    ({"attribute": "axis", "in": [1], "when": {"attribute": "group", "in": [1]}},
     "when attribute group in {1}: attribute axis: in {1}"),
]


@pytest.mark.parametrize(("constraint", "words"), DESCRIBED)
def test_a_constraint_in_words(constraint: dict[str, Any], words: str) -> None:
    assert parse({"id": "c", **constraint}).describe() == words


def test_every_kind_of_check_is_described() -> None:
    described = {key for constraint, _ in DESCRIBED for key in constraint}
    assert set(CHECKS) <= described


PROBLEMS = [
    ({"attribute": "group", "input": 0, "in": [1]},
     ["at: needs exactly one subject (attribute, input or output), has attribute, input"]),
    ({"attribute": "group", "each": True}, [f"at: no test (one of {', '.join(CHECKS)})"]),
    ({"attribute": "axis", "in": [{"ref": {"input": 0}}], "not_in": [{"ref": {"attribute": "a", "axis": 0}}],
      "min": {"ref": {}}},
     ["at.min.ref: needs exactly one of attribute, input, output", "at.in[0].ref: a tensor reference needs an axis",
      "at.not_in[0].ref: axis applies to input/output references only"]),
    ({"input": 0, "matches": ["ij"]},
     ["at.matches: matches tests a string attribute (an Einsum equation); it needs attribute"]),
    ({"attribute": "eq", "matches": ["(", "ok"]},
     ["at.matches[0]: not a regular expression: missing ), unterminated subpattern at position 0"]),
    ({"attribute": "pads", "value": {"in": [1]}},
     ["at.value: a value test is on an input or output tensor; test attribute pads with in/not_in/min/max"]),
    ({"output": 0, "dim": {"axis": 1, "in": [{"ref": {"attribute": "k"}}, {"ref": {"input": 0}}]}},
     ["at.dim.in[0].ref: a dim is compared with a tensor's dim (input or output with an axis), not an attribute",
      "at.dim.in[1].ref: a tensor reference needs an axis"]),
    ({"any_of": [{"input": 1, "constant": True}], "input": 0}, ["at: any_of replaces the subject; remove input"]),
    ({"unchecked": True, "attribute": "group"},
     ["at: an unchecked condition has no subject or test; remove attribute",
      "at: an unchecked condition needs a message saying what is not checked"]),
    ({"unchecked": True, "message": "m", "when": {"input": 0, "dtype": ["int8"]}}, []),
    ({"input": 0, "dtype": ["int8"], "rank": {"max": 4}, "value": {"in": [1]}}, []),
]


@pytest.mark.parametrize(("constraint", "problems"), PROBLEMS)
def test_a_constraints_problems(constraint: dict[str, Any], problems: list[str]) -> None:
    assert shape_problems("at", {"id": "c", **constraint}) == problems


@pytest.mark.parametrize(("when", "problems"), [
    ({"input": 0, "dtype": ["int8"]}, []),
    ({"attribute": "group", "in": [1]}, []),
    ({"attribute": "group", "dtype": ["int8"]}, ["at: dtype is a tensor test; an attribute condition takes in/not_in"]),
    ({"attribute": "group"}, ["at: an attribute condition needs in or not_in"]),
    ({"attribute": "group", "in": [{"ref": {"attribute": "k"}}]},
     ["at: a condition takes plain values, not references"]),
    ({"input": 0, "dtype": ["int8"], "in": [1]}, ["at: a tensor condition tests dtype only; remove in"]),
])
def test_a_conditions_problems(when: dict[str, Any], problems: list[str]) -> None:
    assert condition_problems("at", when) == problems
