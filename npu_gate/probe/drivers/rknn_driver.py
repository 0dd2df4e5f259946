"""Build ONNX models with RKNN-Toolkit2. Runs in the toolkit's own venv, as a child process.

Usage: python -u rknn_driver.py REQUEST.json RESPONSE.json   (one model)
       python -u rknn_driver.py --batch FD                    (many models, see _protocol.py)

Standalone on purpose (the toolkit's venv has no npu_gate). Everything the toolkit prints,
Python and C alike, goes to this process's stdout/stderr, which the parent redirected to a
log file. RESPONSE.json is rewritten before each stage, so a crash still says where it died.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from _protocol import Save, error_line, main


def build(request: dict[str, Any], save: Save) -> None:
    start = time.perf_counter()
    from importlib import metadata

    from rknn.api import RKNN

    save(stage="config", version=metadata.version("rknn-toolkit2"), import_s=time.perf_counter() - start)
    rknn = RKNN(verbose=True)
    try:
        config = {"target_platform": request["target"]}
        if request.get("disable_rules"):
            config["disable_rules"] = list(request["disable_rules"])
        _call(rknn.config, **config)
        save(stage="load")
        load = {"model": request["model"]}
        if request.get("inputs"):
            load["inputs"] = [i["name"] for i in request["inputs"]]
            load["input_size_list"] = [list(i["shape"]) for i in request["inputs"]]
        _call(rknn.load_onnx, **load)
        save(stage="build")
        quant = request.get("quantization") or {}
        t0 = time.perf_counter()
        if quant.get("mode") == "int8":
            _call(rknn.build, do_quantization=True, dataset=quant["dataset"])
        else:
            _call(rknn.build, do_quantization=False)
        build_s = time.perf_counter() - t0
        if quant.get("holdout"):
            save(stage="accuracy", build_s=build_s)
            _accuracy(rknn, quant["holdout"], save)
        save(stage="done", status="ok", build_s=build_s)
    finally:
        rknn.release()


def _accuracy(rknn: Any, holdout: list[list[str]], save: Save) -> None:
    """The toolkit's accuracy_analysis (its simulator, no board) on each hold-out sample, into
    ``accuracy-K/`` of the work folder; a failure here is recorded, the build still stands."""
    t0 = time.perf_counter()
    try:
        for k, paths in enumerate(holdout):
            _call(rknn.accuracy_analysis, inputs=list(paths), output_dir=os.path.abspath(f"accuracy-{k}"))
    except Exception as exc:  # the build is measured; only its accuracy is missing
        save(accuracy_error=error_line(exc))
    save(accuracy_s=time.perf_counter() - t0)


def _call(fn: Callable[..., Any], **kwargs: Any) -> None:
    ret = fn(**kwargs)
    if ret not in (0, None):
        raise RuntimeError(f"{fn.__name__} returned {ret}")


if __name__ == "__main__":
    sys.exit(main(build, {"status": "running", "stage": "import", "version": None, "error": None}))
