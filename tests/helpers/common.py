"""What the tests share besides fixtures: the repository root, the record of an in-process CLI
run (the ``run_cli`` fixture's result) and the schema checks of result documents."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from npu_gate.resources import load_schema

if TYPE_CHECKING:
    import onnx

REPO = Path(__file__).resolve().parents[2]


@dataclass
class CliRun:
    code: int
    out: str
    err: str


RunCli = Callable[..., CliRun]
"""The ``run_cli`` fixture: runs ``npu_gate.cli.main`` on its arguments (each turned into a string)."""

Golden = Callable[[str, str], None]
"""The ``golden`` fixture: ``golden(name, text)`` compares ``text`` with tests/golden/<name>."""


class SaveModel(Protocol):
    """The ``save_model`` fixture: writes a model into the test's tmp_path, returns its path."""

    def __call__(self, model: onnx.ModelProto, name: str = ...) -> Path: ...


class WriteContract(Protocol):
    """The ``write_contract`` fixture: writes a contract document as JSON into tmp_path, returns its path."""

    def __call__(self, doc: dict[str, Any], name: str = ...) -> Path: ...


def export_net(source: str, path: Path, *, dynamo: bool, opset: int) -> Path:
    """Export the ``Net`` that ``source`` defines, on a 1x4x8x8 input, to ``path`` (the exporter's
    warnings silenced). Needs torch."""
    import warnings

    import torch

    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(namespace["Net"]().eval(), (torch.randn(1, 4, 8, 8),), str(path), dynamo=dynamo,
                          opset_version=opset, verbose=False)
    return path


def schema_errors(doc: Any, name: str) -> list[str]:
    """``doc``'s violations of schemas/<name>.schema.json, one line each (the schemas refer to each other)."""
    from jsonschema import Draft202012Validator

    from npu_gate.validation import schema_registry

    validator = Draft202012Validator(load_schema(name), registry=schema_registry())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def validate_result(doc: dict[str, Any]) -> None:
    """Fail the test if ``doc`` does not match schemas/result.schema.json."""
    errors = schema_errors(doc, "result")  # stages.probe: probe's schema
    assert not errors, "\n".join(errors)


def validate_merged(doc: dict[str, Any]) -> None:
    """Fail the test if ``doc`` does not match schemas/merged.schema.json (`merge --json`)."""
    errors = schema_errors(doc, "merged")
    assert not errors, "\n".join(errors)


def validate_diff(doc: dict[str, Any]) -> None:
    """Fail the test if ``doc`` does not match schemas/diff.schema.json."""
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator(load_schema("diff")).iter_errors(doc))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def probe_venv(venv: Path, compiler: str, what: str) -> Path:
    """``venv`` when it is a complete ``npu-gate probe setup COMPILER`` venv, else the test SKIPS with
    the reason (tests that need a real compiler never pass without it)."""
    import json

    import pytest

    manifest = venv / "npu-gate-probe.json"
    if not manifest.exists():
        pytest.skip(f"no {what} venv at {venv}: create it with `npu-gate probe setup {compiler} {venv}`")
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    if not doc.get("complete") or doc.get("compiler") != compiler:
        pytest.skip(f"{venv} is not a complete {compiler} probe venv (setup failed?): {doc}")
    return venv
