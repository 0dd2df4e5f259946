"""The lesson's teaching net: Conv 3→4 (3x3, padding 1) then HardSwish written by hand.

``x * clamp(x + 3, 0, 6) / 6`` is HardSwish decomposed into Add, Clip, Mul and Div; under
the `demo` profile the Clip falls back to CPU and splits the graph into two NPU partitions.
"""

from __future__ import annotations

import torch
from torch import nn


class SeedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        return x * torch.clamp(x + 3, 0, 6) / 6


def build_model() -> nn.Module:
    return SeedNet()
