"""What every kind of check shares: the failure it reports, the node it reads, the base
classes a check derives from, and the helpers that word values and references.

Nothing here (or in any check) imports ``npu_gate.graph`` at module level: the graph layer
imports onnx, and profile validation (and cache hits) must stay free of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

if TYPE_CHECKING:
    from npu_gate.graph.facts import NodeFacts, TensorInfo
    from npu_gate.profile.checks.subject import Test

UNKNOWN = "unknown"
# A constant tensor's value: (rank, elements), or None when it is not known (see shape_values.ConstantValues).
ValueOf = Callable[[str], "tuple[int, list[Any]] | None"]
SUBJECTS = ("attribute", "input", "output")

# Where a check's words go in a description: what the attribute is set to, its value, the
# tensor's type and shape, then what the contract or the constant says (layout, value).
SETTING, VALUE, SHAPE, CONTENT = 0, 1, 2, 3


@dataclass(frozen=True)
class Failure:
    constraint: str
    message: str
    actual: Any
    allowed: Any
    doc: str | None = None
    fix: str | None = None  # the constraint's ``fix``: what to change in the PyTorch model


class Failed(NamedTuple):
    """One failed test: the value seen, the value allowed, and the words after the subject."""

    actual: Any
    allowed: Any
    text: str


@dataclass(frozen=True)
class Context:
    """What a check reads about the node it tests. A check that depends on the build (the
    precision it is compiled at, say) reads it from a field added here; ``evaluate`` passes it."""

    node: NodeFacts
    tensors: Mapping[str, TensorInfo]
    constants: set[str] | frozenset[str]
    layouts: Mapping[str, str]  # tensor name -> dimension letters, where known
    values: ValueOf | None = None  # constant tensors' values (None: no value is known)


@dataclass(frozen=True)
class Tensor:
    """The tensor a tensor check tests (an input or output of the node), ``name`` "" when absent."""

    name: str
    info: TensorInfo
    constant: bool


class Parser(Protocol):
    """Parses what a check holds inside it (the alternatives of ``any_of``, the tests of ``value``)."""

    def test(self, raw: Mapping[str, Any]) -> Test: ...

    def value_checks(self, raw: Mapping[str, Any]) -> tuple[ValueCheck, ...]: ...


class Check:
    """One kind of test of a constraint, parsed from the keys it owns (``keys``, and the
    ``modifiers`` that change how they test). Subclasses are frozen dataclasses."""

    keys: ClassVar[tuple[str, ...]]
    modifiers: ClassVar[tuple[str, ...]] = ()
    group: ClassVar[int]  # where its words go in a description (SETTING...CONTENT)
    first: ClassVar[bool] = False  # its failures come before the subject's other checks'

    @classmethod
    def parse(cls, raw: Mapping[str, Any], parser: Parser) -> Check:
        raise NotImplementedError

    def phrases(self) -> list[str]:
        """Its tests in words, one phrase each (``dtype in {int8}``)."""
        raise NotImplementedError

    def describe(self) -> str:
        return ", ".join(self.phrases())

    def problems(self, where: str, subjects: tuple[tuple[str, Any], ...]) -> list[str]:
        """What the schema cannot say about it (``where``: the JSON path of its constraint)."""
        return []

    def references(self, where: str) -> list[tuple[str, Any]]:
        """(JSON path, value) of each ``{"ref": ...}`` it holds, checked by ``ref_problems``."""
        return []

    @classmethod
    def onnx_attributes(cls, raw: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(path suffix, name) of the attributes a raw test (which may fail its schema) refers to."""
        return []

    @classmethod
    def onnx_inputs(cls, raw: Mapping[str, Any]) -> list[tuple[str, int]]:
        """(path suffix, index) of the inputs a raw test (which may fail its schema) refers to."""
        return []


class ValueCheck(Check):
    """A test of a value: an attribute's (ONNX default filled in) or a constant tensor's."""

    group = VALUE
    on_constants: ClassVar[bool] = True  # also a test of a constant tensor's ``value``

    @property
    def needs_value(self) -> bool:
        """An absent value (no default) fails it: it cannot be in a set or a range."""
        return False

    def allowed_when_unknown(self) -> dict[str, Any]:
        """Its part of ``allowed`` when the value is absent or not known."""
        return {}

    def resolved(self, ctx: Context) -> ValueCheck:
        """The check with its references replaced by their values on this node."""
        return self

    def evaluate(self, value: Any) -> list[Failed]:
        raise NotImplementedError


class AttributeCheck(Check):
    """A test of whether an attribute is set; in force (``stands_alone``), its value is not tested."""

    group = SETTING

    @property
    def stands_alone(self) -> bool:
        raise NotImplementedError

    def evaluate(self, name: str, ctx: Context) -> list[Failed]:
        raise NotImplementedError


