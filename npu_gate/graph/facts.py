"""Facts about an ONNX graph: checker, shape inference, tensors, nodes with default attributes.

Nothing here judges the model against a target; it only states what is in it.
Everything taken from the model (names, strings) is untrusted text and is kept as data.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import onnx
from onnx import AttributeProto, GraphProto, ModelProto, TensorProto

from npu_gate.result.types import TensorEntry

# numpy names for ONNX element types, and their sizes in bytes (None: no fixed size).
_DTYPES: dict[int, tuple[str, int | None]] = {
    TensorProto.FLOAT: ("float32", 4),
    TensorProto.UINT8: ("uint8", 1),
    TensorProto.INT8: ("int8", 1),
    TensorProto.UINT16: ("uint16", 2),
    TensorProto.INT16: ("int16", 2),
    TensorProto.INT32: ("int32", 4),
    TensorProto.INT64: ("int64", 8),
    TensorProto.STRING: ("string", None),
    TensorProto.BOOL: ("bool", 1),
    TensorProto.FLOAT16: ("float16", 2),
    TensorProto.DOUBLE: ("float64", 8),
    TensorProto.UINT32: ("uint32", 4),
    TensorProto.UINT64: ("uint64", 8),
    TensorProto.COMPLEX64: ("complex64", 8),
    TensorProto.COMPLEX128: ("complex128", 16),
    TensorProto.BFLOAT16: ("bfloat16", 2),
}
_DTYPE_SIZES = {name: size for name, size in _DTYPES.values()}
# Later element types, by ONNX's own (lower-cased) names: float8 takes a byte; 4- and 2-bit
# types are packed, so a tensor of them takes ceil(elements * bits / 8) bytes.
_DTYPE_SIZES.update(dict.fromkeys(("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0"), 1))
_PACKED_BITS = {"int4": 4, "uint4": 4, "float4e2m1": 4, "int2": 2, "uint2": 2}


def dtype_name(elem_type: int) -> str | None:
    if elem_type in _DTYPES:
        return _DTYPES[elem_type][0]
    if elem_type == TensorProto.UNDEFINED:
        return None
    try:  # float8/int4 and later types: use ONNX's own name
        return str(TensorProto.DataType.Name(elem_type)).lower()
    except ValueError:
        return None


def dtype_size(dtype: str | None) -> int | None:
    return _DTYPE_SIZES.get(dtype) if dtype is not None else None


Dim = int | str | None  # int: static; str: symbolic name; None: unknown


@dataclass
class TensorInfo:
    name: str
    dtype: str | None
    shape: list[Dim] | None  # None: rank unknown

    @property
    def static(self) -> bool:
        if self.shape is None:
            return False
        # A loop, not all(genexpr): asked for every tensor of every node, twice as fast.
        for d in self.shape:  # noqa: SIM110
            if not isinstance(d, int) or d < 0:
                return False
        return True

    @property
    def elements(self) -> int | None:
        if self.shape is None:
            return None
        n = 1
        for d in self.shape:  # as ``static`` and math.prod in one loop: asked for every tensor
            if not isinstance(d, int) or d < 0:
                return None
            n *= d
        return n

    @property
    def nbytes(self) -> int | None:
        elements = self.elements
        if elements is None:
            return None
        bits = _PACKED_BITS.get(self.dtype or "")
        if bits is not None:
            return -(-elements * bits // 8)
        size = dtype_size(self.dtype)
        return None if size is None else size * elements

    def to_dict(self) -> TensorEntry:
        return TensorEntry(name=self.name, shape=self.shape, dtype=self.dtype)


@dataclass
class NodeFacts:
    index: int
    name: str  # unique display name (the model's own name when it has a unique one)
    op_type: str
    domain: str  # "" for the default ONNX domain
    inputs: list[str]  # '' marks an absent optional input
    outputs: list[str]
    attributes: dict[str, Any]  # JSON-ready, ONNX defaults filled in
    defaulted: list[str]  # attribute names whose value came from the op schema
    implicit_inputs: list[str] = field(default_factory=list)  # outer-scope names read by subgraphs
    subgraph_nodes: int = 0
    original_name: str | None = None  # the model's own name when ``name`` is a display name

    @property
    def key(self) -> str:
        """Profile key: ``OpType`` for the ONNX domain, ``domain::OpType`` otherwise."""
        return self.op_type if self.domain in ("", "ai.onnx") else f"{self.domain}::{self.op_type}"


@dataclass
class GraphFacts:
    ir_version: int
    opset: int
    opsets: dict[str, int]
    producer: str
    nodes: list[NodeFacts]
    tensors: dict[str, TensorInfo]
    inputs: list[TensorInfo]  # graph inputs that are not initializers, as the model declares them
    outputs: list[TensorInfo]
    initializers: set[str]
    checker_errors: list[str]
    shape_inference_error: str | None


def tensor_info_from_type(name: str, type_proto: onnx.TypeProto) -> TensorInfo:
    # A graph repeats a handful of distinct types; reading dims through protobuf costs
    # about 1 us each, serialising a type a fraction of that. So each distinct type is
    # read once (keyed by its bytes) and every tensor gets its own copy of the shape.
    dtype, shape = _type_view(type_proto.SerializeToString())
    return TensorInfo(name, dtype, None if shape is None else list(shape))


@functools.lru_cache(maxsize=4096)
def _type_view(serialized: bytes) -> tuple[str | None, tuple[Dim, ...] | None]:
    """(dtype, shape) of a serialised TypeProto; shape None: rank unknown or not a tensor."""
    type_proto = onnx.TypeProto.FromString(serialized)
    if not type_proto.HasField("tensor_type"):
        return None, None
    tt = type_proto.tensor_type
    shape = tuple(_dim(d) for d in tt.shape.dim) if tt.HasField("shape") else None
    return dtype_name(tt.elem_type), shape


def _dim(dim: onnx.TensorShapeProto.Dimension) -> Dim:
    which = dim.WhichOneof("value")  # one protobuf call instead of two HasField calls
    if which == "dim_value":
        return int(dim.dim_value)
    if which == "dim_param":
        param: str | bytes = dim.dim_param  # bytes when it is not valid UTF-8 (the stubs say str)
        return (param.decode("utf-8", errors="backslashreplace") if isinstance(param, bytes) else param) or None
    return None


def run_checker(model: ModelProto, *, external: bool | None = None) -> list[str]:
    """onnx.checker errors (the full check's strict shape inference runs separately).

    ``external``: whether the model has external tensors, when the caller already walked
    the graph to know (None: walk it here).
    """
    try:
        checked = model if external is False else _without_external_data(model)
        onnx.checker.check_model(checked, full_check=False)
    except onnx.checker.ValidationError as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()][:20]
        return [_name_graph_value(model, lines[0].strip())] if len(lines) == 1 else lines
    except Exception as exc:  # protobuf-level surprises: report, never crash
        return [f"{type(exc).__name__}: {exc}"]
    return []


# The fields onnx.checker requires of a main-graph input's or output's type, by kind of type.
_REQUIRED_TYPE_FIELDS = {
    "tensor_type": ("elem_type", "shape"),
    "sparse_tensor_type": ("elem_type", "shape"),
    "sequence_type": ("elem_type",),
    "optional_type": ("elem_type",),
    "map_type": ("key_type", "value_type"),
}


def _graph_value_problem(value: onnx.ValueInfoProto) -> str | None:
    """What onnx.checker says about one main-graph input or output, in its words (its
    ``check_value_info``), or None when the value passes."""
    if not value.name:
        return "Field 'name' of 'value_info' is required to be non-empty."
    if not value.HasField("type"):
        return "Field 'type' of 'value_info' is required but missing."
    kind = value.type.WhichOneof("value")
    if kind is None:
        return "Unrecognized type value case"  # the checker's own message names the value
    if kind == "opaque_type" and not value.type.opaque_type.name:
        return "Field 'name' of 'type' is required to be non-empty."
    for name in _REQUIRED_TYPE_FIELDS.get(kind, ()):
        if not getattr(value.type, kind).HasField(name):
            return f"Field '{name}' of 'type' is required but missing."
    return None


def _name_graph_value(model: ModelProto, message: str) -> str:
    """The checker's message, prefixed with the graph input or output it is about when it is
    one of those (``Field 'shape' of 'type' is required but missing.`` names no tensor). The
    checker stops at the first input, then output, that fails: the first one here that fails
    with the same words is it."""
    for kind, values in (("input", model.graph.input), ("output", model.graph.output)):
        for i, value in enumerate(values):
            problem = _graph_value_problem(value)
            if problem is None:
                continue
            if problem != message:
                return message
            return f"graph {kind} " + (f"'{value.name}'" if value.name else f"{i} (no name)") + f": {message}"
    return message


def infer_shapes(model: ModelProto) -> tuple[ModelProto, str | None, str | None]:
    """Strict shape inference with data propagation (what the checker's full check runs).

    Returns the inferred model, the strict pass's error (the model fails the full check),
    and the lenient fallback's error (no shapes could be inferred at all).
    """
    try:
        inferred = onnx.shape_inference.infer_shapes(
            model, check_type=True, strict_mode=True, data_prop=True
        )
        return inferred, None, None
    except Exception as exc:
        strict_error = _first_line(str(exc)) or type(exc).__name__
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True), strict_error, None
    except Exception as exc:
        return model, strict_error, _first_line(str(exc)) or type(exc).__name__


_NODE_IN_ERROR = re.compile(r"node name: ([^)]*)\)")
_CHECKER_NODE = re.compile(r"Name: (\S*) OpType: (\S+)")


def node_named_in(error: str) -> str | None:
    """The node an ONNX inference error names, if any."""
    match = _NODE_IN_ERROR.search(error)
    return match.group(1) if match and match.group(1) else None


def checker_node(message: str, facts: GraphFacts) -> NodeFacts | None:
    """The node an ``onnx.checker`` error names ("... Name: X OpType: Y"), when exactly one
    top-level node has that (model) name and op type."""
    match = _CHECKER_NODE.search(message)
    if match is None:
        return None
    name, op_type = match.groups()
    hits = [n for n in facts.nodes
            if (n.original_name if n.original_name is not None else n.name) == name and n.op_type == op_type]
    return hits[0] if len(hits) == 1 else None


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def apply_input_shapes(model: ModelProto, shapes: dict[str, list[int]]) -> None:
    """Overwrite the named graph inputs' dims with the contract's static dims (in place)."""
    for value in model.graph.input:
        if value.name not in shapes or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for d in shapes[value.name]:
            dims.add().dim_value = d


def initializer_inputs(model: ModelProto, declared: Collection[str] = ()) -> frozenset[str]:
    """The initializers that are runtime inputs, not weights: from IR 4 on, every one the
    graph also lists in ``graph.input`` (its value is a default the caller may override, as
    onnxruntime does: it neither folds it nor treats it as constant). Before IR 4 every
    initializer is listed there and all are weights, except those ``declared`` names (the
    contract's inputs)."""
    names = {init.name for init in model.graph.initializer}
    if not names:
        return frozenset()
    listed = {value.name for value in model.graph.input}
    overridable = names & listed if model.ir_version >= 4 else set()
    return frozenset(overridable | (names & set(declared)))


def collect(
    model: ModelProto,
    checker_errors: list[str],
    shape_error: str | None,
    as_inputs: frozenset[str] = frozenset(),
) -> GraphFacts:
    """Build GraphFacts from an (already shape-inferred) model.

    ``as_inputs``: initializers that are runtime inputs (``initializer_inputs``); the
    others are weights, also when the model lists them as graph inputs (IR < 4).
    """
    graph = model.graph
    opsets = {(o.domain or ""): int(o.version) for o in model.opset_import}
    opset = opsets.get("", opsets.get("ai.onnx", 0))

    tensors: dict[str, TensorInfo] = {}
    initializers = {init.name for init in graph.initializer} - as_inputs
    for init in graph.initializer:
        tensors[init.name] = TensorInfo(init.name, dtype_name(init.data_type), list(init.dims))
    for value in list(graph.value_info) + list(graph.output):
        tensors[value.name] = tensor_info_from_type(value.name, value.type)
    inputs: list[TensorInfo] = []
    for value in graph.input:
        info = tensor_info_from_type(value.name, value.type)
        if value.name in initializers:
            continue  # IR < 4 lists weights as inputs too; they stay weights
        if info.shape is None and value.name in as_inputs:
            info = tensors[value.name]  # an overridable initializer: its default value's shape
        tensors[value.name] = info
        inputs.append(info)
    outputs = [tensors.get(v.name) or tensor_info_from_type(v.name, v.type) for v in graph.output]

    nodes = [_node_facts(i, node, opsets) for i, node in enumerate(graph.node)]
    _make_names_unique(nodes)
    for node in nodes:
        if node.op_type in _IMPLIED_ATTRIBUTE_OPS:
            fill_implied_attributes(node, tensors, opset)
    for node in nodes:
        if node.op_type == "Constant" and node.outputs and node.outputs[0] not in tensors:
            value = constant_value_info(graph.node[node.index])
            if value is not None:
                tensors[node.outputs[0]] = TensorInfo(node.outputs[0], value[0], value[1])
    return GraphFacts(
        ir_version=int(model.ir_version),
        opset=opset,
        opsets=opsets,
        producer=f"{model.producer_name} {model.producer_version}".strip(),
        nodes=nodes,
        tensors=tensors,
        inputs=inputs,
        outputs=outputs,
        initializers=initializers,
        checker_errors=checker_errors,
        shape_inference_error=shape_error,
    )


def constant_value_info(node: onnx.NodeProto) -> tuple[str | None, list[Dim]] | None:
    for attr in node.attribute:
        if attr.name == "value" and attr.type == AttributeProto.TENSOR:
            return dtype_name(attr.t.data_type), list(attr.t.dims)
        if attr.name in ("value_float", "value_int"):
            return ("float32" if attr.name == "value_float" else "int64"), []
        if attr.name in ("value_floats", "value_ints"):
            n = len(attr.floats) if attr.name == "value_floats" else len(attr.ints)
            return ("float32" if attr.name == "value_floats" else "int64"), [n]
    return None


_CONV_WEIGHT_INPUT = {"Conv": 1, "ConvTranspose": 1, "ConvInteger": 1, "QLinearConv": 3, "DeformConv": 1}
_POOLS = ("MaxPool", "AveragePool", "LpPool")
_IMPLIED_ATTRIBUTE_OPS = frozenset((*_CONV_WEIGHT_INPUT, *_POOLS))


def fill_implied_attributes(node: NodeFacts, tensors: dict[str, TensorInfo], opset: int = 0) -> None:
    """Defaults the ONNX spec states in prose but the op schema does not encode.

    Conv's strides, dilations and pads default to 1, 1 and 0 per spatial axis, and its
    kernel_shape is the weight's spatial shape; pools likewise for strides and pads, and
    for dilations where the op has them at ``opset`` (AveragePool 19, LpPool 18).
    """
    if node.domain != "":
        return
    spatial: int | None = None
    if node.op_type in _CONV_WEIGHT_INPUT:
        index = _CONV_WEIGHT_INPUT[node.op_type]
        weight = tensors.get(node.inputs[index]) if index < len(node.inputs) else None
        if weight is not None and weight.shape is not None and len(weight.shape) >= 3:
            spatial = len(weight.shape) - 2
            kernel = weight.shape[2:]
            if "kernel_shape" not in node.attributes and all(isinstance(d, int) for d in kernel):
                node.attributes["kernel_shape"] = [int(d) for d in kernel if d is not None]
                node.defaulted.append("kernel_shape")
    elif node.op_type in _POOLS and isinstance(node.attributes.get("kernel_shape"), list):
        spatial = len(node.attributes["kernel_shape"])
    if spatial is None:
        return
    implied: dict[str, list[int]] = {"strides": [1] * spatial, "pads": [0] * (2 * spatial)}
    if node.op_type in ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "DeformConv", "MaxPool") or (
        node.op_type in _POOLS and "dilations" in getattr(op_schema(node.op_type, "", opset), "attributes", {})
    ):
        implied["dilations"] = [1] * spatial
    if node.op_type == "ConvTranspose":
        implied["output_padding"] = [0] * spatial
    for name, value in implied.items():
        if name not in node.attributes:
            node.attributes[name] = value
            node.defaulted.append(name)
    node.attributes = dict(sorted(node.attributes.items()))
    node.defaulted.sort()


def _make_names_unique(nodes: list[NodeFacts]) -> None:
    """Give unnamed and duplicate-named nodes a stable display name, ``<name>#<index>`` (the
    op type for an unnamed node; index: its position in the graph's node list), with
    ``_2``, ``_3``... appended if the model already has a node of that name. The model's
    own name is kept in ``original_name``."""
    seen = Counter(node.name for node in nodes)
    if len(seen) == len(nodes) and "" not in seen:
        return  # the common case: every node has its own name
    taken = set(seen)
    for node in nodes:
        if not node.name or seen[node.name] > 1:
            display = base = f"{node.name or node.op_type}#{node.index}"
            k = 1
            while display in taken:  # a node really named e.g. "Relu#0"
                k += 1
                display = f"{base}_{k}"
            taken.add(display)
            node.original_name, node.name = node.name, display


@functools.cache
def op_schema(op_type: str, domain: str, opset: int) -> Any:
    """ONNX's schema for an op at an opset, or None when ONNX does not know it."""
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except Exception:
        return None


_DEFAULTS_CACHE: dict[tuple[str, str, int], tuple[tuple[str, Any], ...]] = {}


def _schema_defaults(op_type: str, domain: str, opset: int) -> tuple[tuple[str, Any], ...]:
    """The op's attributes' default values as JSON (none when ONNX has no schema for it), cached per op and opset."""
    key = (op_type, domain, opset)
    if key not in _DEFAULTS_CACHE:
        try:
            schema = onnx.defs.get_schema(op_type, opset, domain)
        except Exception:
            _DEFAULTS_CACHE[key] = ()
        else:
            defaults = []
            for name, spec in schema.attributes.items():
                default = spec.default_value
                if default is not None and default.type != AttributeProto.UNDEFINED:
                    defaults.append((name, attribute_value(default)))
            _DEFAULTS_CACHE[key] = tuple(defaults)
    return _DEFAULTS_CACHE[key]


def _node_facts(index: int, node: onnx.NodeProto, opsets: dict[str, int]) -> NodeFacts:
    # Called once per node of the graph: protobuf fields are read once each, and the
    # common case (no attributes, no subgraphs) takes no extra steps.
    op_type = node.op_type
    domain = node.domain
    if domain == "ai.onnx":
        domain = ""
    attributes: dict[str, Any] = {}
    subgraph_nodes = 0
    implicit: list[str] = []
    if node.attribute:  # most nodes have none: testing the (upb) container is cheaper than iterating it
        for attr in node.attribute:
            attributes[attr.name] = attribute_value(attr)
            if attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                for sub in attr_graphs(attr):
                    subgraph_nodes += _count_nodes(sub)
                    implicit.extend(outer_scope_names(sub))
    key = (op_type, domain, opsets.get(domain, opsets.get("ai.onnx", 0)))
    defaults = _DEFAULTS_CACHE.get(key)
    if defaults is None:
        defaults = _schema_defaults(*key)
    defaulted: list[str] = []
    for name, value in defaults:
        if name not in attributes:
            attributes[name] = list(value) if isinstance(value, list) else value
            defaulted.append(name)
    if len(attributes) > 1:
        attributes = dict(sorted(attributes.items()))
        defaulted.sort()
    return NodeFacts(index, node.name, op_type, domain, node.input[:], node.output[:], attributes, defaulted,
                     sorted(set(implicit)) if implicit else [], subgraph_nodes)


def attr_graphs(attr: AttributeProto) -> list[GraphProto]:
    """The subgraphs an attribute holds: its graph, its graphs, or none."""
    if attr.type == AttributeProto.GRAPH:
        return [attr.g]
    if attr.type == AttributeProto.GRAPHS:
        return list(attr.graphs)
    return []


def _count_nodes(graph: GraphProto) -> int:
    total = 0
    for node in graph.node:
        total += 1
        for attr in node.attribute:
            for sub in attr_graphs(attr):
                total += _count_nodes(sub)
    return total


def outer_scope_names(graph: GraphProto) -> Iterator[str]:
    """Names a subgraph (recursively) reads but does not define itself."""
    defined = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    defined |= {i.values.name for i in graph.sparse_initializer}
    for node in graph.node:
        for name in node.input:
            if name and name not in defined:
                yield name
        for attr in node.attribute:
            for sub in attr_graphs(attr):
                for name in outer_scope_names(sub):
                    if name not in defined:
                        yield name
        defined.update(node.output)


def node_reads(node: onnx.NodeProto) -> list[str]:
    """Every tensor a node reads, once each: its inputs, then the outer-scope names its
    subgraphs (If/Loop/Scan bodies, nested ones too) read. A name a body defines is never one
    of the outer graph's (names are unique, SSA), so this answers "does the node read this
    tensor?" for any tensor of the node's own graph."""
    names = [n for n in node.input if n]
    for attr in node.attribute:
        for g in attr_graphs(attr):
            names.extend(outer_scope_names(g))
    return list(dict.fromkeys(names))


def _clean_float(x: float) -> float | str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return float(f"{x:.7g}")  # attributes are float32: 7 significant digits say it all


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def attribute_value(attr: AttributeProto) -> Any:
    """A JSON-ready view of an attribute. Tensors and graphs are summarised, not dumped."""
    t = attr.type
    if t == AttributeProto.INT:
        return int(attr.i)
    if t == AttributeProto.FLOAT:
        return _clean_float(attr.f)
    if t == AttributeProto.STRING:
        return _text(attr.s)
    if t == AttributeProto.INTS:
        return [int(v) for v in attr.ints]
    if t == AttributeProto.FLOATS:
        return [_clean_float(v) for v in attr.floats]
    if t == AttributeProto.STRINGS:
        return [_text(v) for v in attr.strings]
    if t == AttributeProto.TENSOR:
        return _tensor_summary(attr.t)
    if t == AttributeProto.GRAPH:
        return {"graph": attr.g.name, "nodes": _count_nodes(attr.g)}
    if t == AttributeProto.GRAPHS:
        return [{"graph": g.name, "nodes": _count_nodes(g)} for g in attr.graphs]
    if t == AttributeProto.SPARSE_TENSOR:
        return {"sparse_tensor": list(attr.sparse_tensor.dims)}
    return {"unsupported_attribute_type": int(t)}


def _tensor_summary(tensor: TensorProto) -> dict[str, Any]:
    summary: dict[str, Any] = {"dtype": dtype_name(tensor.data_type), "dims": list(tensor.dims)}
    elements = math.prod(tensor.dims) if tensor.dims else 1
    if elements <= 8 and tensor.data_location != TensorProto.EXTERNAL:
        try:
            from onnx import numpy_helper

            values = numpy_helper.to_array(tensor).reshape(-1).tolist()
            summary["values"] = [_clean_float(v) if isinstance(v, float) else v for v in values]
        except Exception:
            pass  # exotic dtypes: the summary without values is enough
    return summary


def producers(nodes: list[NodeFacts]) -> dict[str, int]:
    """Tensor name → index of the node that produces it."""
    out: dict[str, int] = {}
    for node in nodes:
        for name in node.outputs:
            if name:
                out[name] = node.index
    return out


def node_dependencies(nodes: list[NodeFacts]) -> list[list[int]]:
    """For each node, the distinct indices of the nodes it reads from (incl. via subgraphs)."""
    made_by = producers(nodes)
    deps: list[list[int]] = []
    for node in nodes:
        seen: dict[int, None] = {}
        names = (*node.inputs, *node.implicit_inputs) if node.implicit_inputs else node.inputs
        for name in names:
            p = made_by.get(name)  # '' (absent optional input) is never produced
            if p is not None and p != node.index:
                seen[p] = None
        deps.append(list(seen))
    return deps


def topological_order(nodes: list[NodeFacts], deps: list[list[int]]) -> list[int]:
    """Kahn's algorithm, ties broken by the model's own order. Nodes caught in a cycle
    (an invalid model) are appended in model order so that analysis still completes."""
    import heapq

    indegree = [len(d) for d in deps]
    consumers: list[list[int]] = [[] for _ in nodes]
    for i, d in enumerate(deps):
        for p in d:
            consumers[p].append(i)
    ready = [i for i, n in enumerate(indegree) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for c in consumers[i]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, c)
    if len(order) < len(nodes):
        placed = set(order)
        order.extend(i for i in range(len(nodes)) if i not in placed)
    return order


def scope_tensors(graph: GraphProto, outer: Mapping[str, TensorInfo]) -> dict[str, TensorInfo]:
    """The tensors a subgraph's nodes see: its initializers, inputs, value_info and outputs
    over the outer scopes' tensors ``outer``."""
    tensors = dict(outer)
    for init in graph.initializer:
        tensors[init.name] = TensorInfo(init.name, dtype_name(init.data_type), list(init.dims))
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensors[value.name] = tensor_info_from_type(value.name, value.type)
    return tensors


def subgraph_nodes(graph: GraphProto, opsets: dict[str, int]) -> list[NodeFacts]:
    """NodeFacts for the nodes of a subgraph (Loop/If/Scan body), names made unique."""
    nodes = [_node_facts(i, node, opsets) for i, node in enumerate(graph.node)]
    _make_names_unique(nodes)
    return nodes


def subgraphs(node: onnx.NodeProto) -> list[tuple[str, GraphProto]]:
    """(attribute name, graph) for every subgraph a node holds."""
    out = []
    for attr in node.attribute:
        graphs = attr_graphs(attr)
        for k, g in enumerate(graphs):
            out.append((attr.name if len(graphs) == 1 else f"{attr.name}[{k}]", g))
    return out


def _without_external_data(model: ModelProto) -> ModelProto:
    """The model as the checker should see it when weights were left on disk on purpose
    (model_file.load_onnx(weights=False) already checked their files): an in-memory model
    has no folder, so the checker would look for them relative to the working directory."""
    from npu_gate.graph.model_file import external_tensors

    if not external_tensors(model.graph):
        return model
    stub = ModelProto()
    stub.CopyFrom(model)  # cheap: the weights are not in memory
    for tensor in external_tensors(stub.graph):
        size = dtype_size(dtype_name(tensor.data_type))
        if size is None:
            continue  # no fixed-size placeholder (strings): left for the checker to report
        # A one-element placeholder: the checker validates the tensor's own consistency,
        # the file was validated by the loader, and nothing else reads this copy.
        del tensor.external_data[:]
        del tensor.dims[:]
        tensor.data_location = TensorProto.DEFAULT
        tensor.raw_data = bytes(size)
    return stub
