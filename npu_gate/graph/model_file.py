"""Read an ONNX file safely: clear errors for non-ONNX input, external data kept in its folder."""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path
from typing import Any

import onnx
from onnx import ModelProto, TensorProto

from npu_gate.errors import ModelError
from npu_gate.files import UnreadableFile, read_regular

# External tensors up to this many elements are read even without ``weights``: they are
# shape-like (Reshape shapes, Slice starts, Resize scales) and shape inference needs them.
SMALL_TENSOR = 64


def load_onnx(
    path: Path, label: str | None = None, *, weights: bool = True
) -> tuple[ModelProto, str]:
    """The model and the sha256 of the .onnx file's bytes.

    External data locations are checked either way (outside the model's folder: refused).
    ``weights=False`` reads only small external tensors and leaves the weights on disk
    (their dims stay known): graph analysis never needs weight values.
    """
    label = label or str(path)
    try:  # a folder, /dev/zero, a FIFO: never read (nor waited on)
        data = read_regular(path, label)
    except UnreadableFile as exc:
        raise ModelError(str(exc)) from None
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        model = onnx.load_model_from_string(data)
    except Exception:
        raise ModelError(f"{label}: not an ONNX model (protobuf parse failed)") from None
    if not model.HasField("graph") or (model.ir_version == 0 and not model.opset_import):
        raise ModelError(f"{label}: not an ONNX model (no graph or IR version)")
    valid_text(model)
    _load_external_data(model, path.resolve().parent, label, weights)
    return model, sha256


def _decoded(raw: str | bytes) -> str:
    # backslashreplace, not replace: two different invalid names stay two names
    return raw.decode("utf-8", errors="backslashreplace") if isinstance(raw, bytes) else raw


def _fix_strings(field: Any) -> None:
    """A repeated string field with its invalid UTF-8 entries decoded (rare: checked first)."""
    values = field[:]
    if any(type(v) is bytes for v in values):
        del field[:]
        field.extend(_decoded(v) for v in values)


# A string field whose bytes are not valid UTF-8 reads back as bytes (protobuf's stubs say str):
# the names below are typed ``str | bytes`` for that.


def _fix_tensor(tensor: TensorProto) -> None:
    name: str | bytes = tensor.name
    if type(name) is bytes:
        tensor.name = _decoded(name)
    for entry in tensor.external_data:
        entry.key, entry.value = _decoded(entry.key), _decoded(entry.value)


def _fix_graph(graph: onnx.GraphProto) -> None:
    name: str | bytes = graph.name
    if type(name) is bytes:
        graph.name = _decoded(name)
    for values in (graph.input, graph.output, graph.value_info):
        for value in values:
            value_name: str | bytes = value.name
            if type(value_name) is bytes:
                value.name = _decoded(value_name)
    for tensor in graph.initializer:
        _fix_tensor(tensor)
    for sparse in graph.sparse_initializer:
        _fix_tensor(sparse.values)
    _fix_nodes(graph.node)


def _fix_nodes(nodes: Any) -> None:
    join = "".join  # raises TypeError on bytes: the one C-speed test per node of the common case
    for node in nodes:
        try:
            join(node.input[:])
            join(node.output[:])
            join((node.name, node.op_type, node.domain))
        except TypeError:
            for key in ("name", "op_type", "domain"):
                setattr(node, key, _decoded(getattr(node, key)))
            _fix_strings(node.input)
            _fix_strings(node.output)
        for attr in node.attribute if node.attribute else ():  # most nodes have none
            if type(attr.name) is bytes:
                attr.name = _decoded(attr.name)
            kind = attr.type
            if kind == onnx.AttributeProto.TENSOR:
                _fix_tensor(attr.t)
            elif kind == onnx.AttributeProto.TENSORS:
                for tensor in attr.tensors:
                    _fix_tensor(tensor)
            elif kind == onnx.AttributeProto.GRAPH:
                _fix_graph(attr.g)
            elif kind == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _fix_graph(sub)
            if attr.ref_attr_name and type(attr.ref_attr_name) is bytes:  # in functions' nodes
                attr.ref_attr_name = _decoded(attr.ref_attr_name)


def valid_text(model: ModelProto) -> None:
    """Decode, in place, the names protobuf could not: a string field holding invalid UTF-8
    comes back as ``bytes``, which no result, sort or JSON writer takes. Such bytes become
    ``\\xNN`` escapes (``b"\\xff\\xfeQ"`` is named ``\\xff\\xfeQ``); the graph's names stay
    consistent, since every reference to a name is decoded the same way."""
    for key in ("producer_name", "producer_version", "domain"):
        if type(getattr(model, key)) is bytes:
            setattr(model, key, _decoded(getattr(model, key)))
    for opset in model.opset_import:
        if type(opset.domain) is bytes:
            opset.domain = _decoded(opset.domain)
    for prop in model.metadata_props:
        prop.key, prop.value = _decoded(prop.key), _decoded(prop.value)
    _fix_graph(model.graph)
    for function in model.functions:
        for key in ("name", "domain"):
            if type(getattr(function, key)) is bytes:
                setattr(function, key, _decoded(getattr(function, key)))
        _fix_strings(function.input)
        _fix_strings(function.output)
        _fix_strings(function.attribute)
        _fix_nodes(function.node)


