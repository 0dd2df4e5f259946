"""Conv (kernel, stride, dilation, groups, channel counts) and ConvTranspose (kernel x stride)."""

from __future__ import annotations

from npu_gate.calibrate.sweeps.builders import Family, Point, f32, single


def conv_point(pid: str, cin: int = 16, cout: int = 16, k: int = 3, stride: int = 1, dilation: int = 1,
          group: int = 1) -> Point:
    """A k x k Conv from x [1, cin, 32, 32] to cout channels, padded by dilation * (k - 1) // 2 on every side."""
    pad = dilation * (k - 1) // 2
    return single(pid, "Conv", {"x": ("float32", [1, cin, 32, 32])},
                  {"w": f32(cout, cin // group, k, k), "b": f32(cout)}, ["w", "b"], kernel_shape=[k, k],
                  strides=[stride, stride], dilations=[dilation, dilation], group=group, pads=[pad] * 4)


def conv_families() -> list[Family]:
    kernels = [conv_point(f"conv-k{k}", k=k) for k in (1, 2, 3, 5, 7, 11)]
    strides = [conv_point(f"conv-k3-s{s}", stride=s) for s in (2, 3, 4)]
    dilations = [conv_point(f"conv-k3-d{d}", dilation=d) for d in (2, 3)]
    groups = [conv_point("conv-depthwise-16", group=16), conv_point("conv-groups-2", group=2),
              conv_point("conv-groups-4", group=4), conv_point("conv-groups-8", group=8),
              conv_point("conv-depthwise-k5-s2", k=5, stride=2, group=16)]
    channels = [conv_point(f"conv-cin{c}-cout{c}", cin=c, cout=c) for c in (3, 7, 8, 9, 15, 17, 24, 33)]
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
