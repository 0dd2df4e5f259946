"""Files that ship with npu_gate: JSON Schemas and built-in profiles."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMA_NAMES = ("contract", "profile", "result", "merged", "diff", "probe", "calibration")


def schema_dir() -> Path:
    """The folder holding the JSON Schemas.

    In a wheel they are packaged as ``npu_gate/schemas``; in a source checkout
    (editable install, running from the repo) they are the repository's ``schemas/``.
    """
    packaged = Path(str(resources.files("npu_gate"))) / "schemas"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "schemas"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """Load one of the bundled JSON Schemas by short name (see ``SCHEMA_NAMES``)."""
    if name not in SCHEMA_NAMES:
        raise KeyError(name)
    with open(schema_dir() / f"{name}.schema.json", encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


def profile_dir() -> Path:
    """The folder of built-in target profiles (``npu_gate/profiles/<name>.json``)."""
    return Path(str(resources.files("npu_gate"))) / "profiles"


def builtin_profile_names() -> list[str]:
    """Profiles only: a calibration record (``<name>.calibration.json``) sits beside its profile."""
    return sorted(p.stem for p in profile_dir().glob("*.json") if not p.stem.endswith(".calibration"))
