"""The ethos-u sweep: torch modules of one op each (torch_points.py), exported by the gate and
lowered by the ExecuTorch/Vela probe, around the limits of Vela's document."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import onnx

from npu_gate.calibrate.sweeps.builders import Family, Point

TORCH_POINTS = "torch_points"  # npu_gate/calibrate/torch_points.py, copied beside the models it builds
TORCH_X = [1, 16, 32, 32]


def export_torch_point(factory: str, folder: Path, out: Path) -> Path:
    """The gate's own export of ``factory`` (torch_points:NAME), importing a copy of
    torch_points.py placed in ``folder`` (a user file: see torch_points.py)."""
    from npu_gate.probe.factory import export_factory

    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{TORCH_POINTS}.py"
    if not copy.exists():
        shutil.copyfile(Path(__file__).parent.parent / f"{TORCH_POINTS}.py", copy)
    with tempfile.TemporaryDirectory(dir=folder, prefix="export-") as tmp:  # the child writes a model.onnx
        exported = export_factory(factory, {"x": TORCH_X}, folder, Path(tmp) / "model.onnx")
        out.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(onnx.load(str(exported)), str(out))  # its weights inline: one small file at ``out``
    return out


# point name -> its serialized export: a point's module and the exporter are fixed, and each export
# starts a child process with torch (seconds), so one process exports each point once
_EXPORTED: dict[str, bytes] = {}


def _torch(name: str, node: str) -> Point:
    def build() -> onnx.ModelProto:
        if name not in _EXPORTED:
            with tempfile.TemporaryDirectory(prefix="npu-gate-torch-point-") as tmp:
                out = export_torch_point(f"{TORCH_POINTS}:{name}", Path(tmp), Path(tmp) / "m.onnx")
                _EXPORTED[name] = out.read_bytes()
        return onnx.load_from_string(_EXPORTED[name])
    return Point(name.replace("_", "-"), build, node=node, factory=f"{TORCH_POINTS}:{name}")


def ethos_u() -> list[Family]:
    """Arm Ethos-U through ExecuTorch and Vela: torch modules (the probe lowers the PyTorch module),
    one op each, on both sides of the stride, padding and mode limits of Vela 5.2.0's document
    (the ethos-u55 profile). Each family's hypothesis is that document's rule, but for the bilinear
    Resize: ExecuTorch's partitioner's (the probe of the constraint net saw it rejected on U55). A
    hypothesis that is the document's rule has its id in the ethos-u55 profile, so `profile diff`
    shows where the measurement and the document disagree."""
    valid = "ONNX: padding is VALID when every pad is 0"
    return [
        Family("ethos-u-conv-stride-padding", "Conv",
               [_torch(n, "node_conv2d") for n in ("conv_k3_s1_p1", "conv_k3_s2_p1", "conv_k3_s3_p1",
                                                    "conv_k4_s4_p0", "conv_k5_s4_p2")],
               [{"id": "conv-stride-above-3-padding", "when": {"attribute": "group", "in": [1]}, "any_of": [
                   {"attribute": "strides", "each": True, "max": 3}, {"attribute": "pads", "each": True, "max": 0}],
                 "message": f"Vela 5.2.0: Stride>3 is only supported IF (dilation = 1 AND padding = VALID) ({valid})"}],
               note="CONV_2D: stride 1-4, padded and unpadded"),
        Family("ethos-u-depthwise-stride", "Conv",
               [_torch(n, "node_conv2d") for n in ("dwconv_k3_s2_p1", "dwconv_k4_s4_p0")],
               [{"id": "conv-depthwise-stride", "when": {"attribute": "group", "not_in": [1]},
                 "attribute": "strides", "each": True, "min": 1, "max": 3,
                 "message": "Vela 5.2.0: DEPTHWISE_CONV_2D Kernel stride must be in the range (1,3)."}],
               note="DEPTHWISE_CONV_2D: stride 2 and 4"),
        Family("ethos-u-maxpool-stride-padding", "MaxPool",
               [_torch(n, "node_max_pool2d") for n in ("maxpool_k2_s2_p0", "maxpool_k3_s3_p0", "maxpool_k8_s8_p0",
                                                        "maxpool_k5_s4_p2")],
               [{"id": "maxpool-stride-above-3-padding", "any_of": [
                   {"attribute": "strides", "each": True, "max": 3}, {"attribute": "pads", "each": True, "max": 0}],
                 "message": f"Vela 5.2.0: Stride>3 is only supported IF (dilation = 1 AND padding = VALID) ({valid})"}],
               note="MAX_POOL_2D: stride 2-8, padded and unpadded"),
        Family("ethos-u-convtranspose-stride", "ConvTranspose",
               [_torch(n, "node_convolution") for n in ("convtranspose_k2_s2", "convtranspose_k3_s3")],
               [{"id": "convtranspose-stride", "attribute": "strides", "in": [[1, 1], [2, 2], [1, 2], [2, 1]],
                 "message": "Vela 5.2.0: TRANSPOSE_CONV Stride values WxH must be: 1x1 OR 2x2 OR 2x1 ... OR 1x2 ..."}],
               note="TRANSPOSE_CONV: stride 2 and 3"),
        Family("ethos-u-resize-bilinear", "Resize",
               [_torch(n, "node_upsample_bilinear2d") for n in ("resize_bilinear_2x", "resize_bilinear_4x")],
               [{"id": "resize-bilinear-not-lowered", "attribute": "mode", "in": ["nearest"],
                 "message": "ExecuTorch 1.5.1's Ethos-U55 partitioner rejected a bilinear Resize (\"Op is not "
                            "supported on U55.\", docs/ethos-u.md), though Vela's TFLite table allows RESIZE_BILINEAR "
                            "at 2x"}],
               note="RESIZE_BILINEAR (align_corners=False: half_pixel) at 2x and 4x"),
        Family("ethos-u-resize-nearest", "Resize",
               [_torch(n, "node_upsample_nearest2d") for n in ("resize_nearest_2x", "resize_nearest_4x")],
               note="RESIZE_NEAREST_NEIGHBOR at 2x and 4x"),
    ]
