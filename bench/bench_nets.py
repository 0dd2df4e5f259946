"""The small nets of bench/probe_agreement.py, in a module of their own (torch only): a compiler
that lowers the PyTorch module itself (``--compiler ethos-u``) imports them in its own venv, which
has no npu_gate. Each class builds with no arguments."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "seed-hardswish"))

from seed_net import SeedNet


class ResBlock(nn.Module):
    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        return torch.relu(x + self.body(x))


class MobileBlock(nn.Module):
    """Depthwise conv, Hardswish, squeeze-excite with Hardsigmoid."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(3, c, 1), nn.BatchNorm2d(c), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c), nn.BatchNorm2d(c), nn.Hardswish())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, 4, 1), nn.ReLU(), nn.Conv2d(4, c, 1),
                                nn.Hardsigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.dw(self.expand(x))
        y: torch.Tensor = x * self.se(x)
        return y


class SiluUNet(nn.Module):
    """SiLU (exported as Sigmoid + Mul), MaxPool, nearest Upsample, Concat skip."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.SiLU())
        self.mid = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(c, c, 3, padding=1), nn.SiLU(),
                                 nn.Upsample(scale_factor=2, mode="nearest"))
        self.out = nn.Conv2d(2 * c, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.down(x)
        y: torch.Tensor = self.out(torch.cat([d, self.mid(d)], dim=1))
        return y


class TinyTransformer(nn.Module):
    """One pre-norm encoder block on [1, 16, 32] tokens: LayerNorm, attention, GELU MLP."""

    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        attn = torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, dim=-1)
        x = x + self.proj(attn @ v)
        y: torch.Tensor = x + self.mlp(self.norm2(x))
        return y


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))
        return y


NETS: dict[str, tuple[type[nn.Module], tuple[int, ...]]] = {
    "lesson SeedNet": (SeedNet, (1, 3, 16, 16)),
    "ResBlock": (ResBlock, (1, 3, 32, 32)),
    "MobileBlock (Hardswish, SE)": (MobileBlock, (1, 3, 32, 32)),
    "SiLU U-Net": (SiluUNet, (1, 3, 32, 32)),
    "TinyTransformer": (TinyTransformer, (1, 16, 32)),
    "Classifier (GAP + Linear)": (Classifier, (1, 3, 32, 32)),
}
