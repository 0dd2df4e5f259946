"""Versions of the tools a result depends on, read from package metadata: reporting torch's
version must not import torch. Results (``versions``), cache keys and the evidence bundle
all use these."""

from __future__ import annotations

import platform
from importlib import metadata
from typing import Any

from npu_gate import __version__

# Packages whose versions appear in a result and can change it.
TOOLS = ("torch", "onnx", "onnxruntime", "onnxscript")


def installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def tool_versions() -> dict[str, Any]:
    return {"python": platform.python_version(), "npu_gate": __version__, **{name: installed(name) for name in TOOLS}}
