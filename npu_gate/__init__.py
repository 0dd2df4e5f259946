"""npu_gate: a CI gate for deploying PyTorch/ONNX models to NPUs."""

from __future__ import annotations

__version__ = "0.1.0"  # the one version string; pyproject.toml must agree (tests check it)

__all__ = ["__version__"]
