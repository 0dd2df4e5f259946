"""Read an ONNX file safely: clear errors for non-ONNX input, external data kept in its folder."""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import onnx
from onnx import ModelProto, TensorProto

from npu_gate.errors import ModelError

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
    if path.exists() and not path.is_file():  # a folder, /dev/zero, a FIFO: never read to the end
        raise ModelError(f"{label}: not a regular file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ModelError(f"{label}: file not found") from None
    except OSError as exc:
        raise ModelError(f"{label}: cannot read: {exc.strerror}") from None
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        model = onnx.load_model_from_string(data)
    except Exception:
        raise ModelError(f"{label}: not an ONNX model (protobuf parse failed)") from None
    if not model.HasField("graph") or (model.ir_version == 0 and not model.opset_import):
        raise ModelError(f"{label}: not an ONNX model (no graph or IR version)")
    _load_external_data(model, path.resolve().parent, label, weights)
    return model, sha256


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
