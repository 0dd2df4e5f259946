"""Regenerate diffs/ from the checked-in variants (no torch needed):

    python make_diffs.py

Runs ``npu-gate diff A B`` from this folder (so the reports name the files relatively)
under the demo profile. tests/cross_cutting/test_examples_shape_variants.py checks that the
output is identical to what is checked in.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (A, B, report name): static vs dynamic batch, and nearest vs bilinear interpolation.
DIFFS = (
    ("static.onnx", "dynamic-batch.onnx", "static-vs-dynamic-batch"),
    ("static.onnx", "bilinear.onnx", "nearest-vs-bilinear"),
)


def generate(out_dir: Path) -> list[Path]:
    """Write <name>.md and <name>.json for each diff into ``out_dir``; returns the files."""
    from npu_gate.cli import main

    written = []
    cwd = Path.cwd()
    os.chdir(HERE)
    try:
        for a, b, name in DIFFS:
            md, js = out_dir / f"{name}.md", out_dir / f"{name}.json"
            code = main(
                ["diff", a, b, "--profile", "demo", "--markdown", str(md), "--json", str(js), "-q"]
            )
            if code not in (0, 1):
                raise SystemExit(f"npu-gate diff {a} {b} exited {code}")
            written += [md, js]
    finally:
        os.chdir(cwd)
    return written


if __name__ == "__main__":
    sys.exit(0 if generate(HERE / "diffs") else 1)