class TensorCheck(Check):
    """A test of an input or output tensor."""

    group = SHAPE
    on_absent: ClassVar[bool] = False  # also tested on an absent optional tensor

    def evaluate(self, tensor: Tensor, ctx: Context) -> list[Failed]:
        raise NotImplementedError


class FormCheck(Check):
    """A form that replaces the subject and its tests (``any_of``, ``unchecked``)."""

    group = SETTING

    @property
    def active(self) -> bool:
        return True

    @property
    def checked(self) -> bool:
        """False: npu_gate does not check it (reported as an unchecked condition)."""
        return True

    def evaluate(self, ctx: Context) -> list[Failed]:
        return []

    def form_problems(self, where: str) -> list[str]:
        """Its problems when it is not checked (then the subject's are not asked)."""
        return []


def run_values(checks: tuple[ValueCheck, ...] | list[ValueCheck], value: Any) -> list[Failed]:
    """The failed tests of ``checks`` on one value (None: absent with no default, or not defined
    at this opset: it cannot be in an allowed set or a range, and it is none of the forbidden values)."""
    if value is None:
        if any(check.needs_value for check in checks):
            return [Failed(UNKNOWN, allowed_of(checks), "is absent and has no default")]
        return []
    ordered = sorted(checks, key=lambda check: not check.first)
    return [failed for check in ordered for failed in check.evaluate(value)]


def allowed_of(checks: tuple[ValueCheck, ...] | list[ValueCheck]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for check in checks:
        out |= check.allowed_when_unknown()
    return out


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def is_ref(value: Any) -> bool:
    return isinstance(value, dict) and "ref" in value


def tensor_index(value: Any) -> int | None:
    """A tensor index as the schema allows it (an integer, not a boolean), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def resolve_ref(value: dict[str, Any], node: NodeFacts, tensors: Mapping[str, TensorInfo]) -> Any:
    """A reference's value: a tensor dim or another attribute, plus ``add``; UNKNOWN if unknown.

    ``{"ref": {"input": 0, "axis": 1}}`` is input 0's dim 1; ``{"ref": {"attribute":
    "kernel_shape"}, "add": -1}`` is kernel_shape minus one, per element for lists.
    """
    ref, add = value["ref"], value.get("add", 0)
    resolved: Any = UNKNOWN
    if "attribute" in ref:
        resolved = node.attributes.get(ref["attribute"], UNKNOWN)
    else:
        kind = "input" if "input" in ref else "output"
        names = node.inputs if kind == "input" else node.outputs
        index = ref[kind]
        tensor = tensors.get(names[index]) if index < len(names) and names[index] else None
        shape = tensor.shape if tensor is not None else None
        axis = ref["axis"]
        if shape is not None and -len(shape) <= axis < len(shape) and isinstance(shape[axis], int):
            resolved = shape[axis]
    if not add or resolved == UNKNOWN:
        return resolved
    if isinstance(resolved, list):
        return [v + add if is_number(v) else v for v in resolved]
    return resolved + add if is_number(resolved) else resolved


def ref_problems(at: str, value: Any) -> list[str]:
    """A ``{"ref": ...}``'s shape: exactly one of attribute, input, output; an axis with a tensor."""
    ref = value.get("ref", {})
    kinds = [s for s in SUBJECTS if s in ref]
    if len(kinds) != 1:
        return [f"{at}.ref: needs exactly one of attribute, input, output"]
    if kinds[0] != "attribute" and "axis" not in ref:
        return [f"{at}.ref: a tensor reference needs an axis"]
    if kinds[0] == "attribute" and "axis" in ref:
        return [f"{at}.ref: axis applies to input/output references only"]
    return []


def show(value: Any) -> str:
    """A value in a failure message: lists in brackets, sets and tuples in braces."""
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, set | frozenset | tuple):
        return "{" + ", ".join(show(v) for v in value) + "}"
    if isinstance(value, dict):  # an allowed range: {"max": 7} shows as "max 7"
        return ", ".join(f"{k} {show(v)}" for k, v in value.items())
    return str(value)


def show_shape(t: TensorInfo) -> str:
    if t.shape is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in t.shape) + "]"


def one_or_list(values: list[Any]) -> Any:
    return values if len(values) > 1 else values[0]


def hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def words(v: Any) -> str:
    """A value in a description; a reference as what it reads (an attribute, a dim, plus its ``add``)."""
    if is_ref(v):
        ref = v["ref"]
        if "attribute" in ref:
            text = f"attribute {ref['attribute']}"
        else:
            kind = "input" if "input" in ref else "output"
            text = f"{kind} {ref[kind]} dim {ref['axis']}"
        add = v.get("add", 0)
        return text + (f" {'+' if add > 0 else '−'} {abs(add)}" if add else "")
    if isinstance(v, str):
        return v or '""'
    if isinstance(v, list):
        return "[" + ", ".join(words(x) for x in v) + "]"
    return str(v)


def words_set(values: list[Any]) -> str:
    return "{" + ", ".join(words(v) for v in values) + "}"
