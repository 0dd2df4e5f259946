"""Lower a PyTorch module for Arm Ethos-U with ExecuTorch's Arm backend and Vela. Runs in the
compiler's own venv (torch, executorch, ethos-u-vela, tosa-tools), as a child process.

Usage: python -u ethos_u_driver.py REQUEST.json RESPONSE.json

Request: ``factory`` (``module:function``), ``kwargs`` (its keyword arguments), ``folders`` (put
first on sys.path, in order; ``folder``: one), ``target`` (``ethos-u55-128`` ...), ``inputs``
([{name, shape, range}]), ``seed``, ``samples_file`` (an ``.npz`` of calibration rows, array
``s{k}i{j}`` the j-th input of row k, read with ``allow_pickle=False``) or else ``calibration``
(how many seeded random samples in each input's range) and ``legacy_core`` (pass Vela
``--debug-force-legacy-core``). Arm's flow: ``torch.export``, ``EthosUQuantizer`` (symmetric,
per-channel), ``EthosUPartitioner``, lowering, with Vela run inside the lowering. The partitioner
logs its rejected-node table (logger ``executorch.backends.arm.tosa.partitioner`` at INFO) and
Vela prints its summary and writes its per-layer CSV into ``vela/`` in the working folder.

Standalone on purpose (the venv has no npu_gate).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from typing import Any

from _protocol import Save, main

VELA_DIR = "vela"  # under the working folder: ExecuTorch's intermediate artefacts, Vela's output among them


def build(request: dict[str, Any], save: Save) -> None:
    start = time.perf_counter()
    from importlib import metadata

    import torch
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    save(stage="config", version=metadata.version("ethos-u-vela"), executorch=metadata.version("executorch"),
         torch=metadata.version("torch"), import_s=time.perf_counter() - start)
    flags = ["--verbose-performance"] + (["--debug-force-legacy-core"] if request.get("legacy_core") else [])
    spec = EthosUCompileSpec(target=request["target"], extra_flags=flags)
    out_dir = os.path.abspath(VELA_DIR)
    os.makedirs(out_dir, exist_ok=True)
    spec.dump_intermediate_artifacts_to(out_dir)
    save(stage="load")
    folders = request.get("folders") or [request.get("folder") or "."]
    torch.manual_seed(int(request.get("seed", 0)))
    module = _factory(request["factory"], folders, request.get("kwargs") or {})
    generator = torch.Generator().manual_seed(int(request.get("seed", 0)))
    inputs = request["inputs"]
    if request.get("samples_file"):
        samples = _file_samples(torch, request["samples_file"], len(inputs))
    else:
        samples = [_sample(torch, inputs, generator) for _ in range(max(1, int(request.get("calibration", 4))))]
    save(stage="export", calibration_rows=len(samples))
    logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("executorch.backends.arm.tosa.partitioner").setLevel(logging.INFO)
    t0 = time.perf_counter()
    graph = torch.export.export(module, samples[0]).module(check_guards=False)
    save(stage="quantize")
    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    prepared = prepare_pt2e(graph, quantizer)
    for sample in samples:
        prepared(*sample)
    quantized = convert_pt2e(prepared)
    save(stage="lower")
    program = torch.export.export(quantized, samples[0])
    print("npu-gate: lowering", flush=True)
    try:
        lowered = to_edge_transform_and_lower(program, partitioner=[EthosUPartitioner(spec)])
    except SystemExit as exc:  # Vela's argument parser exits on options it refuses: a failed build, said so
        raise RuntimeError(f"Vela exited with status {exc.code} (its message is in the log)") from None
    save(stage="done", status="ok", build_s=time.perf_counter() - t0, vela_dir=out_dir,
         placement=placement(lowered.exported_program().graph_module))


# Ops the quantizer and the lowering add around the user's ops: not a placement of theirs.
_PLUMBING = ("quantize_per", "dequantize_per", "getitem", "executorch_call_delegate")


def placement(graph_module: Any) -> list[dict[str, Any]]:
    """Every compute node of the lowered program: inside a delegate (on the NPU) or not (on the
    CPU), with the metadata that ties it to the user's code (module path, stack trace)."""
    found = []
    for node in graph_module.graph.nodes:
        if node.op == "call_function" and "executorch_call_delegate" in str(node.target):
            lowered = getattr(graph_module, node.args[0].target)
            found += [_node(n, "npu") for n in lowered.original_module.graph_module.graph.nodes
                      if n.op == "call_function" and not _plumbing(n)]
        elif node.op == "call_function" and not _plumbing(node):
            found.append(_node(node, "cpu"))
    return found


def _plumbing(node: Any) -> bool:
    return any(p in str(node.target) for p in _PLUMBING)


def _node(node: Any, device: str) -> dict[str, Any]:
    stack = node.meta.get("nn_module_stack") or {}
    module_path = list(stack.values())[-1][0] if stack else ""
    torch_fn = node.meta.get("torch_fn")
    return {"name": node.name, "target": str(node.target), "device": device, "module_path": module_path,
            "torch_fn": list(torch_fn) if torch_fn else None, "stack_trace": node.meta.get("stack_trace") or ""}


def _factory(spec: str, folders: list[str], kwargs: dict[str, Any]) -> Any:
    module_name, _, attr = spec.partition(":")
    sys.path[:0] = [os.path.abspath(f) for f in folders]
    made = getattr(importlib.import_module(module_name), attr)(**kwargs)
    return made.eval()


def _file_samples(torch: Any, path: str, count: int) -> list[tuple[Any, ...]]:
    """The calibration rows the gate wrote (the contract's quantization samples)."""
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        rows = sorted({int(k[1:].split("i")[0]) for k in data.files})
        return [tuple(torch.from_numpy(np.array(data[f"s{k}i{j}"])) for j in range(count)) for k in rows]


def _sample(torch: Any, inputs: list[dict[str, Any]], generator: Any) -> tuple[Any, ...]:
    out = []
    for spec in inputs:
        lo, hi = spec.get("range") or (0.0, 1.0)
        out.append(torch.rand(spec["shape"], generator=generator) * (hi - lo) + lo)
    return tuple(out)


if __name__ == "__main__":
    sys.exit(main(build, {"status": "running", "stage": "import", "version": None, "error": None}))
