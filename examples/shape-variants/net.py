"""A small net with the two shape computations the lesson warns about.

``F.interpolate(z, size=y.shape[-2:])`` exports as Shape → Slice → Concat → Resize, and
``out.view(out.size(0), -1)`` as Shape → Gather → Unsqueeze → Concat → Reshape. With
static input shapes both fold; with a dynamic batch the view's chain stays.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ShapeNet(nn.Module):
    def __init__(self, mode: str = "nearest") -> None:
        super().__init__()
        self.mode = mode
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        z = torch.relu(self.conv2(y))
        z = F.interpolate(z, size=y.shape[-2:], mode=self.mode)
        out = y + z
        return out.view(out.size(0), -1)


def build_model(mode: str = "nearest") -> nn.Module:
    return ShapeNet(mode)
