"""Run inside the RKNN-Toolkit2 venv (not npu_gate's): build MODEL.onnx in float16 for rk3588, run
the toolkit's simulator (``init_runtime()`` without a target: no board) and onnxruntime CPU on one
seeded input in [-1, 1], print one JSON line comparing them.

    VENV/bin/python tests/helpers/rknn_simulate.py MODEL.onnx

``ratio``: the median of simulator / onnxruntime over the elements where |onnxruntime| > 0.01;
``relative_l2``: ||simulator - onnxruntime|| / ||onnxruntime||.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import onnxruntime
from rknn.api import RKNN


def main(path: str) -> None:
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = session.get_inputs()[0]
    x = np.random.default_rng(0).uniform(-1, 1, feed.shape).astype(np.float32)
    reference = session.run(None, {feed.name: x})[0]
    rknn = RKNN(verbose=False)
    rknn.config(target_platform="rk3588")
    for step, code in (("load_onnx", lambda: rknn.load_onnx(model=path)),
                       ("build", lambda: rknn.build(do_quantization=False)), ("init_runtime", rknn.init_runtime)):
        if code() != 0:
            raise SystemExit(f"{step} failed")
    simulated = np.asarray(rknn.inference(inputs=[x], data_format="nchw")[0]).reshape(reference.shape)
    rknn.release()
    mask = np.abs(reference) > 1e-2
    print(json.dumps({"ratio": float(np.median(simulated[mask] / reference[mask])),
                      "relative_l2": float(np.linalg.norm(simulated - reference) / np.linalg.norm(reference))}))


if __name__ == "__main__":
    main(sys.argv[1])
