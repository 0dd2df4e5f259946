"""Conv 3→4 then nn.Hardswish: the exporter writes one HardSwish node.

The example profile runs Add, Clip, Mul and Div but not HardSwish, so the contract asks
for `decompose-hardswish`; the gate applies it, proves it and checks the rewritten graph.
"""

from __future__ import annotations

from torch import nn


class HsNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.act = nn.Hardswish()

    def forward(self, x):  # type: ignore[no-untyped-def]
        return self.act(self.conv(x))


def build_model() -> nn.Module:
    return HsNet()
