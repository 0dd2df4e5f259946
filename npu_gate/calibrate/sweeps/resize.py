"""Resize: modes x coordinate_transformation_mode x scales (input 2) or sizes (input 3)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from npu_gate.calibrate.sweeps.builders import Family, Point, X, i64, model, node, single


def _resize_input(side: int) -> tuple[dict[str, tuple[str, list[int]]] | None, str]:
    """x [1, 16, side, side] (None: the default x) and the point id's suffix for it."""
    return (None, "") if side == X[2] else ({"x": ("float32", [1, 16, side, side])}, f"-from-{side}x{side}")


def _resize(mode: str, ctm: str, scale: float, side: int = 32) -> Point:
    scales = np.asarray([1, 1, scale, scale], dtype=np.float32)
    inputs, suffix = _resize_input(side)
    return single(f"resize-{mode}-{ctm}-x{scale:g}{suffix}", "Resize", inputs, {"roi": np.zeros(0, np.float32),
                  "scales": scales}, ["roi", "scales"], mode=mode, coordinate_transformation_mode=ctm)


def _resize_sizes(mode: str, ctm: str, h: int, w: int, side: int = 32) -> Point:
    """x [1, 16, side, side] to [1, 16, h, w], roi and scales absent (as torch exports interpolate(size=...))."""
    inputs, suffix = _resize_input(side)
    return single(f"resize-sizes-{mode}-{ctm}-{h}x{w}{suffix}", "Resize", inputs, {"sizes": i64(1, 16, h, w)},
                  ["", "", "sizes"], mode=mode, coordinate_transformation_mode=ctm)


def _resize_sizes_from_shape(mode: str, ctm: str, h: int, w: int) -> Point:
    """Sizes folded from Concat(Slice(Shape(x), 0, 2), [h, w]): the TorchScript exporter's form."""
    def build() -> onnx.ModelProto:
        nodes = [node("Shape", ["x"], ["s"]), node("Slice", ["s", "start", "end"], ["nc"]),
                 node("Concat", ["nc", "hw"], ["sizes"], axis=0),
                 node("Resize", ["x", "", "", "sizes"], mode=mode, coordinate_transformation_mode=ctm)]
        return model(nodes, None, {"start": i64(0), "end": i64(2), "hw": i64(h, w)})
    return Point(f"resize-sizes-{mode}-{ctm}-{h}x{w}-from-shape", build)


# Linear is claimed on the NPU only at the scale factors measured there, given as scales (input 2)
# or as sizes (input 3) over the input's dims; both families carry the same hypothesis. The ratios
# are listed as measured (1/3 to float32's 7 significant digits), never widened to a class.
RESIZE_NPU_RATIOS: list[float] = [0.125, 0.25, 0.3333333, 0.5, 1, 2, 3, 4, 5, 8]
RESIZE_HYPOTHESIS: list[dict[str, Any]] = [
    {"id": "resize-mode-nearest-or-linear", "attribute": "mode", "in": ["nearest", "linear"],
     "fix": "use mode='nearest' or mode='bilinear' in F.interpolate / nn.Upsample"},
    {"id": "resize-linear-not-align-corners", "any_of": [
        {"attribute": "mode", "in": ["nearest"]},
        {"attribute": "coordinate_transformation_mode", "not_in": ["align_corners"]},
        {"input": 2, "value": {"elements": [2, 3], "each": True, "in": [1]}},
        {"input": 3, "value": {"elements": [2, 3], "ratio_to_input": 0, "each": True, "in": [1]}}],
     "message": "linear align_corners was measured on the NPU only as an identity (H and W ratio 1)",
     "fix": "use align_corners=False (or mode='nearest') in F.interpolate / nn.Upsample"},
    {"id": "resize-linear-scales-measured", "any_of": [
        {"attribute": "mode", "in": ["nearest"]},
        {"input": 2, "value": {"elements": [2, 3], "each": True, "in": RESIZE_NPU_RATIOS}},
        {"input": 3, "value": {"elements": [2, 3], "ratio_to_input": 0, "each": True, "in": RESIZE_NPU_RATIOS}}],
     "message": "linear was measured on the NPU at H and W ratios 1/8, 1/4, 1/3, 1/2, 1, 2, 3, 4, 5 and 8, on CPU at "
                "1.5, 1.25 and 0.625; other ratios, integer ones (6, 7, 16...) and their reciprocals too, were not "
                "measured and are not claimed",
     "fix": "use scale_factor 2, 3, 4, 5 or 8 (or 1/2, 1/3, 1/4, 1/8) in F.interpolate, or mode='nearest'"}]


