"""Write the three variants checked in next to this file (TorchScript exporter, opset 17):

- ``static.onnx``: input [1, 3, 16, 16], nearest interpolation;
- ``dynamic-batch.onnx``: the same with a dynamic batch dim (``dynamic_axes``);
- ``bilinear.onnx``: static, bilinear instead of nearest interpolation.

Run ``python export_variants.py`` here, then ``make-diffs.sh`` regenerates ``diffs/``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from net import build_model

HERE = Path(__file__).resolve().parent


def export(mode: str, path: Path, dynamic_batch: bool) -> None:
    torch.manual_seed(0)
    model = build_model(mode).eval()
    dynamic = {"images": {0: "batch"}, "logits": {0: "batch"}} if dynamic_batch else None
    with torch.no_grad():
        torch.onnx.export(
            model,
            (torch.zeros(1, 3, 16, 16),),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=["images"],
            output_names=["logits"],
            dynamic_axes=dynamic,
        )


if __name__ == "__main__":
    export("nearest", HERE / "static.onnx", dynamic_batch=False)
    export("nearest", HERE / "dynamic-batch.onnx", dynamic_batch=True)
    export("bilinear", HERE / "bilinear.onnx", dynamic_batch=False)
