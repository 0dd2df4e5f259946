"""Prepare ONNX models for Qualcomm HTP with onnxruntime-qnn. Runs in its own venv, as a child process.

Usage: python -u qnn_driver.py REQUEST.json RESPONSE.json   (one model)
       python -u qnn_driver.py --batch FD                    (many models, see _protocol.py)

Standalone on purpose (the compiler's venv has no npu_gate). Creating the onnxruntime session
with the QNN execution provider is the HTP prepare (the compile). The session is created with
verbose logging (the log carries the EP's reasons per refused node) and with graph-assignment
recording on; the assignment (which EP took which ONNX node, per subgraph, in session order)
is written to ``assignment.json`` in the working folder. RESPONSE.json is rewritten before
each stage, so a crash still says where it died.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from _protocol import Save, main

EP = "QNNExecutionProvider"
_registered: list[bool] = []


def build(request: dict[str, Any], save: Save) -> None:
    start = time.perf_counter()
    import onnxruntime as ort
    import onnxruntime_qnn
    from onnxruntime_qnn import build_and_package_info as info

    save(stage="config", version=info.__version__, backend=f"QNN {getattr(info, 'qnn_version', '?')}",
         onnxruntime=ort.__version__, import_s=time.perf_counter() - start,
         precision=request.get("precision"), soc_model=request.get("soc_model"), graph_io=request.get("graph_io"),
         order=request.get("order"), unnamed=request.get("unnamed"),
         readers=request.get("readers"), qdq=request.get("qdq"))
    if request["target"] != "htp":
        raise ValueError(f"unknown target {request['target']!r} (onnxruntime-qnn offline: htp)")
    if not _registered:
        ort.register_execution_provider_library(onnxruntime_qnn.get_ep_name(), onnxruntime_qnn.get_library_path())
        _registered.append(True)
    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP]
    if not devices:
        raise RuntimeError(f"{EP}: no device after registering {onnxruntime_qnn.get_library_path()}")
    options = ort.SessionOptions()
    options.log_severity_level = 0
    options.log_verbosity_level = 0
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    provider: dict[str, str] = {"backend_type": "htp", "soc_model": str(request["soc_model"])}
    if request.get("precision") == "fp16":
        provider["enable_htp_fp16_precision"] = "1"
    options.add_provider_for_devices(devices, provider)
    save(stage="load")
    _fix_shapes(ort, request, options)
    save(stage="build")
    t0 = time.perf_counter()
    session = ort.InferenceSession(request["model"], sess_options=options)
    build_s = time.perf_counter() - t0
    assignment = [{"ep": sub.ep_name, "nodes": [{"name": n.name, "op_type": n.op_type} for n in sub.get_nodes()]}
                  for sub in session.get_provider_graph_assignment_info()]
    with open("assignment.json", "w", encoding="utf-8") as f:
        json.dump(assignment, f, indent=1)
    save(stage="done", status="ok", build_s=build_s)


def _fix_shapes(ort: Any, request: dict[str, Any], options: Any) -> None:
    """Static shapes for the given inputs: each symbolic dim the model names is overridden."""
    given = {i["name"]: i["shape"] for i in request.get("inputs") or []}
    if not given:
        return
    plain = ort.InferenceSession(request["model"], providers=["CPUExecutionProvider"])
    for value in plain.get_inputs():
        shape = given.get(value.name)
        if shape is None:
            continue
        if len(shape) != len(value.shape):
            raise ValueError(f"input {value.name}: rank {len(value.shape)}, given {shape}")
        for dim, size in zip(value.shape, shape, strict=True):
            if isinstance(dim, str):
                options.add_free_dimension_override_by_name(dim, int(size))
            elif dim is not None and int(dim) != int(size):
                raise ValueError(f"input {value.name}: static dim {dim}, given {size}")
            elif dim is None:
                raise ValueError(f"input {value.name}: an unnamed dynamic dim cannot be fixed")


if __name__ == "__main__":
    sys.exit(main(build, {"status": "running", "stage": "import", "version": None, "error": None}))