def resize_families() -> list[Family]:
    ctms = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
    scales = (2.0, 0.5, 3.0, 1.5)
    points = [_resize(m, c, s) for m in ("nearest", "linear") for c in ctms for s in scales]
    points += [_resize("cubic", "half_pixel", 2.0), _resize("cubic", "asymmetric", 0.5)]
    # the ratios networks use beyond 2 and 3 (segmentation heads and FPNs upsample by 4 and 8), identity,
    # and x1.25 (not a ratio measured on the NPU); 1/3 on a 48x48 input so that every output dim is whole
    points += [_resize("linear", "half_pixel", s) for s in (4.0, 0.25, 8.0, 0.125, 5.0, 1.0, 1.25)]
    points += [_resize("linear", "half_pixel", 1 / 3, side=48), _resize("linear", "pytorch_half_pixel", 4.0)]
    points += [_resize("linear", "asymmetric", s) for s in (4.0, 0.25, 8.0, 1.25)]
    points += [_resize("linear", "align_corners", 1.0)]
    points += [_resize("nearest", "asymmetric", s) for s in (4.0, 0.25)]
    ratios = ((64, 64), (16, 16), (96, 96), (48, 48), (20, 20))  # x2, x0.5, x3, x1.5, x0.625
    sizes = [_resize_sizes("nearest", "asymmetric", h, w) for h, w in ratios]
    sizes += [_resize_sizes("nearest", c, 48, 48) for c in ("half_pixel", "align_corners", "pytorch_half_pixel")]
    sizes += [_resize_sizes("nearest", "asymmetric", 64, 20)]
    sizes += [_resize_sizes("linear", "half_pixel", h, w) for h, w in ratios]
    sizes += [_resize_sizes("linear", "pytorch_half_pixel", h, w) for h, w in ((64, 64), (16, 16), (48, 48), (20, 20))]
    sizes += [_resize_sizes("linear", c, h, w) for c, h, w in (("asymmetric", 64, 64), ("asymmetric", 48, 48),
                                                               ("align_corners", 64, 64), ("align_corners", 16, 16))]
    sizes += [_resize_sizes("linear", "half_pixel", h, w) for h, w in ((64, 16), (16, 96), (64, 48), (48, 64))]
    sizes += [_resize_sizes_from_shape("linear", "half_pixel", 64, 64)]
    # x4, x0.25, x8, x0.125, x5, identity, x1.25 and 1/3 (48 -> 16), as in the scales family
    wider = ((128, 128), (8, 8), (256, 256), (4, 4), (160, 160), (32, 32), (40, 40))
    sizes += [_resize_sizes("linear", "half_pixel", h, w) for h, w in wider]
    sizes += [_resize_sizes("linear", "half_pixel", 16, 16, side=48), _resize_sizes("linear", "half_pixel", 128, 64)]
    sizes += [_resize_sizes("linear", "asymmetric", h, w) for h, w in ((128, 128), (256, 256))]
    sizes += [_resize_sizes("linear", "pytorch_half_pixel", 8, 8), _resize_sizes("linear", "align_corners", 32, 32)]
    sizes += [_resize_sizes("nearest", "asymmetric", h, w) for h, w in ((128, 128), (256, 256), (8, 8))]
    return [Family("resize-mode-coordinates-scales", "Resize", points, RESIZE_HYPOTHESIS,
                   note="modes x coordinate_transformation_mode x scales 2, 0.5, 3, 1.5 (input 2's values on H "
                        "and W); linear and a few nearest at 4, 0.25, 8, 0.125, 1/3, 5, 1 and 1.25; cubic crashes "
                        "the toolkit. Linear is claimed only at the scales measured on the NPU"),
            Family("resize-sizes", "Resize", sizes, RESIZE_HYPOTHESIS,
                   note="sizes (input 3; roi and scales absent) at H/W ratios 2, 0.5, 3, 1.5, 0.625, 4, 0.25, 8, "
                        "0.125, 1/3, 5, 1, 1.25 and unequal ones, nearest and linear x "
                        "coordinate_transformation_mode; one sizes vector folded from Shape -> Slice -> Concat. "
                        "Linear is claimed only at the ratios measured on the NPU")]
