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
    return _external_tensors(graph)


def _external_tensors(graph: onnx.GraphProto) -> list[TensorProto]:
    out = [t for t in graph.initializer if t.data_location == TensorProto.EXTERNAL]
    for node in graph.node:
        for attr in node.attribute if node.attribute else ():  # most nodes have none
            kind = attr.type
            if kind == onnx.AttributeProto.TENSOR and attr.t.data_location == TensorProto.EXTERNAL:
                out.append(attr.t)
            if kind == onnx.AttributeProto.GRAPH:
                out.extend(_external_tensors(attr.g))
            for g in attr.graphs:
                out.extend(_external_tensors(g))
    return out


def _load_external_data(
    model: ModelProto, folder: Path, label: str, weights: bool = True
) -> None:
    """Refuse external data outside the model's folder; then read it in (all of it, or
    with ``weights=False`` only the small tensors)."""
    tensors = _external_tensors(model.graph)
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


def external_data_files(path: Path) -> list[str]:
    """Relative locations of the external data files a model references (sorted, unique)."""
    model = onnx.load_model(str(path), load_external_data=False)
    locations = set()
    for tensor in _external_tensors(model.graph):
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
