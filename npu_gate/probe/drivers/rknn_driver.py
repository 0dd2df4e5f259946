"""Build one ONNX model with RKNN-Toolkit2. Runs in the toolkit's own venv, as a child process.

Usage: python -u rknn_driver.py REQUEST.json RESPONSE.json

Standalone on purpose (the toolkit's venv has no npu_gate). Everything the toolkit prints,
Python and C alike, goes to this process's stdout/stderr, which the parent redirected to a
log file. RESPONSE.json is rewritten before each stage, so a crash still says where it died.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    request_path, response_path = sys.argv[1], sys.argv[2]
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    response: dict = {"status": "running", "stage": "import", "version": None, "error": None}

    def save(**changes: object) -> None:
        response.update(changes)
        sys.stdout.flush()
        sys.stderr.flush()
        with open(response_path, "w", encoding="utf-8") as f:
            json.dump(response, f)

    save()
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
        t0 = time.perf_counter()
        _call(rknn.build, do_quantization=False)
        save(stage="done", status="ok", build_s=time.perf_counter() - t0)
    except Exception as exc:  # the toolkit raises (or returns non-zero) on models it rejects
        save(status="failed", error=f"{response['stage']}: {_last_line(exc)}")
    finally:
        rknn.release()
    return 0


def _call(fn, **kwargs) -> None:
    ret = fn(**kwargs)
    if ret not in (0, None):
        raise RuntimeError(f"{fn.__name__} returned {ret}")


def _last_line(exc: BaseException) -> str:
    """The toolkit wraps its tracebacks into the message; the last line is the actual error."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