def external_tensors(graph: onnx.GraphProto) -> list[TensorProto]:
    """Tensors (initializers, Constant values, in subgraphs too) whose data is external."""
    out = [t for t in graph.initializer if t.data_location == TensorProto.EXTERNAL]
    for node in graph.node:
        for attr in node.attribute if node.attribute else ():  # most nodes have none
            kind = attr.type
            if kind == onnx.AttributeProto.TENSOR and attr.t.data_location == TensorProto.EXTERNAL:
                out.append(attr.t)
            if kind == onnx.AttributeProto.GRAPH:
                out.extend(external_tensors(attr.g))
            for g in attr.graphs:
                out.extend(external_tensors(g))
    return out


def _load_external_data(
    model: ModelProto, folder: Path, label: str, weights: bool = True
) -> None:
    """Refuse external data outside the model's folder; then read it in (all of it, or
    with ``weights=False`` only the small tensors)."""
    tensors = external_tensors(model.graph)
    if not tensors:
        return
    problems = []
    for tensor in tensors:
        entries = {e.key: e.value for e in tensor.external_data}
        location = entries.get("location", "")
        if "\0" in location:  # no file system takes it (os.stat: "embedded null byte")
            problems.append(f"{label}: tensor {tensor.name!r}: external data location {location!r} "
                            "holds a NUL character")
            continue
        target = (folder / location).resolve()
        if not location or os.path.isabs(location) or not target.is_relative_to(folder):
            problems.append(
                f"{label}: tensor {tensor.name!r}: external data location {location!r} "
                "is outside the model's folder"
            )
        elif not target.is_file():
            problems.append(f"{label}: tensor {tensor.name!r}: external data file {location!r} not found")
        elif problem := _extent_problem(tensor, entries, target):
            problems.append(f"{label}: tensor {tensor.name!r}: external data {problem}")
    if problems:
        raise ModelError(*problems)
    try:
        from onnx.external_data_helper import (
            load_external_data_for_model,
            load_external_data_for_tensor,
        )

        if weights:
            load_external_data_for_model(model, str(folder))
            return
        for tensor in tensors:
            if math.prod(tensor.dims) <= SMALL_TENSOR:
                load_external_data_for_tensor(tensor, str(folder))
                tensor.data_location = TensorProto.DEFAULT
                del tensor.external_data[:]
    except Exception as exc:
        raise ModelError(f"{label}: cannot read external data: {exc}") from None


# Element types packed below one byte, or of variable size: their byte count is not dims x itemsize.
_NOT_WHOLE_BYTES = {TensorProto.STRING, *(getattr(TensorProto, name, -1) for name in
                    ("UINT4", "INT4", "FLOAT4E2M1", "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2"))}


def _extent_problem(tensor: TensorProto, entries: dict[str, str], target: Path) -> str | None:
    """What is wrong with a tensor's ``offset``/``length`` in its data file (None: it fits).
    Checked without reading the file: weights that are never read must still be there."""
    numbers: dict[str, int] = {}
    for key in ("offset", "length"):
        if key in entries:
            try:
                numbers[key] = int(entries[key])
            except ValueError:
                return f"{key} {entries[key]!r} is not an integer"
            if numbers[key] < 0:
                return f"{key} {numbers[key]} is negative"
    offset, length = numbers.get("offset", 0), numbers.get("length")
    need = None
    if tensor.data_type not in _NOT_WHOLE_BYTES:
        try:
            need = math.prod(tensor.dims) * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        except Exception:
            need = None  # unknown element type: the onnx-checker finding names it
    if length is not None and need is not None and length != need:
        return f"length {length} bytes, but dims {list(tensor.dims)} need {need} bytes"
    end = offset + (length if length is not None else need or 0)
    size = target.stat().st_size
    if end > size:
        return f"file {entries['location']!r} is {size} bytes, the tensor needs bytes {offset} to {end}"
    return None


def external_data_files(path: Path) -> list[str]:
    """Relative locations of the external data files a model references (sorted, unique)."""
    model = onnx.load_model(str(path), load_external_data=False)
    locations = set()
    for tensor in external_tensors(model.graph):
        entries = {e.key: e.value for e in tensor.external_data}
        if entries.get("location"):
            locations.add(entries["location"])
    return sorted(locations)


def copy_model(path: Path, folder: Path, name: str = "model.onnx") -> Path:
    """Copy a model into ``folder`` as ``name``, its external data files beside it under
    their own relative locations (load_onnx has already refused any outside its folder)."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    shutil.copyfile(path, target)
    source_dir = path.resolve().parent
    for location in external_data_files(path):
        source = (source_dir / location).resolve()
        if not source.is_relative_to(source_dir) or not source.is_file():
            continue  # load_onnx reports these; a bundle copies only what is safe
        (folder / location).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / location)
    return target
