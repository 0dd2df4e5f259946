"""Torch modules of the ``ethos-u`` calibration sweep: one op each, input [1, 16, 32, 32].

Standalone on purpose (it imports torch only, lazily): the Ethos-U probe lowers the PyTorch module
in the compiler's own venv, which has no npu_gate. ``profile calibrate`` copies this file into its
work folder and both the gate's export and the driver import ``torch_points:NAME`` from the copy,
so the stack traces that tie the lowered nodes to the ONNX nodes name a user file (frames inside
npu_gate are library frames). Each op is a submodule ``op`` of a wrapper, as in a network.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CHANNELS = 16


def _wrapped(make: Callable[[Any], Any]) -> Any:
    """A module whose forward calls ``make(nn)`` as its submodule ``op``."""
    import torch
    from torch import nn

    class One(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.op = make(nn)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y: torch.Tensor = self.op(x)
            return y

    return One()


def _conv(k: int, s: int, p: int, groups: int = 1) -> Callable[[], Any]:
    return lambda: _wrapped(lambda nn: nn.Conv2d(CHANNELS, CHANNELS, k, stride=s, padding=p, groups=groups))


def _conv_transpose(k: int, s: int) -> Callable[[], Any]:
    return lambda: _wrapped(lambda nn: nn.ConvTranspose2d(CHANNELS, CHANNELS, k, stride=s))


def _max_pool(k: int, s: int, p: int) -> Callable[[], Any]:
    return lambda: _wrapped(lambda nn: nn.MaxPool2d(k, stride=s, padding=p))


def _resize(mode: str, scale: float) -> Callable[[], Any]:
    align = False if mode == "bilinear" else None
    return lambda: _wrapped(lambda nn: nn.Upsample(scale_factor=scale, mode=mode, align_corners=align))


FACTORIES: dict[str, Callable[[], Any]] = {
    "conv_k3_s1_p1": _conv(3, 1, 1),
    "conv_k3_s2_p1": _conv(3, 2, 1),
    "conv_k3_s3_p1": _conv(3, 3, 1),
    "conv_k4_s4_p0": _conv(4, 4, 0),
    "conv_k5_s4_p2": _conv(5, 4, 2),
    "dwconv_k3_s2_p1": _conv(3, 2, 1, groups=CHANNELS),
    "dwconv_k4_s4_p0": _conv(4, 4, 0, groups=CHANNELS),
    "maxpool_k2_s2_p0": _max_pool(2, 2, 0),
    "maxpool_k3_s3_p0": _max_pool(3, 3, 0),
    "maxpool_k8_s8_p0": _max_pool(8, 8, 0),
    "maxpool_k5_s4_p2": _max_pool(5, 4, 2),
    "convtranspose_k2_s2": _conv_transpose(2, 2),
    "convtranspose_k3_s3": _conv_transpose(3, 3),
    "resize_bilinear_2x": _resize("bilinear", 2.0),
    "resize_bilinear_4x": _resize("bilinear", 4.0),
    "resize_nearest_2x": _resize("nearest", 2.0),
    "resize_nearest_4x": _resize("nearest", 4.0),
}


def __getattr__(name: str) -> Callable[[], Any]:
    """``torch_points:NAME`` is FACTORIES[NAME] (how --factory imports it)."""
    try:
        return FACTORIES[name]
    except KeyError:
        raise AttributeError(name) from None
