"""The issue's Ethos-U constraint net: one op past each Ethos-U55 limit Arm documents (a stride-4
Conv, an 8x8/stride-8 MaxPool, a stride-3 ConvTranspose, a bilinear Resize), between ops every
Ethos-U runs. On U55 the probe reports which of them the compiler leaves on the CPU and why."""

from __future__ import annotations

import torch
from torch import nn


class ConstraintNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.wide = nn.Conv2d(8, 8, 4, stride=4)  # stride 4: U55 takes 1..3
        self.pool = nn.MaxPool2d(8, stride=8)  # 8x8 window, stride 8
        self.up = nn.ConvTranspose2d(8, 8, 3, stride=3)  # stride 3: U55 takes (1,1) or (2,2)
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.stem(x))
        a = self.wide(y)  # 32 -> 8
        b = self.pool(y)  # 32 -> 4
        b = nn.functional.interpolate(b, scale_factor=2.0, mode="bilinear", align_corners=False)  # 4 -> 8
        c = self.up(a + b)  # 8 -> 24
        return self.head(c)


def build_model() -> nn.Module:
    return ConstraintNet()
