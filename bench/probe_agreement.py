"""Predicted vs actual on a handful of small exported nets: npu_gate's profile vs RKNN-Toolkit2.

    python bench/probe_agreement.py [--venv .venv-rknn] [--profile demo] [--out DIR]

Exports each net with the torchscript exporter (opset 17, default PyTorch init, eval mode),
probes it with the real toolkit (rk3588) and prints one Markdown row per net: nodes, how the
compiler placed them, its NPU/CPU segments against the profile's partitions, and the share of
nodes where prediction and compiler agree. Needs torch here and `npu-gate probe setup rknn`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "seed-hardswish"))

from seed_net import SeedNet  # noqa: E402

from npu_gate.probe import get_compiler  # noqa: E402
from npu_gate.probe.runner import probe  # noqa: E402
from npu_gate.profile import load_profile  # noqa: E402


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
        return x * self.se(x)


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
        return self.out(torch.cat([d, self.mid(d)], dim=1))


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
        return x + self.mlp(self.norm2(x))


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


NETS: dict[str, tuple[type[nn.Module], tuple[int, ...]]] = {
    "lesson SeedNet": (SeedNet, (1, 3, 16, 16)),
    "ResBlock": (ResBlock, (1, 3, 32, 32)),
    "MobileBlock (Hardswish, SE)": (MobileBlock, (1, 3, 32, 32)),
    "SiLU U-Net": (SiluUNet, (1, 3, 32, 32)),
    "TinyTransformer": (TinyTransformer, (1, 16, 32)),
    "Classifier (GAP + Linear)": (Classifier, (1, 3, 32, 32)),
}


def export(net: nn.Module, shape: tuple[int, ...], path: Path) -> None:
    torch.manual_seed(0)
    torch.onnx.export(net.eval(), (torch.rand(shape),), str(path), input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv", default=str(ROOT / ".venv-rknn"))
    parser.add_argument("--profile", default="demo")
    parser.add_argument("--out", help="keep the exported models and probe JSON here")
    args = parser.parse_args()
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        run(Path(args.venv), args.profile, Path(args.out))
    else:
        with tempfile.TemporaryDirectory(prefix="npu-gate-agreement-") as out:
            run(Path(args.venv), args.profile, Path(out))


def run(venv: Path, profile_name: str, out: Path) -> None:
    compiler = get_compiler("rknn")
    profile = load_profile(profile_name)
    print(f"| net | nodes | actual npu / cpu / split / fused / folded | compiler NPU / CPU segments | "
          f"profile `{profile_name}` NPU / CPU partitions | agreement |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, (cls, shape) in NETS.items():
        torch.manual_seed(0)
        path = out / (name.split()[0].lower() + ".onnx")
        export(cls(), shape, path)
        result = probe(path, compiler, "rk3588", compiler.python(venv), profile=profile)
        path.with_suffix(".probe.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        s = result.summary
        if not s:
            print(f"| {name} | {len(result.nodes)} | {result.status}: {result.error} | | | |")
            continue
        a = s["actual"]
        print(f"| {name} | {s['nodes']} | {a['npu']} / {a['cpu']} / {a['split']} / {a['fused']} / {a['folded']} | "
              f"{s['npu_segments']} / {s['cpu_segments']} | {s['predicted_npu_partitions']} / "
              f"{s['predicted_cpu_partitions']} | {s['agree']}/{s['compared']} ({s['agreement_rate']:.0%}) |")


if __name__ == "__main__":
    main()
