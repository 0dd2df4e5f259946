"""The user's own replacement model (contract ``replacement``), compared with the original.

Same samples, same tolerance, same profile as a catalog rewrite; outputs are paired by
position (a replacement may rename them). There is no layer-wise check: the gate does
not know which of its nodes replace which.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from npu_gate.contract.spec import Replacement
from npu_gate.graph.model_file import load_onnx
from npu_gate.model.numerics import compare_output
from npu_gate.model.worker import UserCode, WorkerFailed
from npu_gate.rewrites.verify import ORIGINAL, Check, run


@dataclasses.dataclass
class Loaded:
    model: onnx.ModelProto | None
    info: dict[str, Any]
    error: str | None = None
    log: list[str] = dataclasses.field(default_factory=list)


def load(user: UserCode, spec: Replacement) -> Loaded:
    """Load the ONNX file, or export the torch factory with the contract's inputs (built and
    exported in the child process of ``user``, ``model.worker``)."""
    if spec.onnx_path is not None:
        model, sha256 = load_onnx(spec.onnx_path, "replacement.onnx")
        return Loaded(model, {"source": "onnx", "path": spec.onnx_ref, "sha256": sha256})
    assert spec.torch is not None
    info = {"source": "torch", "factory": spec.torch.factory, "exporter": spec.torch.exporter, "sha256": None}
    log: list[str] = []
    with tempfile.TemporaryDirectory(prefix="npu-gate-replacement-") as work:
        try:
            built = user.build("replacement.torch")
            log += built.log
            error, path = built.error, None
            if error is None:
                outcome = user.export("replacement.torch", spec.torch.exporter, Path(work))
                log += outcome.log
                error, path = outcome.error, outcome.data["onnx"]
        except WorkerFailed as exc:
            error, path = str(exc), None
        if error or path is None:
            return Loaded(None, info, f"{spec.torch.exporter} export failed: {error}", log)
        model, sha256 = load_onnx(path, "exported replacement")
    info["sha256"] = sha256
    return Loaded(model, info, None, log)


def compare(
    original: onnx.ModelProto, replacement: onnx.ModelProto, samples: list[dict[str, np.ndarray]],
    atol: float, rtol: float,
) -> tuple[list[Check], list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]:
    ref_names, ref = run(original, samples)
    cand_names, cand = run(replacement, samples)
    checks = []
    for k, name in enumerate(ref_names):
        if k >= len(cand_names):
            checks.append(Check(name, "output", None, None, None, None, atol, rtol, False, len(samples),
                                "the replacement has fewer outputs"))
            continue
        c = compare_output(name, [(cand_s[k], ref_s[k]) for cand_s, ref_s in zip(cand, ref, strict=True)],
                            atol, rtol, ORIGINAL)
        problem = c.problem
        if cand_names[k] != name:
            problem = f"compared with replacement output {cand_names[k]}" + (f"; {problem}" if problem else "")
        checks.append(Check(name, "output", None, None, c.max_abs_err, c.max_rel_err, atol, rtol, c.passed,
                            c.samples, problem if problem and not c.passed else None))
    reference = [dict(zip(ref_names, r, strict=True)) for r in ref]
    candidate = [dict(zip(ref_names, c[: len(ref_names)], strict=False)) for c in cand]
    return checks, reference, candidate
