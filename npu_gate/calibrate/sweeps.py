"""Calibration sweeps: families of small models, each probing one op, pattern or adapter rule.

A sweep is data. A ``Family`` is a set of points (models) built to sit on both sides of a
boundary chosen on purpose (a dim around 8192, channel counts around multiples of 8, pads x
count_include_pad, Resize modes x coordinate modes x scales...). Its ``constraints`` are the
hypothesis, written in the profile-constraint vocabulary (npu_gate/profile/constraints.py); infer.py
keeps them only when they predict every point. Kinds:

- ``op``: where the compiler ran node ``Point.node`` (default: the node named after the op);
- ``pattern``: whether the compiler fused the point's pattern nodes (every node but the
  context ones) into one op, against whether the candidate pattern rule ``pattern`` matches;
- ``adapter``: the rank adapters the compiler added at the graph inputs and outputs, against
  what the candidate ``rank_adapters`` rule predicts;
- ``eliminate``: whether the compiler kept an op of its own for node ``Point.node``, against
  whether the family's ``rule`` (an ``eliminates`` entry: op and condition) eliminates it; the
  points include near misses, where the condition does not hold;
- ``lower``: whether the compiler ran node ``Point.node`` on the NPU as the op the family's
  ``rule`` (a ``lowers`` entry) names;
- ``split``: whether the compiler ran node ``Point.node`` as ops on several devices (``pieces``),
  against whether the family's ``rule`` (a ``splits`` entry) splits it; a family without a rule
  only records (the Transpose alone).

Unless a point says otherwise its input is x: float32 [1, 16, 32, 32] and the models use
opset 17, which RKNN-Toolkit2 accepts (it refuses opsets above 19).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

if TYPE_CHECKING:
    from npu_gate.probe.base import QuantRequest

OP, PATTERN, ADAPTER, ELIMINATE, LOWER, SPLIT = "op", "pattern", "adapter", "eliminate", "lower", "split"
X = [1, 16, 32, 32]
_DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "int8": TensorProto.INT8,
           "int32": TensorProto.INT32, "int64": TensorProto.INT64, "bool": TensorProto.BOOL}
CONTEXT = ("before", "after", "conv")  # node names that are context, not the thing a point measures


@dataclass(frozen=True)
class Point:
    id: str
    build: Callable[[], onnx.ModelProto]
    node: str | None = None  # the measured node (op families); None: the op's name in lower case
    factory: str | None = None  # a torch point: ``torch_points:NAME`` (build() exports it), for Ethos-U
    # a quantized build (#21): the compiler builds the float model with its own quantization
    # (``probe --quantize``), and npu_gate places the model's QDQ form (onnxruntime's quantize_static)
    quantize: str | None = None


CALIBRATION_SAMPLES = 4  # rows a quantized point is calibrated on (seeded, drawn from [0, 1])


def quant_request(model: Path, mode: str) -> QuantRequest:
    """A quantized point's build request: a few seeded calibration rows, no hold-out (its accuracy
    is not what calibration measures)."""
    from npu_gate.model.samples import make_samples
    from npu_gate.probe.base import QuantRequest
    from npu_gate.quantize.samples import model_input_specs

    return QuantRequest(mode, make_samples(model_input_specs(model, {}), CALIBRATION_SAMPLES, 0), [])


def quantized(point: Point, mode: str = "int8") -> Point:
    """``point`` built quantized: its id gains ``-quantized-MODE``."""
    return Point(f"{point.id}-quantized-{mode}", point.build, point.node, quantize=mode)


@dataclass(frozen=True)
class Family:
    id: str
    op: str  # the ONNX op (op families), the fused op (pattern), the adapter op (adapter)
    points: list[Point]
    constraints: list[dict[str, Any]] = field(default_factory=list)  # the hypothesis
    kind: str = OP
    pattern: str | None = None  # pattern families: the candidate pattern rule's name
    note: str | None = None  # what the sweep varies, or why the vocabulary cannot say more
    rule: dict[str, Any] | None = None  # eliminate / lower / split families: the candidate entry (no evidence)

    def node_of(self, point: Point) -> str:
        return point.node or self.op.lower()


def model(nodes: Sequence[onnx.NodeProto], inputs: dict[str, tuple[str, list[int]]] | None = None,
          inits: dict[str, Any] | None = None, outputs: Sequence[str] = ("y",), opset: int = 17) -> onnx.ModelProto:
    """A model of ``nodes``: graph inputs name -> (dtype, shape), initializers from numpy values;
    output types and shapes come from ONNX shape inference."""
    inputs = inputs if inputs is not None else {"x": ("float32", X)}
    graph = helper.make_graph(
        list(nodes), "calibrate",
        [helper.make_tensor_value_info(n, _DTYPES[t], s) for n, (t, s) in inputs.items()],
        [onnx.ValueInfoProto(name=o) for o in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="npu_gate.calibrate")
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    for out in m.graph.output:
        if not out.type.tensor_type.HasField("shape"):  # not inferred (MeanVarianceNormalization): x's type
            out.type.CopyFrom(m.graph.input[0].type)
    outputs_ = {o.name for o in m.graph.output}
    kept = [v for v in m.graph.value_info if v.name not in outputs_]
    del m.graph.value_info[:]
    m.graph.value_info.extend(kept)
    return m


def node(op: str, inputs: Sequence[str], outputs: Sequence[str] = ("y",), name: str | None = None,
         **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, list(inputs), list(outputs), name=name or op.lower(), **attrs)


def f32(*shape: int, value: float | None = None, seed: int = 0) -> np.ndarray:
    if value is not None:
        return np.full(shape, value, dtype=np.float32)
    return np.random.default_rng(seed).uniform(0.1, 1.0, shape).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def single(pid: str, op: str, inputs: dict[str, tuple[str, list[int]]] | None = None,
           inits: dict[str, Any] | None = None, extra: Sequence[str] = (), opset: int = 17,
           outs: Sequence[str] = ("y",), **attrs: Any) -> Point:
    """One op reading x (and ``extra`` inputs or initializers), writing ``outs``."""
    names = ["x", *extra]
    return Point(pid, lambda: model([node(op, names, outs, **attrs)], inputs, inits, outs, opset=opset))


def between(pid: str, op: str, shape: list[int], inits: dict[str, Any] | None = None, extra: Sequence[str] = (),
            **attrs: Any) -> Point:
    """Relu -> op -> Relu: RKNN-Toolkit2 folds some ops at a graph input or output into the
    input/output operator (Transpose, Reshape), so the swept op sits between two others."""
    def build() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"), node(op, ["a", *extra], ["t"], **attrs),
                      node("Relu", ["t"], ["y"], name="after")], {"x": ("float32", shape)}, inits)
    return Point(pid, build)


def _dims(shape: list[int]) -> str:
    return "x".join(map(str, shape))


# --- op families --------------------------------------------------------------------------

def _conv(pid: str, cin: int = 16, cout: int = 16, k: int = 3, stride: int = 1, dilation: int = 1,
          group: int = 1) -> Point:
    pad = dilation * (k - 1) // 2
    return single(pid, "Conv", {"x": ("float32", [1, cin, 32, 32])},
                  {"w": f32(cout, cin // group, k, k), "b": f32(cout)}, ["w", "b"], kernel_shape=[k, k],
                  strides=[stride, stride], dilations=[dilation, dilation], group=group, pads=[pad] * 4)


def conv_families() -> list[Family]:
    kernels = [_conv(f"conv-k{k}", k=k) for k in (1, 2, 3, 5, 7, 11)]
    strides = [_conv(f"conv-k3-s{s}", stride=s) for s in (2, 3, 4)]
    dilations = [_conv(f"conv-k3-d{d}", dilation=d) for d in (2, 3)]
    groups = [_conv("conv-depthwise-16", group=16), _conv("conv-groups-2", group=2),
              _conv("conv-groups-4", group=4), _conv("conv-groups-8", group=8),
              _conv("conv-depthwise-k5-s2", k=5, stride=2, group=16)]
    channels = [_conv(f"conv-cin{c}-cout{c}", cin=c, cout=c) for c in (3, 7, 8, 9, 15, 17, 24, 33)]
    return [Family("conv-kernel-stride-dilation", "Conv", kernels + strides + dilations,
                   note="kernel 1-11, stride 1-4, dilation 1-3, 16 -> 16 channels"),
            Family("conv-groups", "Conv", groups, note="depthwise and grouped convolutions"),
            Family("conv-channels", "Conv", channels, note="channel counts around multiples of 8")]


def _convtranspose(k: int, s: int) -> Point:
    return single(f"convtranspose-k{k}-s{s}", "ConvTranspose", None, {"w": f32(16, 8, k, k)}, ["w"],
                  kernel_shape=[k, k], strides=[s, s])


def convtranspose_family() -> Family:
    shapes = ((2, 2), (4, 2), (3, 1), (3, 2), (3, 3), (2, 3), (5, 3), (6, 3), (4, 4), (3, 4), (5, 5), (6, 6), (8, 8))
    return Family("convtranspose-kernels-strides", "ConvTranspose", [_convtranspose(k, s) for k, s in shapes],
                  [{"id": "convtranspose-stride-power-of-two", "attribute": "strides", "each": True,
                    "in": [1, 2, 4, 8],
                    "fix": "use stride 1, 2, 4 or 8 in nn.ConvTranspose2d "
                           "(or upsample with nn.Upsample, then a Conv2d)"}],
                  note="kernel x stride; other strides split into a CPU zero-insertion op and an NPU Conv")


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


def _pool(op: str, k: int, pad: int, include: int | None = None, stride: int = 1) -> Point:
    attrs: dict[str, Any] = {"kernel_shape": [k, k], "pads": [pad] * 4, "strides": [stride, stride]}
    if include is not None:
        attrs["count_include_pad"] = include
    suffix = f"-include{include}" if include is not None else ""
    return single(f"{op.lower()}-k{k}-s{stride}-pad{pad}{suffix}", op, **attrs)


def pool_families() -> list[Family]:
    avg = [_pool("AveragePool", k, p, c, s) for k, p, c, s in
           ((3, 1, 0, 1), (3, 1, 1, 1), (3, 0, 0, 1), (3, 0, 1, 1), (2, 0, 0, 2), (3, 1, 0, 2), (3, 1, 1, 2),
            (5, 2, 0, 1), (5, 2, 1, 1))]
    mx = [_pool("MaxPool", k, p, None, s) for k, p, s in ((2, 0, 2), (3, 1, 1), (3, 1, 2), (5, 2, 1), (3, 0, 1))]
    return [Family("averagepool-pads-count-include-pad", "AveragePool", avg,
                   [{"id": "averagepool-pads-count-include-pad", "any_of": [
                       {"attribute": "count_include_pad", "in": [1]}, {"attribute": "pads", "each": True, "max": 0}],
                   "fix": "use count_include_pad=True (the default) or padding=0 in nn.AvgPool2d"}],
                   note="kernel x stride x pads x count_include_pad"),
            Family("maxpool-kernel-stride-pads", "MaxPool", mx)]


def _reshape(c: int) -> Point:
    return between(f"reshape-1x{c}x1x1-to-1x{c}", "Reshape", [1, c, 1, 1], {"shape": i64(1, c)}, ["shape"])


def _reshape_to(shape: list[int], to: list[int]) -> Point:
    return between(f"reshape-{_dims(shape)}-to-{_dims(to)}", "Reshape", shape, {"shape": i64(*to)}, ["shape"])


def shuffle_point(w: int, measured: str) -> Point:
    """shufflenet's channel shuffle, Relu -> Reshape [1,16,w,w] -> [1,2,8,w,w] -> Transpose [0,2,1,3,4] ->
    Reshape back -> Relu: ``measured`` is the Reshape measured, "reshape" (to 5-D) or "reshape_back" (to 4-D)."""
    def build() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"), node("Reshape", ["a", "to5"], ["r"]),
                      node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3, 4]),
                      node("Reshape", ["t", "to4"], ["b"], name="reshape_back"),
                      node("Relu", ["b"], ["y"], name="after")], {"x": ("float32", [1, 16, w, w])},
                     {"to5": i64(1, 2, 8, w, w), "to4": i64(1, 16, w, w)})
    return Point(f"reshape-shuffle-1x16x{w}x{w}-{measured.replace('_', '-')}", build, node=measured)


# The hypothesis of every Reshape family (three constraints, each written once), measured with RKNN-Toolkit2 2.5.0
# (rk3588, fp16) on the points below and shown by no simpler one. With P the product of the input's last two dims
# (H x W of the 4-D inputs measured), a Reshape ran on the NPU exactly where
# - the output is not 4-D: P is a multiple of 8, or P is 1 and input dim 1 (C of [1,C,1,1]) is a multiple of 8;
# - the output is 4-D: P is a multiple of 8, or the output keeps the input's last dim, or it keeps input dim 1
#   and that dim is a multiple of 8.
# What it is not: the output's last dim (a multiple of 8 at [1,16,6,6] -> [1,576] and [1,1,1,576], CPU; 4 at
# [1,16,8,8] -> [1,256,4], NPU), its size (676 and 1024 NPU), or whether the batch dim moves ([16,1,1,64] NPU,
# [16,1,1,100] CPU). The three Reshapes of issue 20's real models (nudenet (1,82,10,10) -> (82,1,1,100), ddddocr
# common_det's (1,6,26,26) -> (1,6,1,676) and (1,6,13,13) -> (1,6,1,169)) are points here. The channel-shuffle
# triplet's Reshapes are folded by the compiler: the profile's `eliminates` Reshape around-transpose says so (infer.py
# leaves a point its derived clean-up eliminates, and the compiler folded, out of the op's test). Inputs of
# other ranks were not measured: each constraint passes them (the vendor's claim stands there).
# the output-rank alternatives come last: a finding is worded by the first of the closest (closeness)
_OUT_RANK4 = {"output": 0, "rank": {"min": 4, "max": 4}}
_PLANE_8 = {"input": 0, "dim": {"axes": [-2, -1], "multiple_of": 8}}
# measured from 4-D inputs (and 5-D ones to 4-D): other input ranks pass, the vendor's claim for them stands
_IN_NOT_4D: list[dict[str, Any]] = [{"input": 0, "rank": {"max": 3}}, {"input": 0, "rank": {"min": 5}}]
RESHAPE_HYPOTHESIS: list[dict[str, Any]] = [
    {"id": "reshape-input-plane-multiple-of-8",
     "any_of": [_PLANE_8, {"input": 0, "dim": {"axes": [-2, -1], "max": 1}}, _OUT_RANK4, *_IN_NOT_4D],
     "message": "from a 4-D input to an output rank other than 4, the NPU ran it only where the input's last two "
                "dims multiply to a multiple of 8 or to 1; measured to ranks 1, 2, 3 and 5, other input ranks were not "
                "measured and pass",
     "fix": "keep H x W a multiple of 8 before flattening it (pad or crop the feature map), or reshape to 4-D"},
    {"id": "reshape-unit-plane-channels-multiple-of-8",
     "any_of": [_PLANE_8, {"input": 0, "dim": {"axis": 1, "multiple_of": 8}}, _OUT_RANK4, *_IN_NOT_4D],
     "message": "from [1,C,1,1] to an output rank other than 4, the NPU ran it only where C is a multiple of 8; "
                "other input ranks were not measured and pass",
     "fix": "use a channel count that is a multiple of 8 before the flatten"},
    {"id": "reshape-rank4-keeps-last-dim-or-channels",
     "any_of": [_PLANE_8, {"output": 0, "dim": {"axis": -1, "in": [{"ref": {"input": 0, "axis": -1}}]}},
                {"output": 0, "dim": {"axis": 1, "multiple_of": 8, "in": [{"ref": {"input": 0, "axis": 1}}]}},
                {"output": 0, "same_non_unit_dims_as": {"input": 0}},
                {"output": 0, "rank": {"max": 3}}, {"output": 0, "rank": {"min": 5}}, _IN_NOT_4D[0]],
     "message": "to a 4-D output, the NPU ran it only where the input's last two dims multiply to a multiple of 8, "
                "the output keeps the input's last dim, it keeps input dim 1 and that is a multiple of 8, or it "
                "only moves dims of size 1 (the compiler runs that as a Transpose) (measured with 4-D and 5-D "
                "inputs, batch 1 or moved; inputs of rank 3 or less were not measured and pass)",
     "fix": "flatten H x W only when it is a multiple of 8, keep the last dim, keep a channel count that is a "
            "multiple of 8 in dim 1, or move only dims of size 1 (x.permute or x.transpose where a dim is 1)"},
    # issue 20 (timm mobilevit's patch unfold, x.reshape(B * C * nh, ph, nw, pw)): moving work into the batch dim
    {"id": "reshape-batch-moved-output-plane-multiple-of-8",
     "any_of": [{"output": 0, "dim": {"axis": 0, "max": 1}}, {"input": 0, "dim": {"axis": 0, "min": 2}},
                {"output": 0, "dim": {"axes": [-2, -1], "multiple_of": 8}},
                {"output": 0, "dim": {"axis": -1, "in": [{"ref": {"input": 0, "axis": -1}}]}},
                {"output": 0, "same_non_unit_dims_as": {"input": 0}},
                {"output": 0, "rank": {"max": 3}}, {"output": 0, "rank": {"min": 5}}, *_IN_NOT_4D],
     "message": "from a batch-1 4-D input to a 4-D output whose dim 0 is above 1 (work moved into the batch dim, as "
                "a patch unfold does), the NPU ran it only where the output's last two dims multiply to a multiple "
                "of 8 or the output keeps the input's last dim (measured with batch-1 inputs; other input batches "
                "and ranks pass)",
     "fix": "unfold patches so that each one's last two dims (nw x pw of x.reshape(B*C*nh, ph, nw, pw)) multiply to "
            "a multiple of 8 (a feature map of width 8, 16, 32 for 2x2 patches), or keep the batch dim at 1"}]


def reshape_families(plane: bool = True) -> list[Family]:
    """The Reshape sweep; ``plane=False``: without issue 20's four families (``reshape-input-plane``,
    ``reshape-to-rank4``, ``reshape-unit-dims``, ``reshape-batch-moved``), the 31 points of the
    ``standard`` sweep, which qnn-htp-fp16's record was measured with (``standard-int8``, the RKNN
    sweep, has all 95)."""
    rank2 = [_reshape(c) for c in (7, 8, 9, 12, 15, 16, 17, 24, 32, 33)]
    rank2 += [_reshape_to([1, 16, 6, 6], [1, 576]), _reshape_to([1, 12, 5, 5], [1, 300]),
              _reshape_to([1, 16, 6, 6], [16, 36])]
    to5 = [_reshape_to([1, 16, w, w], [1, 2, 8, w, w]) for w in (2, 4, 8, 16)]
    to4 = [_reshape_to([1, 2, 8, w, w], [1, 16, w, w]) for w in (2, 4, 8, 16)]
    shuffle = [shuffle_point(w, m) for w in (2, 4) for m in ("reshape", "reshape_back")]
    rank34 = [_reshape_to([1, 16, 8, 8], [1, 16, 64]), _reshape_to([1, 12, 5, 5], [1, 12, 25]),
              _reshape_to([1, 16, 6, 6], [1, 16, 36]), _reshape_to([1, 16, 8, 8], [1, 8, 2, 64]),
              _reshape_to([1, 16, 6, 6], [1, 16, 3, 12]), _reshape_to([1, 16, 6, 6], [1, 8, 12, 6])]
    # issue 20: the input's H x W (a multiple of 8, 1, or neither) against the output's last dim, to ranks 1, 2, 3, 5
    flattens = [_reshape_to(a, b) for a, b in (
        ([1, 8, 8, 8], [1, 512]), ([1, 16, 2, 2], [1, 64]), ([1, 16, 2, 4], [1, 128]), ([1, 16, 4, 2], [1, 128]),
        ([1, 16, 4, 6], [1, 384]), ([1, 16, 3, 4], [1, 192]), ([1, 24, 6, 6], [1, 864]), ([1, 1, 1, 576], [1, 576]),
        ([1, 1, 1, 36], [1, 36]), ([1, 16, 1, 1], [4, 4]), ([1, 16, 1, 1], [1, 4, 4]), ([1, 16, 4, 6], [1, 16, 24]),
        ([1, 16, 1, 36], [1, 16, 36]), ([1, 16, 6, 6], [1, 36, 16]), ([1, 16, 8, 8], [1, 256, 4]),
        ([1, 16, 32, 32], [1, 16, 1024]), ([1, 16, 6, 6], [576]), ([1, 16, 1, 1], [16]), ([1, 12, 1, 1], [12]),
        ([1, 16, 2, 4], [1, 2, 8, 2, 4]), ([1, 16, 6, 6], [1, 2, 8, 6, 6]), ([1, 16, 3, 3], [1, 2, 8, 3, 3]),
        ([1, 16, 1, 1], [1, 2, 8, 1, 1]))]
    # issue 20: to 4-D, the real models' flattens of H x W (and the same with C = 16), the batch dim moved,
    # dim 1 and the last dim kept or not
    rank4 = [_reshape_to(a, b) for a, b in (
        ([1, 6, 26, 26], [1, 6, 1, 676]), ([1, 6, 13, 13], [1, 6, 1, 169]), ([1, 82, 10, 10], [82, 1, 1, 100]),
        ([1, 82, 10, 10], [1, 82, 1, 100]), ([1, 16, 26, 26], [1, 16, 1, 676]), ([1, 6, 8, 8], [1, 6, 1, 64]),
        ([1, 16, 10, 10], [16, 1, 1, 100]), ([1, 16, 8, 8], [16, 1, 1, 64]), ([1, 16, 6, 6], [1, 1, 1, 576]),
        ([1, 16, 8, 8], [1, 1024, 1, 1]), ([1, 12, 10, 10], [1, 12, 1, 100]), ([1, 24, 10, 10], [1, 24, 1, 100]),
        ([1, 16, 2, 2], [1, 8, 2, 4]), ([1, 16, 10, 10], [1, 8, 20, 10]), ([1, 16, 6, 6], [4, 4, 6, 6]),
        ([1, 8, 1, 1], [1, 2, 2, 2]), ([1, 24, 3, 3], [1, 8, 3, 9]))]
    # issue 20: Reshapes that only move dims of size 1 (tf2onnx's, in openwakeword's embedding model: the
    # compiler runs them as a Transpose), and the near misses that also reorder or merge other dims
    unit_moves = [_reshape_to(a, b) for a, b in (
        ([1, 76, 34, 1], [1, 1, 76, 34]), ([1, 5, 3, 1], [1, 1, 5, 3]), ([1, 12, 1, 1], [1, 1, 1, 12]),
        ([1, 12, 1, 1], [1, 1, 12, 1]), ([1, 1, 5, 3], [1, 5, 3, 1]), ([1, 7, 1, 5], [1, 1, 7, 5]),
        ([1, 96, 1, 1], [1, 1, 1, 96]), ([1, 5, 3, 1], [1, 3, 5, 1]), ([1, 5, 3, 1], [1, 1, 1, 15]),
        ([1, 7, 1, 5], [1, 1, 5, 7]))]
    # issue 20: [1,C,H,W] -> a 4-D output of batch above 1 (timm mobilevit's unfold [1,C,W,W] -> [C*W/2,2,W/2,2]
    # at W = 4 .. 16 and its fold's [1,C,N,4] -> [C*n,n,2,2]), W against H, and the same with batch 1 kept
    batch_moved = [_reshape_to(a, b) for a, b in (
        ([1, 16, 4, 4], [32, 2, 2, 2]), ([1, 16, 6, 6], [48, 2, 3, 2]), ([1, 16, 8, 8], [64, 2, 4, 2]),
        ([1, 16, 12, 12], [96, 2, 6, 2]), ([1, 16, 16, 16], [128, 2, 8, 2]), ([1, 16, 16, 4], [64, 4, 2, 2]),
        ([1, 16, 8, 4], [32, 2, 4, 2]), ([1, 16, 4, 8], [32, 2, 2, 4]), ([1, 16, 4, 4], [4, 4, 4, 4]),
        ([1, 16, 8, 8], [16, 4, 2, 8]), ([1, 16, 4, 4], [1, 64, 2, 2]), ([1, 16, 4, 4], [1, 32, 2, 4]),
        ([1, 16, 4, 8], [1, 64, 2, 4]), ([1, 16, 12, 4], [1, 48, 4, 4]))]
    before = [Family("reshape-to-rank2-channels", "Reshape", rank2, RESHAPE_HYPOTHESIS,
                   note="Reshape [1,C,1,1] -> [1,C], C around multiples of 8; [1,C,H,W] -> [1,CHW] and [C,HW]"),
            Family("reshape-rank4-rank5", "Reshape", to5 + to4 + shuffle, RESHAPE_HYPOTHESIS,
                   note="channel-shuffle shapes 4-D -> 5-D and back, last dim (a width) 2, 4, 8, 16; the shuffle "
                        "triplet Reshape -> Transpose -> Reshape, each Reshape measured (the compiler folds both "
                        "away, as the eliminates entry Reshape around-transpose says)"),
            Family("reshape-to-rank3-rank4", "Reshape", rank34, RESHAPE_HYPOTHESIS,
                   note="[1,C,H,W] -> rank 3 and rank 4, last dim a multiple of 8 or not")]
    if not plane:
        return before
    return [*before,
            Family("reshape-input-plane", "Reshape", flattens, RESHAPE_HYPOTHESIS,
                   note="[1,C,H,W] -> ranks 1, 2, 3 and 5: H x W a multiple of 8, 1 or neither, against the "
                        "output's last dim (a multiple of 8 or not) and C"),
            Family("reshape-to-rank4", "Reshape", rank4, RESHAPE_HYPOTHESIS,
                   note="[1,C,H,W] -> 4-D: the flattens of H x W in issue 20's real models (nudenet, ddddocr "
                        "common_det) and the same with C = 16, 12, 24, the batch dim moved, dim 1 or the last dim "
                        "kept or not"),
            Family("reshape-unit-dims", "Reshape", unit_moves, RESHAPE_HYPOTHESIS,
                   note="4-D -> 4-D moving only dims of size 1 (openwakeword's tf2onnx Reshapes, [1,76,34,1] -> "
                        "[1,1,76,34], [1,96,1,1] -> [1,1,1,96]), and moves that also reorder or merge other dims"),
            Family("reshape-batch-moved", "Reshape", batch_moved, RESHAPE_HYPOTHESIS,
                   note="[1,C,H,W] -> 4-D with dim 0 above 1 (timm mobilevit's patch unfold and fold at widths 4 to "
                        "16), the input's last dim a multiple of 8 or not, against H; the same shapes to batch 1")]


def _transpose(shape: list[int], perm: list[int]) -> Point:
    return between(f"transpose-{_dims(shape)}-perm{''.join(map(str, perm))}", "Transpose", shape, perm=perm)


def transpose_family() -> Family:
    points = []
    for axis in range(4):
        for d in (8192, 8200):
            shape = [1, 2, 2, 4]
            shape[axis] = d
            points.append(_transpose(shape, [0, 1, 3, 2] if axis in (2, 3) else [1, 0, 2, 3]))
    points += [_transpose([1, 2, 2, 1024], [0, 1, 3, 2]), _transpose([1, 2, 2, 2048], [0, 1, 3, 2]),
               _transpose([1, 8192, 2, 4], [0, 2, 1, 3]), _transpose([1, 2, 8192, 4], [0, 2, 1, 3]),
               _transpose([1, 16, 32, 32], [0, 2, 3, 1])]
    return Family("transpose-dims-around-8192", "Transpose", points,
                  [{"id": f"transpose-dim{a}-max-8192", "input": 0, "dim": {"axis": a, "max": 8192}}
                   for a in range(4)],
                  note="one dim of 8192 or 8200 on each axis (others small), a last dim of 1024 and 2048, two "
                       "perms: the hypothesis 'any dim above 8192 runs on CPU' (rknn.md §4)")


def _slice(pid: str, starts: list[int], ends: list[int], axes: list[int], steps: list[int]) -> Point:
    return between(pid, "Slice", X, {"starts": i64(*starts), "ends": i64(*ends), "axes": i64(*axes),
                                     "steps": i64(*steps)}, ["starts", "ends", "axes", "steps"])


def slice_family() -> Family:
    points = [_slice(f"slice-axis{a}-step{s}", [0], [8 if a == 1 else 16], [a], [s])
              for a in (1, 2, 3) for s in (1, 2)]
    points.append(_slice("slice-axis3-step-1", [-1], [-33], [3], [-1]))
    points.append(_slice("slice-axis3-start4-step1", [4], [20], [3], [1]))
    return Family("slice-axes-steps", "Slice", points,
                  [{"id": "slice-steps-1-or-minus-1", "input": 4,
                    "value": {"each": True, "in": [1, -1], "default": [1]},
                    "fix": "slice with step 1 (x[:, :, a:b]); for x[..., ::2] use a stride-2 Conv2d/pool "
                           "or a reshape"}],
                  note="steps (input 4's values) 1, 2 and -1 over C, H, W")


INT64_MIN_END = -(2**63) + 1  # torch.flip's Slice end: past the first element, backwards

SLICE_REVERSE_HYPOTHESIS: list[dict[str, Any]] = [
    {"id": "slice-reverse-last-axis-only",
     "any_of": [{"input": 4, "value": {"each": True, "in": [1], "default": [1]}},
                {"input": 3, "value": {"axes_from_end_of_input": 0, "each": True, "in": [-1]}}],
     "message": "a Slice with step -1 (a reversal, torch.flip) ran on the NPU only along the input's last axis; "
                "measured on 2-D, 3-D and 4-D inputs, one axis per Slice",
     "fix": "flip along the last axis only: move the axis last first (x.transpose(...).flip(-1)), or reverse "
            "the sequence outside the model; for a backward RNN, nn.LSTM/nn.GRU(bidirectional=True) "
            "exports no reversal"},
    {"id": "slice-reverse-whole-axis",
     "any_of": [{"input": 4, "value": {"each": True, "in": [1], "default": [1]}},
                {"output": 0, "dim": {"axis": -1, "in": [{"ref": {"input": 0, "axis": -1}}]}}],
     "message": "a reversal (step -1) of the last axis ran on the NPU only when it keeps every element "
                "(x.flip(-1)); a part of the axis reversed (x[..., 6::-1]) ran on the CPU",
     "fix": "reverse the whole last axis (x.flip(-1)) and slice the part you need after it with step 1"}]


def slice_reverse_family() -> Family:
    """Issue 20: reversals (step -1, torch.flip) on each axis of 2-D to 4-D inputs; captcha-whisperer's
    CRNN reverses its [20, 1, 4096] time-major sequence on axis 0 for its backward LSTM."""
    def point(shape: list[int], axis: int, start: int = -1, end: int = INT64_MIN_END) -> Point:
        tail = "" if (start, end) == (-1, INT64_MIN_END) else f"-from{start}-to{end}"
        return between(f"slice-reverse-axis{axis}-{_dims(shape)}{tail}", "Slice", shape,
                       {"starts": i64(start), "ends": i64(end), "axes": i64(axis), "steps": i64(-1)},
                       ["starts", "ends", "axes", "steps"])
    four = [1, 16, 8, 8]
    points = [point([20, 1, 64], 0), point([1, 20, 64], 1), point([1, 20, 64], 2), point([20, 64], 0),
              point([20, 64], 1), point(four, 1), point(four, 2), point(four, 3), point(four, -1),
              point(four, 3, -2, -9), point(four, 2, -2, -9), point(four, 3, -1, -5), point(four, 3, -1, -9),
              point(four, 3, 7, -9), point([1, 16, 8, 16], 3, -1, -17), point([1, 16, 8, 16], 3, -1, -9)]
    return Family("slice-reverse", "Slice", points, SLICE_REVERSE_HYPOTHESIS,
                  note="step -1 over each axis of [20,1,64], [1,20,64], [20,64] and [1,16,8,8], whole and partial "
                       "(also the last axis of [1,16,8,16])")


def slice_axis0_family() -> Family:
    """The vendor's "batchsize: 1" remark for Slice, read as dim 0 at most 1 (rknn-toolkit2-v2.1's
    slice-batch-1), against slices on axis 0 of a dim 0 above 1 (a q/k/v split of attention)."""
    def point(pid: str, shape: list[int]) -> Point:
        return between(pid, "Slice", shape, {"starts": i64(0), "ends": i64(1), "axes": i64(0), "steps": i64(1)},
                       ["starts", "ends", "axes", "steps"])
    return Family("slice-axis0", "Slice", [point("slice-axis0-2x16x8x8", [2, 16, 8, 8]),
                                           point("slice-axis0-3x1x4x8x16", [3, 1, 4, 8, 16])],
                  note="one Slice on axis 0 of a 4-D input of dim 0 2 and a 5-D one of dim 0 3 (step 1)")


def _pad(axes_name: str, pads: list[int], mode: str = "constant") -> Point:
    return between(f"pad-{axes_name}-{mode}", "Pad", X, {"pads": i64(*pads)}, ["pads"], mode=mode)


def pad_family() -> Family:
    return Family("pad-axes", "Pad", [
        _pad("hw", [0, 0, 1, 1, 0, 0, 1, 1]), _pad("w", [0, 0, 0, 2, 0, 0, 0, 2]),
        _pad("c", [0, 2, 0, 0, 0, 2, 0, 0]), _pad("ch", [0, 1, 1, 0, 0, 1, 1, 0]),
        _pad("hw", [0, 0, 1, 1, 0, 0, 1, 1], "reflect"), _pad("hw", [0, 0, 1, 1, 0, 0, 1, 1], "edge")],
        [{"id": "pad-not-c-and-h", "input": 1, "value": {"padded_axes": True, "not_in": [[1, 2]]},
          "fix": "pad H and W only (F.pad(x, (l, r, t, b))); pad channels in a separate step"}],
        note="pads (input 1's values) over H and W, W, C, C and H; constant, reflect and edge. Only padding "
             "exactly C and H is claimed CPU: the only combination measured there")


# Activations and other single ops, rknn.md §6: each on x [1, 16, 32, 32].
UNARY = ["Relu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Softplus", "Sqrt", "Abs", "Neg",
         "Selu", "Celu", "Softsign", "Mish", "Erf", "Exp", "Log", "Reciprocal", "Sin", "Cos", "Floor", "Ceil",
         "Round", "Sign", "Not"]


def unary_families() -> list[Family]:
    out = [Family(f"{op.lower()}", op, [single(f"{op.lower()}-{_dims(X)}", op,
                                               {"x": ("bool" if op == "Not" else "float32", X)},
                                               opset=18 if op == "Mish" else 17)]) for op in UNARY]
    more = [
        single("leakyrelu-alpha0.1", "LeakyRelu", alpha=0.1),
        single("prelu-slope-c", "PRelu", None, {"slope": f32(16, 1, 1)}, ["slope"]),
        single("clip-0-6", "Clip", None, {"lo": np.float32(0), "hi": np.float32(6)}, ["lo", "hi"]),
        single("softmax-axis-1", "Softmax", axis=-1), single("softmax-axis1", "Softmax", axis=1),
        single("logsoftmax-axis-1", "LogSoftmax", axis=-1),
        single("batchnormalization", "BatchNormalization", None,
               {"s": f32(16), "b": f32(16), "m": f32(16), "v": f32(16)}, ["s", "b", "m", "v"]),
        single("instancenormalization", "InstanceNormalization", None, {"s": f32(16), "b": f32(16)}, ["s", "b"]),
        single("lpnormalization-axis1", "LpNormalization", axis=1),
        single("layernormalization-eps", "LayerNormalization", None, {"s": f32(32), "b": f32(32)}, ["s", "b"],
               axis=-1, epsilon=1e-5),
        single("groupnormalization-4", "GroupNormalization", None, {"s": f32(4), "b": f32(4)}, ["s", "b"],
               opset=18, num_groups=4),
        single("lrn-size3", "LRN", size=3), single("meanvariancenormalization", "MeanVarianceNormalization"),
        single("depthtospace-2", "DepthToSpace", blocksize=2), single("spacetodepth-2", "SpaceToDepth", blocksize=2),
        single("reducemean-hw", "ReduceMean", axes=[2, 3]), single("reducemax-hw", "ReduceMax", axes=[2, 3]),
        single("reducemin-hw", "ReduceMin", axes=[2, 3]), single("reduceprod-hw", "ReduceProd", axes=[2, 3]),
        single("reducesum-hw", "ReduceSum", None, {"axes": i64(2, 3)}, ["axes"]),
        single("argmax-axis1", "ArgMax", axis=1), single("globalaveragepool", "GlobalAveragePool"),
        single("globalmaxpool", "GlobalMaxPool"), single("tile-1x1x2x2", "Tile", None, {"r": i64(1, 1, 2, 2)}, ["r"]),
        single("expand-to-2", "Expand", {"x": ("float32", [1, 16, 1, 32])}, {"s": i64(1, 16, 32, 32)}, ["s"]),
        single("cast-to-float16", "Cast", to=TensorProto.FLOAT16),
        single("topk-4", "TopK", None, {"k": i64(4)}, ["k"], outs=("y", "i")),
        Point("split-c-2", lambda: model([node("Split", ["x", "s"], ["y", "z"], name="split", axis=1)], None,
                                         {"s": i64(8, 8)}, ["y", "z"])),
        Point("concat-c", lambda: model([node("Concat", ["x", "x"], axis=1)])),
    ]
    by_op: dict[str, list[Point]] = {}
    for p in more:
        by_op.setdefault(p.build().graph.node[0].op_type, []).append(p)
    out += [Family(op.lower(), op, points) for op, points in by_op.items()]
    return out


def _binary(op: str, kind: str, dtype: str = "float32") -> Point:
    shapes = {"tensor": X, "channel": [1, 16, 1, 1], "scalar": []}
    pid = f"{op.lower()}-{kind}" + (f"-{dtype}" if dtype != "float32" else "")
    if kind == "tensor":
        return single(pid, op, {"x": (dtype, X), "x2": (dtype, X)}, None, ["x2"])
    value = f32(*shapes[kind], value=2.0).astype(np.float32 if dtype == "float32" else np.dtype(dtype))
    return single(pid, op, {"x": (dtype, X)}, {"c": value}, ["c"])


BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Equal", "Less", "Greater"]


def binary_families() -> list[Family]:
    out = []
    for op in BINARY:
        constraints: list[dict[str, Any]] = []
        if op == "Pow":
            constraints = [{"id": "pow-constant-exponent", "input": 1, "constant": True}]
        if op in ("Max", "Min"):
            constraints = [{"id": f"{op.lower()}-second-input-rank-4", "input": 1, "rank": {"min": 4, "max": 4}}]
        out.append(Family(f"{op.lower()}-operands", op, [_binary(op, k) for k in ("tensor", "channel", "scalar")],
                          constraints, note="a second input of the same shape, per channel, a scalar constant"))
    dtypes = [{"id": "add-input-dtype", "input": 0, "dtype": ["float32", "float16", "int8", "int32"]}]
    out.append(Family("add-dtypes", "Add", [_binary("Add", "tensor", d) for d in ("float16", "int8", "int32", "int64")],
                      dtypes, note="input dtypes"))
    out.append(Family("relu-dtypes", "Relu", [single(f"relu-{_dims(X)}-{d}", "Relu", {"x": (d, X)})
                                              for d in ("float16", "int8", "int32", "int64")],
                      [{"id": "relu-input-float", "input": 0, "dtype": ["float32", "float16"]}],
                      note="input dtypes"))
    out.append(Family("where-condition", "Where", [
        single("where-bool-condition", "Where", {"x": ("bool", X), "a": ("float32", X), "b": ("float32", X)},
               None, ["a", "b"])]))
    return out


def rank_families() -> list[Family]:
    shapes = [[64], [4, 64], [2, 4, 64], [1, 16, 32, 32], [1, 2, 4, 8, 16]]
    return [Family("relu-ranks", "Relu", [single(f"relu-rank{len(s)}-{_dims(s)}", "Relu", {"x": ("float32", s)})
                                          for s in shapes], note="ranks 1 to 5, last dim a multiple of 8"),
            Family("add-ranks", "Add", [single(f"add-rank{len(s)}-{_dims(s)}", "Add",
                                               {"x": ("float32", s), "x2": ("float32", s)}, None, ["x2"])
                                        for s in shapes], note="ranks 1 to 5, last dim a multiple of 8")]


def matmul_families() -> list[Family]:
    return [
        Family("matmul-operands", "MatMul", [
            single("matmul-rank4-const-weight", "MatMul", None, {"w": f32(32, 16)}, ["w"]),
            single("matmul-rank3-const-weight", "MatMul", {"x": ("float32", [1, 32, 64])}, {"w": f32(64, 32)}, ["w"]),
            single("matmul-rank4-two-tensors", "MatMul", {"x": ("float32", [1, 2, 16, 32]),
                                                          "x2": ("float32", [1, 2, 32, 16])}, None, ["x2"])]),
        Family("gemm-const-weight", "Gemm", [
            single("gemm-1x64-by-64x32", "Gemm", {"x": ("float32", [1, 64])}, {"w": f32(32, 64), "b": f32(32)},
                   ["w", "b"], transB=1)]),
    ]


def recurrent_families() -> list[Family]:
    h, i = 16, 16
    xs = {"x": ("float32", [4, 1, i])}
    return [Family("lstm", "LSTM", [single("lstm-seq4-h16", "LSTM", xs, {"w": f32(1, 4 * h, i), "r": f32(1, 4 * h, h)},
                                           ["w", "r"], hidden_size=h)]),
            Family("gru", "GRU", [single("gru-seq4-h16", "GRU", xs, {"w": f32(1, 3 * h, i), "r": f32(1, 3 * h, h)},
                                         ["w", "r"], hidden_size=h)])]


# --- pattern and adapter families --------------------------------------------------------

def _after_conv(pid: str, body: Callable[[str], list[onnx.NodeProto]], inits: dict[str, Any] | None = None) -> Point:
    """Conv -> the pattern (reading the Conv's output c), as networks write activations."""
    def build() -> onnx.ModelProto:
        conv = node("Conv", ["x", "cw"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        return model([conv, *body("c")], None, {"cw": f32(16, 16, 3, 3), **(inits or {})})
    return Point(pid, build)


def _hardswish(pid: str, hi: float, div: float) -> Point:
    def body(x: str) -> list[onnx.NodeProto]:
        return [node("Add", [x, "three"], ["a"], name="hs_add"),
                node("Clip", ["a", "zero", "hi"], ["b"], name="hs_clip"),
                node("Mul", [x, "b"], ["m"], name="hs_mul"), node("Div", ["m", "div"], ["y"], name="hs_div")]
    return _after_conv(pid, body, {"three": np.float32(3), "zero": np.float32(0), "hi": np.float32(hi),
                                   "div": np.float32(div)})


def _gelu(pid: str, root: float, half_first: bool) -> Point:
    def body(x: str) -> list[onnx.NodeProto]:
        head = [node("Div", [x, "root"], ["d"], name="gelu_div"), node("Erf", ["d"], ["e"], name="gelu_erf"),
                node("Add", ["e", "one"], ["a"], name="gelu_add")]
        if half_first:
            return [*head, node("Mul", ["a", "half"], ["h"], name="gelu_half"),
                    node("Mul", [x, "h"], ["y"], name="gelu_mul")]
        return [*head, node("Mul", [x, "a"], ["m"], name="gelu_mul"),
                node("Mul", ["m", "half"], ["y"], name="gelu_half")]
    return _after_conv(pid, body, {"root": np.float32(root), "one": np.float32(1), "half": np.float32(0.5)})


def _silu(pid: str, same: bool) -> Point:
    def build() -> onnx.ModelProto:
        nodes = [node("Conv", ["x", "cw"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                 node("Sigmoid", ["c"], ["s"], name="silu_sigmoid"),
                 node("Mul", ["c" if same else "x", "s"], ["y"], name="silu_mul")]
        return model(nodes, None, {"cw": f32(16, 16, 3, 3)})
    return Point(pid, build)


def _attention(pid: str, scale: bool, axis: int = -1) -> Point:
    def build() -> onnx.ModelProto:
        nodes = [node("MatMul", ["q", "kt"], ["s"], name="att_scores")]
        last = "s"
        if scale:
            nodes.append(node("Div", ["s", "c"], ["sd"], name="att_scale"))
            last = "sd"
        nodes += [node("Softmax", [last], ["p"], name="att_softmax", axis=axis),
                  node("MatMul", ["p", "v"], ["y"], name="att_context")]
        qkv = {"q": ("float32", [1, 2, 16, 32]), "kt": ("float32", [1, 2, 32, 16]), "v": ("float32", [1, 2, 16, 32])}
        return model(nodes, qkv, {"c": np.float32(5.657)} if scale else {})
    return Point(pid, build)


def pattern_families() -> list[Family]:
    return [
        Family("pattern-hardswish", "HardSwish", [_hardswish("hardswish-after-conv", 6, 6),
                                                  _hardswish("hardswish-near-miss-clip-0-5", 5, 6),
                                                  _hardswish("hardswish-near-miss-div-5", 6, 5)],
               kind=PATTERN, pattern="hardswish-add-clip-mul-div"),
        Family("pattern-gelu", "GELU", [_gelu("gelu-after-conv", 1.4142135, False),
                                        _gelu("gelu-near-miss-div-1.5", 1.5, False)],
               kind=PATTERN, pattern="gelu-erf"),
        Family("pattern-gelu-half-first", "GELU", [_gelu("gelu-half-first-after-conv", 1.4142135, True),
                                                   _gelu("gelu-half-first-near-miss-div-1.5", 1.5, True)],
               kind=PATTERN, pattern="gelu-erf-half-first"),
        Family("pattern-silu", "SiLU", [_silu("silu-after-conv", True), _silu("silu-near-miss-other-input", False)],
               kind=PATTERN, pattern="silu-sigmoid-mul"),
        Family("pattern-attention", "SDPAttention", [_attention("attention-scaled", True),
                                                     _attention("attention-unscaled", False),
                                                     _attention("attention-softmax-axis2", True, axis=2)],
               kind=PATTERN, pattern="attention-matmul-div-softmax-matmul"),
    ]


def normalize_point(pid: str, reduce: str = "ReduceL2", axis: int = -1) -> Point:
    """F.normalize(x, dim) as both exporters write it: ReduceL2(keepdims) -> Clip(min eps) ->
    Expand to x's shape -> Div(x, ·) (timm's edgenext cross-covariance attention)."""
    shape = [1, 2, 16, 32]
    def build() -> onnx.ModelProto:
        nodes = [node(reduce, ["x"], ["r"], name="l2_reduce", axes=[axis], keepdims=1),
                 node("Clip", ["r", "eps"], ["c"], name="l2_clip"),
                 node("Expand", ["c", "shape"], ["e"], name="l2_expand"),
                 node("Div", ["x", "e"], ["y"], name="l2_div")]
        return model(nodes, {"x": ("float32", shape)}, {"eps": np.float32(1e-12), "shape": i64(*shape)})
    return Point(pid, build)


def issue20_pattern_families() -> list[Family]:
    """What the timm set showed (issue 20), measured after the standard sweep's patterns: F.normalize
    (edgenext) as a fused pattern, at p=2 and p=1, on two axes, with ReduceMax as the near miss; and
    Softmax at batch 4 (mobilevit's attention runs its patch area as the batch) against the vendor's
    batch-1 remark."""
    return [
        Family("pattern-l2-normalize", "L2Normalize",
               [normalize_point("l2-normalize-last-axis"), normalize_point("l2-normalize-axis1", axis=1),
                normalize_point("l2-normalize-near-miss-reducemax", reduce="ReduceMax")],
               kind=PATTERN, pattern="l2-normalize-reducel2-clip-expand-div"),
        Family("pattern-l1-normalize", "L1Normalize",
               [normalize_point("l1-normalize-last-axis", reduce="ReduceL1")],
               kind=PATTERN, pattern="l1-normalize-reducel1-clip-expand-div"),
        Family("softmax-batch", "Softmax",
               [single("softmax-batch4-axis-1", "Softmax", {"x": ("float32", [4, 2, 16, 16])}, axis=-1),
                between("softmax-batch4-between", "Softmax", [4, 2, 16, 16], axis=-1)]),
    ]


def _adapted(shape: list[int]) -> Point:
    return single(f"adapter-relu-{_dims(shape)}", "Relu", {"x": ("float32", shape)})


def adapter_families() -> list[Family]:
    shapes = [[2, 8], [2, 10], [2, 12], [2, 16], [1, 17], [1, 24], [2, 4, 12], [2, 4, 16], [1, 2, 3, 4, 12],
              [1, 2, 3, 4, 16], [33], [40]]
    return [Family("rank-adapters", "Reshape", [_adapted(s) for s in shapes], kind=ADAPTER,
                   note="Relu on inputs of rank 1, 2, 3 and 5, last dim around multiples of 8")]


# --- the compiler's clean-up: eliminate and lower families --------------------------------

def _chain(pid: str, body: list[onnx.NodeProto], inits: dict[str, Any] | None = None, node_: str | None = None,
           shape: list[int] | None = None, opset: int = 17, conv: bool = False) -> Point:
    """x -> Relu (or a 3x3 Conv when ``conv``) named before writing a -> ``body`` (reading a,
    writing t) -> Relu named after -> y: the measured node sits inside the graph, as in networks."""
    def build() -> onnx.ModelProto:
        c = (shape or X)[1]
        head = node("Conv", ["x", "cw"], ["a"], name="before", kernel_shape=[3, 3], pads=[1, 1, 1, 1]) if conv \
            else node("Relu", ["x"], ["a"], name="before")
        weights = {"cw": f32(c, c, 3, 3, seed=7)} if conv else {}
        return model([head, *body, node("Relu", ["t"], ["y"], name="after")], {"x": ("float32", shape or X)},
                     {**weights, **(inits or {})}, opset=opset)
    return Point(pid, build, node_)


def _bn_inits(scale: float | None = None, bias: float = 0.0, mean: float = 0.0, var: float = 1.0) -> dict[str, Any]:
    """A BatchNormalization's parameters over 16 channels: the values given, or random (None)."""
    if scale is None:
        return {"s": f32(16, seed=1), "b": f32(16, seed=2), "m": f32(16, seed=3), "v": f32(16, seed=4)}
    return {"s": f32(16, value=scale), "b": f32(16, value=bias), "m": f32(16, value=mean), "v": f32(16, value=var)}


def _bn(epsilon: float = 1e-5) -> onnx.NodeProto:
    return node("BatchNormalization", ["a", "s", "b", "m", "v"], ["t"], name="bn", epsilon=epsilon)


def _eliminates(op: str, when: str) -> dict[str, Any]:
    return {"op": op, "when": when}


def cleanup_families() -> list[Family]:
    """What RKNN-Toolkit2 removes before placement (its remove_invalid_*, fuse_*_into_conv,
    bypass_* rewrites), each condition with near misses where it does not hold."""
    cast = {t: getattr(TensorProto, t) for t in ("FLOAT", "FLOAT16", "INT32")}
    reshape_back = [node("Reshape", ["a", "s1"], ["r1"], name="resh1"),
                    node("Reshape", ["r1", "s2"], ["t"], name="resh2")]
    shapes = {"s1": i64(1, 16, 1024), "s2": i64(*X)}
    flat = [node("Flatten", ["a"], ["f"], name="flat", axis=1), node("Reshape", ["f", "s2"], ["t"], name="resh2")]
    unsq = [node("Unsqueeze", ["a", "ax"], ["u"], name="unsq"), node("Squeeze", ["u", "ax"], ["t"], name="sq")]
    pair = [node("Transpose", ["a"], ["t1"], name="t1", perm=[0, 2, 3, 1]),
            node("Transpose", ["t1"], ["t"], name="t2", perm=[0, 3, 1, 2])]
    shuffle = [node("Reshape", ["a", "g"], ["r1"], name="split"), node("Transpose", ["r1"], ["p"], name="swap",
                                                                       perm=[0, 2, 1, 3, 4]),
               node("Reshape", ["p", "s2"], ["t"], name="merge")]

    def gemm_head() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"), node("GlobalAveragePool", ["a"], ["g"], name="gap"),
                      node("Flatten", ["g"], ["f"], name="flat", axis=1),
                      node("Gemm", ["f", "w", "b"], ["y"], name="fc", transB=1)],
                     None, {"w": f32(10, 16), "b": f32(10)})

    def mul(pid: str, value: np.ndarray, conv: bool = True, shared: bool = False) -> Point:
        if not shared:
            return _chain(pid, [node("Mul", ["a", "k"], ["t"], name="mul")], {"k": value}, "mul", conv=conv)

        def build() -> onnx.ModelProto:
            return model([node("Conv", ["x", "cw"], ["a"], name="before", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                          node("Mul", ["a", "k"], ["t"], name="mul"), node("Add", ["t", "a"], ["y"], name="after")],
                         None, {"cw": f32(16, 16, 3, 3, seed=7), "k": value})
        return Point(pid, build, "mul")

    def bn_shared() -> onnx.ModelProto:
        return model([node("Conv", ["x", "cw"], ["a"], name="before", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), _bn(),
                      node("Add", ["t", "a"], ["y"], name="after")], None,
                     {"cw": f32(16, 16, 3, 3, seed=7), **_bn_inits()})

    def sum3() -> onnx.ModelProto:
        convs = [node("Conv", ["x", f"w{i}"], [f"c{i}"], name=f"conv{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
                 for i in range(3)]
        return model([*convs, node("Sum", ["c0", "c1", "c2"], ["s"], name="sum"),
                      node("Relu", ["s"], ["y"], name="after")], None,
                     {f"w{i}": f32(16, 16, 3, 3, seed=i) for i in range(3)})

    def sum2() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"),
                      node("Conv", ["x", "w0"], ["c0"], name="conv0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                      node("Sum", ["c0", "a"], ["s"], name="sum"), node("Relu", ["s"], ["y"], name="after")],
                     None, {"w0": f32(16, 16, 3, 3)})

    cleanup = [
        ("identity", _eliminates("Identity", "always"), [_chain("identity-between-relus",
                                                                  [node("Identity", ["a"], ["t"])])]),
        ("dropout", _eliminates("Dropout", "always"), [
            _chain("dropout-opset17", [node("Dropout", ["a"], ["t"])]),
            _chain("dropout-opset9", [node("Dropout", ["a"], ["t"])], opset=9)]),
        ("cast-same-dtype", _eliminates("Cast", "same-dtype"), [
            _chain("cast-float32-to-float32", [node("Cast", ["a"], ["t"], to=cast["FLOAT"])])]),
        ("cast-float-to-float", _eliminates("Cast", "float-to-float"), [
            _chain("cast-float32-to-float16", [node("Cast", ["a"], ["t"], to=cast["FLOAT16"])]),
            _chain("cast-float32-to-float16-after-conv", [node("Cast", ["a"], ["t"], to=cast["FLOAT16"])], conv=True),
            _chain("cast-float16-to-float32",
                   [node("Cast", ["a"], ["h"], name="to_half", to=cast["FLOAT16"]),
                    node("Cast", ["h"], ["t"], to=cast["FLOAT"])]),
            _chain("cast-float32-to-int32-and-back", [node("Cast", ["a"], ["i"], to=cast["INT32"]),
                                                      node("Cast", ["i"], ["t"], name="to_float", to=cast["FLOAT"])])]),
        ("reshape-chain", _eliminates("Reshape", "reshape-chain"), [
            _chain("reshape-chain-back-first", reshape_back, shapes, "resh1"),
            _chain("reshape-chain-back-last", reshape_back, shapes, "resh2")]),
        ("flatten-reshape-chain", _eliminates("Flatten", "reshape-chain"), [
            _chain("flatten-reshape-back", flat, shapes, "flat")]),
        ("unsqueeze-reshape-chain", _eliminates("Unsqueeze", "reshape-chain"), [
            _chain("unsqueeze-squeeze-first", unsq, {"ax": i64(0)}, "unsq")]),
        ("squeeze-reshape-chain", _eliminates("Squeeze", "reshape-chain"), [
            _chain("unsqueeze-squeeze-last", unsq, {"ax": i64(0)}, "sq")]),
        ("transpose-inverse-pair", _eliminates("Transpose", "inverse-transpose-pair"), [
            _chain("transpose-pair-first", pair, None, "t1"), _chain("transpose-pair-second", pair, None, "t2")]),
        ("reshape-around-transpose", _eliminates("Reshape", "around-transpose"), [
            _chain("shuffle-after-conv-first", shuffle, {"g": i64(1, 2, 8, 32, 32), **shapes}, "split", conv=True),
            _chain("shuffle-after-conv-last", shuffle, {"g": i64(1, 2, 8, 32, 32), **shapes}, "merge", conv=True)]),
        ("flatten-into-gemm", _eliminates("Flatten", "into-gemm"), [Point("flatten-before-gemm", gemm_head, "flat")]),
        ("batchnormalization-into-conv", _eliminates("BatchNormalization", "into-conv"), [
            _chain("batchnormalization-after-conv", [_bn()], _bn_inits(), "bn", conv=True),
            Point("batchnormalization-after-conv-output-shared", bn_shared, "bn"),
            _chain("batchnormalization-after-relu", [_bn()], _bn_inits(), "bn")]),
        ("batchnormalization-identity", _eliminates("BatchNormalization", "identity"), [
            _chain("batchnormalization-identity", [_bn()], _bn_inits(1, 0, 0, 1), "bn"),
            _chain("batchnormalization-identity-epsilon-0.1", [_bn(0.1)], _bn_inits(1, 0, 0, 1), "bn"),
            _chain("batchnormalization-bias-0.1", [_bn()], _bn_inits(1, 0.1, 0, 1), "bn"),
            _chain("batchnormalization-variance-2", [_bn()], _bn_inits(1, 0, 0, 2), "bn")]),
        ("mul-into-conv", _eliminates("Mul", "into-conv"), [
            mul("mul-scalar-after-conv", f32(1, value=1.38)), mul("mul-per-channel-after-conv", f32(1, 16, 1, 1)),
            mul("mul-tensor-after-conv", f32(1, 16, 32, 32)),
            mul("mul-scalar-after-conv-output-shared", f32(1, value=1.38), shared=True)]),
        ("mul-identity", _eliminates("Mul", "identity"), [
            mul("mul-by-one", f32(1, value=1.0), conv=False), mul("mul-by-1.38", f32(1, value=1.38), conv=False)]),
        ("concat-identity", _eliminates("Concat", "identity"), [
            _chain("concat-one-input", [node("Concat", ["a"], ["t"], axis=1)]),
            _chain("concat-two-inputs", [node("Concat", ["a", "a"], ["t"], axis=1)])]),
    ]
    out = [Family(f"eliminate-{name}", rule["op"], points, kind=ELIMINATE, rule=rule) for name, rule, points in cleanup]
    out.append(Family("lower-sum-to-add", "Sum", [Point("sum-three-convs", sum3, "sum"),
                                                  Point("sum-two-inputs", sum2, "sum")],
                      kind=LOWER, rule={"op": "Sum", "to": "Add"}))
    return out
# --- splits: one node the compiler runs as several ops on several devices --------------------

SPLIT_N = (4096, 8191, 8192, 8193, 8210, 16384, 18385)  # output features around the 8192 Transpose limit


def _matmul_head(t: int, c: int, n: int, last: bool = False) -> Point:
    """Relu -> MatMul [1, T, C] x [C, N] (a constant weight: nn.Linear without bias) -> Relu (or the
    graph output when ``last``, as a recogniser's CTC head): RKNN makes the MatMul a Conv on
    [1, C, 1, T] and transposes its [1, N, 1, T] output back."""
    def build() -> onnx.ModelProto:
        tail = [] if last else [node("Relu", ["t"], ["y"], name="after")]
        return model([node("Relu", ["x"], ["a"], name="before"),
                      node("MatMul", ["a", "w"], ["y" if last else "t"], name="matmul"), *tail],
                     {"x": ("float32", [1, t, c])}, {"w": f32(c, n)})
    return Point(f"matmul-1x{t}x{c}-by-{c}x{n}" + ("-last" if last else ""), build, "matmul")


def _gemm_head(t: int, c: int, n: int) -> Point:
    """Relu -> Gemm [T, C] x [N, C]^T + bias (nn.Linear) -> Relu."""
    def build() -> onnx.ModelProto:
        return model([node("Relu", ["x"], ["a"], name="before"),
                      node("Gemm", ["a", "w", "b"], ["t"], name="gemm", transB=1),
                      node("Relu", ["t"], ["y"], name="after")],
                     {"x": ("float32", [t, c])}, {"w": f32(n, c), "b": f32(n)})
    return Point(f"gemm-{t}x{c}-by-{c}x{n}", build, "gemm")


def _split_rule(op: str, where: list[dict[str, Any]]) -> dict[str, Any]:
    """The candidate ``splits`` entry of a wide-head family (no evidence: infer.py adds it when confirmed)."""
    name = op.lower()
    return {"id": f"{name}-wide-output-transpose-on-cpu", "op": op, "where": where,
            "constraints": [{"id": f"{name}-output-features-max-8192",
                             "any_of": [{"output": 0, "dim": {"axis": -1, "max": 8192}},
                                        {"output": 0, "dim": {"axis": -2, "max": 1}}],
                             "message": "RKNN runs it as a Conv, then transposes the [1, N, 1, T] result back on "
                                        "the CPU (a Transpose with a dim above 8192)"}],
            "pieces": [{"op": "Conv", "device": "npu"}, {"op": "Transpose", "device": "cpu"},
                       {"op": "Reshape", "device": "npu"}],
            "fix": "keep the nn.Linear's out_features at or below 8192, or split it into Linears of at most 8192 "
                   "outputs concatenated after them, or run the head on the CPU deliberately"}


def split_families() -> list[Family]:
    """MatMul and Gemm with a constant weight at N output features around 8192 (T and C varied),
    and the Transpose RKNN adds after them alone at the same shapes: which heads the compiler
    splits into an NPU Conv and a CPU Transpose (issue 20's recognisers: N = 6625 and 6906 stay
    whole, 8210 and 18385 are split)."""
    matmul = [_matmul_head(40, 120, n) for n in SPLIT_N]
    matmul += [_matmul_head(t, c, n) for t, c in ((1, 120), (8, 120), (80, 120), (40, 32), (40, 512))
               for n in (8192, 8193)]
    matmul += [_matmul_head(40, 120, n, last=True) for n in (8192, 8193, 18385)]
    gemm = [_gemm_head(32, 64, n) for n in SPLIT_N] + [_gemm_head(t, c, n) for t, c in ((1, 64), (32, 1024))
                                                        for n in (8192, 8193)]
    transpose = [between(f"transpose-1x{n}x1x{t}-perm0321", "Transpose", [1, n, 1, t], perm=[0, 3, 2, 1])
                 for t in (1, 8, 40) for n in (8192, 8193)]
    transpose += [between(f"transpose-1x{n}x1x40-perm0321", "Transpose", [1, n, 1, 40], perm=[0, 3, 2, 1])
                  for n in (4096, 16384, 18385)]
    return [Family("matmul-const-weight-wide-n", "MatMul", matmul, kind=SPLIT, rule=_split_rule(
                "MatMul", [{"id": "matmul-constant-weight", "input": 1, "constant": True, "rank": {"min": 2, "max": 2}},
                           {"id": "matmul-output-rank-2-or-3", "output": 0, "rank": {"min": 2, "max": 3}}]),
                   note="[1, T, C] x [C, N] at N around 8192, T and C varied; the last three as the graph output"),
            Family("gemm-const-weight-wide-n", "Gemm", gemm, kind=SPLIT, rule=_split_rule(
                "Gemm", [{"id": "gemm-constant-weight", "input": 1, "constant": True}]),
                   note="[T, C] x [N, C]^T + bias at N around 8192"),
            Family("transpose-wide-dim1-to-last", "Transpose", transpose, kind=SPLIT,
                   note="the Transpose the compiler adds after a wide head, [1, N, 1, T] -> [1, T, 1, N], alone")]

def folding_families() -> list[Family]:
    """Issue 20's second clean-up families (in ``standard-int8`` only, so ``standard`` keeps its
    372 points): a Reshape merged into the Transpose reading it (``fuse_two_reshape`` after
    ``swap_reshape_transpose_v2``, PP-PicoDet's heads), a Conv's bias written as a separate Add
    (``fuse_add_into_conv``, newer paddle2onnx exports) and the scalar Mul / Add after it
    (PP-LCNet's learnable affine blocks, ``fuse_mul_into_conv``, ``fuse_add_into_conv``), and
    the identities of the timm set (a Mul by 1 with the constant first, an Add of 0, a Slice of the
    whole tensor: ``remove_invalid_mul``, ``remove_invalid_add``, ``remove_invalid_slice``). The
    Mul families replace ``cleanup_families``' eliminate-mul-into-conv and eliminate-mul-identity
    (their points and more)."""
    def transposed(pid: str, shape: list[int], to: list[int], perm: list[int]) -> Point:
        return _chain(pid, [node("Reshape", ["a", "s"], ["r"], name="resh"),
                            node("Transpose", ["r"], ["t"], name="swap", perm=perm)], {"s": i64(*to)}, "resh",
                      shape=shape)

    def affine(pid: str, measured: str, head: str = "Conv", bias: bool = True, shared: bool = False,
               identities: bool = False) -> Point:
        """head -> [Add bias [1,16,1,1]] -> Mul 0.618 -> Add 0.188 -> Relu (paddle2onnx's order, the
        scalar first in the Mul), with an Identity after each when ``identities``; ``shared``: the
        head's output is read by the last Add too."""
        def build() -> onnx.ModelProto:
            first = node("Conv", ["x", "cw"], ["a"], name="before", kernel_shape=[3, 3], pads=[1, 1, 1, 1]) \
                if head == "Conv" else node(head, ["x"], ["a"], name="before")
            body: list[onnx.NodeProto] = [first]
            last = "a"

            def step(op: str, inputs: list[str], name: str) -> None:
                nonlocal last
                body.append(node(op, inputs, [f"{name}_out"], name=name))
                last = f"{name}_out"
                if identities:
                    body.append(node("Identity", [last], [f"{name}_id"], name=f"{name}_identity"))
                    last = f"{name}_id"
            if bias:
                step("Add", [last, "b"], "bias")
            step("Mul", ["k", last], "mul")
            step("Add", [last, "c"], "shift")
            tail = [node("Add", [last, "a"], ["s"], name="after_add"), node("Relu", ["s"], ["y"], name="after")] \
                if shared else [node("Relu", [last], ["y"], name="after")]
            return model([*body, *tail], None, {"cw": f32(16, 16, 3, 3, seed=7), "b": f32(1, 16, 1, 1, seed=3),
                                                "k": f32(1, value=0.618), "c": f32(1, value=0.188)})
        return Point(pid, build, measured)

    def add(pid: str, value: np.ndarray, conv: bool = True) -> Point:
        return _chain(pid, [node("Add", ["a", "k"], ["t"], name="add")], {"k": value}, "add", conv=conv)

    def by_constant(pid: str, op: str, value: np.ndarray, first: bool = False) -> Point:
        """Relu -> op(a, k) (op(k, a) when ``first``) -> Relu, k the constant ``value``."""
        low = op.lower()
        return _chain(pid, [node(op, ["k", "a"] if first else ["a", "k"], ["t"], name=low)], {"k": value}, low)

    def slice_(pid: str, end: int, steps: bool = False) -> Point:
        inputs = ["a", "s0", "e", "ax1"] + (["st1"] if steps else [])
        return _chain(pid, [node("Slice", inputs, ["t"], name="slice")],
                      {"s0": i64(0), "e": i64(end), "ax1": i64(1), **({"st1": i64(1)} if steps else {})}, "slice")

    cleanup = {f.id: f for f in cleanup_families()}
    mul, mul_identity = cleanup["eliminate-mul-into-conv"], cleanup["eliminate-mul-identity"]
    six = [1, 16, 6, 6]
    identities = [
        # the constant first too: timm hgnetv2's LearnableAffineBlock writes scale * x + bias
        Family("eliminate-mul-identity", "Mul", [
            *mul_identity.points, by_constant("mul-one-by-tensor", "Mul", f32(1, value=1.0), first=True)],
            kind=ELIMINATE, rule=mul_identity.rule),
        Family("eliminate-add-identity", "Add", [
            by_constant("add-zero", "Add", f32(1, value=0.0)),
            by_constant("add-zero-first", "Add", f32(1, value=0.0), first=True),
            by_constant("add-zero-per-channel", "Add", f32(1, 16, 1, 1, value=0.0)),
            by_constant("add-0.1", "Add", f32(1, value=0.1))], kind=ELIMINATE, rule=_eliminates("Add", "identity")),
        # timm ghostnet's x[:, :out_chs] of a Concat that has exactly out_chs channels
        Family("eliminate-slice-identity", "Slice", [
            slice_("slice-all-channels", 16), slice_("slice-all-channels-end-max", 2**63 - 1),
            slice_("slice-all-channels-step-1", 16, steps=True), slice_("slice-first-8-channels", 8)],
            kind=ELIMINATE, rule=_eliminates("Slice", "identity"))]
    return [
        Family("eliminate-reshape-into-transpose", "Reshape", [
            transposed("reshape-4d-3d-transposed", six, [1, 16, 36], [0, 2, 1]),
            transposed("reshape-4d-3d-transposed-64", [1, 16, 8, 8], [1, 16, 64], [0, 2, 1]),
            transposed("reshape-4d-2d-transposed", six, [16, 36], [1, 0]),
            transposed("reshape-4d-row-transposed", six, [1, 576], [1, 0]),
            transposed("reshape-4d-4d-transposed-0312", six, [1, 16, 3, 12], [0, 3, 1, 2]),
            transposed("reshape-4d-4d-transposed-0231", six, [1, 16, 3, 12], [0, 2, 3, 1])],
            kind=ELIMINATE, rule=_eliminates("Reshape", "into-transpose")),
        Family("eliminate-add-into-conv", "Add", [
            add("add-per-channel-after-conv", f32(1, 16, 1, 1, seed=3)),
            add("add-scalar-after-conv", f32(1, value=0.188)),
            add("add-tensor-after-conv", f32(1, 16, 32, 32, seed=3)),
            add("add-per-channel-after-relu", f32(1, 16, 1, 1, seed=3), conv=False),
            affine("affine-bias-after-conv", "bias"), affine("affine-shift-after-conv", "shift"),
            affine("affine-shift-after-conv-identities", "shift", identities=True),
            affine("affine-shift-after-relu", "shift", head="Relu", bias=False),
            affine("affine-shift-after-conv-output-shared", "shift", shared=True)],
            kind=ELIMINATE, rule=_eliminates("Add", "into-conv")),
        Family(mul.id, "Mul", [
            *mul.points, affine("affine-mul-after-conv", "mul"),
            affine("affine-mul-after-conv-identities", "mul", identities=True),
            affine("affine-mul-after-relu", "mul", head="Relu", bias=False)],
            kind=ELIMINATE, rule=mul.rule),
        *identities,
    ]


# --- torch points (the ethos-u sweep) -----------------------------------------------------

TORCH_POINTS = "torch_points"  # npu_gate/calibrate/torch_points.py, copied beside the models it builds
TORCH_X = [1, 16, 32, 32]


def export_torch_point(factory: str, folder: Path, out: Path) -> Path:
    """The gate's own export of ``factory`` (torch_points:NAME), importing a copy of
    torch_points.py placed in ``folder`` (a user file: see torch_points.py)."""
    from npu_gate.probe.factory import export_factory

    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{TORCH_POINTS}.py"
    if not copy.exists():
        shutil.copyfile(Path(__file__).with_name(f"{TORCH_POINTS}.py"), copy)
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


# --- Einsum equations (issue 22) ----------------------------------------------------------

# (id, equation, operand shapes, indices of the operands that are initializers (weights)): the
# equations PyTorch models pass to torch.einsum, as the exporter writes them (it keeps the string,
# spaces included). Sources: attention (scores and weighted values, 3-D and 4-D, lucidrains' spaced
# form), matmuls, SAM's decomposed relative positions (segment_anything image_encoder), MaskFormer's
# mask head, LoFTR's linear attention, ST-GCN's graph convolution, RoPE's outer product, CLIP-style
# logits, and the forms the QNN EP's source names (transpose-all).
EINSUM_POINTS: list[tuple[str, str, list[list[int]], tuple[int, ...]]] = [
    ("attention-scores", "bhqd,bhkd->bhqk", [[1, 2, 8, 16], [1, 2, 8, 16]], ()),
    ("attention-values", "bhqk,bhkd->bhqd", [[1, 2, 8, 8], [1, 2, 8, 16]], ()),
    ("attention-scores-spaced", "b h i d, b h j d -> b h i j", [[1, 2, 8, 16], [1, 2, 8, 16]], ()),
    ("attention-scores-3d", "nqd,nkd->nqk", [[2, 8, 16], [2, 8, 16]], ()),
    ("matmul", "ij,jk->ik", [[8, 16], [16, 4]], ()),
    ("matmul-batched", "bij,bjk->bik", [[2, 8, 16], [2, 16, 4]], ()),
    ("linear-weight", "bnc,ck->bnk", [[1, 8, 16], [16, 4]], (1,)),
    ("logits-transposed", "nc,mc->nm", [[4, 16], [6, 16]], ()),
    ("ellipsis-matmul", "...ij,...jk->...ik", [[2, 2, 8, 16], [2, 2, 16, 4]], ()),
    ("transpose", "ij->ji", [[8, 16]], ()),
    ("reduce-rows", "ij->i", [[8, 16]], ()),
    ("outer-rope", "i,j->ij", [[8], [4]], ()),
    ("dot-rows", "bi,bi->b", [[2, 16], [2, 16]], ()),
    ("uppercase-letters", "bchw,bcHw->bhH", [[1, 4, 8, 8], [1, 4, 6, 8]], ()),
    ("sam-rel-h", "bhwc,hkc->bhwk", [[1, 4, 4, 16], [4, 4, 16]], (1,)),
    ("sam-rel-w", "bhwc,wkc->bhwk", [[1, 4, 4, 16], [4, 4, 16]], (1,)),
    ("maskformer-masks", "bqc,bchw->bqhw", [[1, 10, 16], [1, 16, 8, 8]], ()),
    ("loftr-kv", "nshd,nshv->nhdv", [[1, 8, 2, 16], [1, 8, 2, 16]], ()),
    ("loftr-z", "nlhd,nhd->nlh", [[1, 8, 2, 16], [1, 2, 16]], ()),
    ("loftr-three-inputs", "nlhd,nhdv,nlh->nlhv", [[1, 8, 2, 16], [1, 2, 16, 16], [1, 8, 2]], ()),
    ("stgcn-graph", "nkctv,kvw->nctw", [[1, 3, 4, 8, 5], [3, 5, 5]], (1,)),
    ("transpose-all", "bchq,bkhc->bkhq", [[1, 4, 2, 8], [1, 6, 2, 4]], ()),
]


def einsum_point(pid: str, equation: str, shapes: list[list[int]], weights: tuple[int, ...] = ()) -> Point:
    """One Einsum of ``equation`` over graph inputs x, x1, ... (the operands in ``weights`` are
    initializers w1, w2, ... instead), the node named ``einsum``."""
    names = ["x" if i == 0 else (f"w{i}" if i in weights else f"x{i}") for i in range(len(shapes))]

    def build() -> onnx.ModelProto:
        inputs = {n: ("float32", s) for n, s in zip(names, shapes, strict=True) if not n.startswith("w")}
        inits = {n: f32(*s, seed=i) for i, (n, s) in enumerate(zip(names, shapes, strict=True)) if n.startswith("w")}
        return model([node("Einsum", names, equation=equation)], inputs, inits)
    return Point(f"einsum-{pid}", build)


def einsum_points() -> list[Point]:
    return [einsum_point(*row) for row in EINSUM_POINTS]


# The hypothesis: the forms onnxruntime-qnn's Einsum builder takes (einsum_op_builder.cc: two operands,
# lowercase letters, spaces ignored, each term and the result at least 2 letters), as regular
# expressions over the equation without spaces. A backreference is a letter the form ties to an
# earlier one; the EP compares letters by position only.
EINSUM_FORMS: dict[str, str] = {
    "matmul": r"([a-z]*)([a-z])([a-z]),\1\3([a-z])->\1\2\4",  # ...mk,...kn->...mn (same batch letters)
    "matmul-transposed-b": r"([a-z]*)([a-z])([a-z]),\1([a-z])\3->\1\2\4",  # ...mk,...nk->...mn
    "broadcast-transposed-b": r"([a-z])([a-z])([a-z])([a-z]),\2([a-z])\4->\1\2\3\5",  # bhwc,hkc->bhwk
    "transpose-all": r"([a-z])([a-z])[a-z]([a-z]),\1([a-z])[a-z]\2->\1\4[a-z]\3",  # bchq,bkhc->bkhq
    "reducesum-mul-broadcast": r"([a-z])([a-z])([a-z])([a-z]),\3([a-z])\4->\1\2\3\5",  # bhwc,wkc->bhwk
}
EINSUM_FIX = ("write the contraction as torch.matmul (q @ k.transpose(-2, -1)) or as an einsum of one of the "
              "matmul forms (two operands, the same batch letters in the same places, e.g. bhqd,bhkd->bhqk)")
EINSUM_HYPOTHESIS: list[dict[str, Any]] = [
    {"id": "einsum-equation-forms", "attribute": "equation", "matches": list(EINSUM_FORMS.values()),
     "message": "onnxruntime-qnn's Einsum builder takes two-operand equations of lowercase letters in five forms: "
                "matmul ...mk,...kn->...mn, with B transposed ...mk,...nk->...mn, broadcast bhwc,hkc->bhwk, "
                "transpose-all bchq,bkhc->bkhq and bhwc,wkc->bhwk (spaces ignored); the sweep measured 22 equations "
                "of PyTorch models, not every rank of the matmul forms",
     "fix": EINSUM_FIX},
]
# quantized (the qdq sweep): the reducesum form is refused with 8-bit input ("... for quantized inputs"),
# and no Einsum of two activations was built with 16-bit ones ("Failed to add node")
EINSUM_QDQ_HYPOTHESIS: list[dict[str, Any]] = [
    *EINSUM_HYPOTHESIS,
    {"id": "einsum-equation-forms-8-bit", "when": {"input": 0, "dtype": ["uint8", "int8"]}, "attribute": "equation",
     "matches": [v for k, v in EINSUM_FORMS.items() if k != "reducesum-mul-broadcast"],
     "message": "with 8-bit input the EP refuses the bhwc,wkc->bhwk form (\"Einsum unsupported equation: ... for "
                "quantized inputs\"); int8 activations were not measured, uint8 were",
     "fix": EINSUM_FIX},
    {"id": "einsum-not-16-bit", "input": 0, "dtype": ["float32", "float16", "uint8", "int8"],
     "message": "every Einsum of the sweep with uint16 activations went to CPU (\"Failed to add node\"), the "
                "matmul forms too",
     "fix": "quantize with 8-bit activations (--quantize int8) or keep the Einsum float"},
]


def einsum_family() -> Family:
    return Family("einsum-equations", "Einsum", einsum_points(), EINSUM_HYPOTHESIS,
                  note="the equations PyTorch models pass to torch.einsum: attention, matmuls, SAM, MaskFormer, "
                       "LoFTR, ST-GCN, RoPE, ellipsis, one-operand transposes and reductions")


# --- the sweeps ---------------------------------------------------------------------------

def _tiny_transpose(d: int) -> Point:
    return between(f"transpose-1x2x{d}x4", "Transpose", [1, 2, d, 4], perm=[0, 1, 3, 2])


def tiny() -> list[Family]:
    """Boundaries chosen on purpose, few points: a dim around 8192 (axis 2 only), pads x count_include_pad."""
    return [
        Family("transpose-dim2-around-8192", "Transpose", [_tiny_transpose(8192), _tiny_transpose(8200)],
               [{"id": "transpose-dim2-max-8192", "input": 0, "dim": {"axis": 2, "max": 8192}}]),
        Family("averagepool-pads-count-include-pad", "AveragePool",
               [_pool("AveragePool", 3, 1, 0), _pool("AveragePool", 3, 1, 1), _pool("AveragePool", 3, 0, 0)],
               [{"id": "averagepool-pads-count-include-pad", "any_of": [
                   {"attribute": "count_include_pad", "in": [1]}, {"attribute": "pads", "each": True, "max": 0}],
                   "fix": "use count_include_pad=True (the default) or padding=0 in nn.AvgPool2d"}]),
        Family("relu", "Relu", [single(f"relu-{_dims(X)}", "Relu")]),
        Family("erf", "Erf", [single(f"erf-{_dims(X)}", "Erf")]),
    ]


def add_dtypes_int8() -> Family:
    """``add-dtypes`` with the int8 builds of a float Add. uint8 is the activation type of
    onnxruntime's QDQ form, measured only so: a float Add the compiler quantizes itself, placed
    as its QDQ unit."""
    dtypes = [{"id": "add-input-dtype", "input": 0, "dtype": ["float32", "float16", "int8", "int32", "uint8"],
               "message": "uint8 was measured only as a quantized (QDQ) Add, in the compiler's int8 build"}]
    return Family("add-dtypes", "Add", [_binary("Add", "tensor", d) for d in ("float16", "int8", "int32", "int64")]
                  + [quantized(_binary("Add", kind)) for kind in ("tensor", "scalar")],
                  dtypes, note="input dtypes; the int8 build of a float Add (its QDQ unit reads uint8)")


def quantized_families() -> list[Family]:
    """Ops of the lesson's net (Conv + HardSwish as Add, Clip, Mul, Div) and a Relu in the compiler's
    int8 build (``quantized``); the quantized Add points are in ``add_dtypes_int8``."""
    return [
        Family("conv-int8", "Conv", [quantized(_conv("conv-k3"))], note="int8 build"),
        Family("clip-int8", "Clip", [quantized(single("clip-0-6", "Clip", None,
                                                      {"lo": np.float32(0), "hi": np.float32(6)}, ["lo", "hi"]))],
               note="int8 build"),
        Family("mul-int8", "Mul", [quantized(_binary("Mul", "tensor"))], note="int8 build"),
        Family("div-int8", "Div", [quantized(_binary("Div", "scalar"))], note="int8 build"),
        Family("relu-int8", "Relu", [quantized(single(f"relu-{_dims(X)}", "Relu"))], note="int8 build"),
    ]


def standard() -> list[Family]:
    """The sweep behind the built-in rknn-rk3588 profile."""
    return [*conv_families(), convtranspose_family(), *resize_families(), *pool_families(),
            *reshape_families(plane=False), transpose_family(), slice_family(), slice_axis0_family(), pad_family(),
            *unary_families(), *binary_families(), *rank_families(), *matmul_families(), *recurrent_families(),
            *pattern_families(), *adapter_families(), *cleanup_families()]


def standard_int8() -> list[Family]:
    """The standard sweep with int8 builds (#21): the built-in rknn-rk3588 profile's. Adds the
    quantized points of ``quantized_families`` and ``add_dtypes_int8`` (for a compiler whose plug-in
    builds int8: ``probe --quantize int8``), and issue 20's two Reshape families after the standard
    ones (``standard`` keeps its 372 points, so that qnn-htp-fp16's record still derives),
    ``folding_families`` (the Mul into-conv and Mul identity families extended in place, the others
    after the clean-up), ``issue20_pattern_families`` (the timm set's F.normalize forms and Softmax at
    batch 4) and ``slice_reverse_family`` (captcha-whisperer's reversal of a non-last axis)."""
    folding = {f.id: f for f in folding_families()}
    out: list[Family] = []
    for f in standard():
        out.append(add_dtypes_int8() if f.id == "add-dtypes" else folding.pop(f.id, f))
        if f.id == "reshape-to-rank3-rank4":
            out += reshape_families()[3:]
    return out + list(folding.values()) + issue20_pattern_families() + [slice_reverse_family()] + quantized_families()


def standard_einsum() -> list[Family]:
    """The standard sweep and the Einsum equations (issue 22): the measured qnn-htp-fp16 profile's.
    The standard sweep itself is unchanged, so rknn-rk3588's record still derives."""
    return [*standard(), einsum_family()]


SWEEPS: dict[str, Callable[[], list[Family]]] = {"tiny": tiny, "standard": standard, "standard-int8": standard_int8,
                                                 "standard-einsum": standard_einsum,
                                                 "ethos-u": ethos_u,
                                                 "splits": split_families}  # + qdq: calibrate/__init__
