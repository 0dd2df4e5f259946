"""A mobilenet_v3_small-style classifier built in code (no download): a stride-2 stem with
Hardswish, inverted residual blocks (1x1 expand, depthwise 3x3 or 5x5, squeeze-excite with
Hardsigmoid, 1x1 project, residual add when shapes allow), then global pooling and a classifier.
Every op is one Ethos-U55 runs: the probe should leave nothing on the CPU."""

from __future__ import annotations

import torch
from torch import nn


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeezed: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.relu(self.fc1(self.pool(x)))
        return x * nn.functional.hardsigmoid(self.fc2(s))


class Block(nn.Module):
    def __init__(self, cin: int, expand: int, cout: int, kernel: int, stride: int, se: bool, hswish: bool) -> None:
        super().__init__()
        act: type[nn.Module] = nn.Hardswish if hswish else nn.ReLU
        self.expand = nn.Sequential(nn.Conv2d(cin, expand, 1, bias=False), nn.BatchNorm2d(expand), act())
        self.depthwise = nn.Sequential(
            nn.Conv2d(expand, expand, kernel, stride, kernel // 2, groups=expand, bias=False),
            nn.BatchNorm2d(expand), act())
        self.se = SqueezeExcite(expand, max(8, expand // 4)) if se else nn.Identity()
        self.project = nn.Sequential(nn.Conv2d(expand, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.residual else y


class MobileNetV3SmallLike(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(
            Block(16, 16, 16, 3, 2, se=True, hswish=False),
            Block(16, 72, 24, 3, 2, se=False, hswish=False),
            Block(24, 88, 24, 3, 1, se=False, hswish=False),
            Block(24, 96, 40, 5, 2, se=True, hswish=True),
            Block(40, 240, 40, 5, 1, se=True, hswish=True),
            Block(40, 120, 48, 5, 1, se=True, hswish=True),
            Block(48, 288, 96, 5, 2, se=True, hswish=True),
        )
        self.last = nn.Sequential(nn.Conv2d(96, 576, 1, bias=False), nn.BatchNorm2d(576), nn.Hardswish())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(576, 256), nn.Hardswish(), nn.Linear(256, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.last(self.blocks(self.stem(x)))
        return self.classifier(torch.flatten(self.pool(x), 1))


def build_model() -> nn.Module:
    return MobileNetV3SmallLike()
