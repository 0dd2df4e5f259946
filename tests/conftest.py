"""Shared fixtures: run the CLI in-process, write contracts and models, compare with golden files.

What tests import (REPO, CliRun, the schema checks, model builders) lives in tests/helpers/."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

from npu_gate.cli import main
from tests.helpers.common import REPO, CliRun, Golden, RunCli, SaveModel, WriteContract


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite golden files under tests/golden/ from the current output")


# Nothing the tool runs may write into the folder it is started from (a user's repository):
# the suite runs from the repo root, so a stray file there fails the run.
_TOLERATED = {".pytest_cache", "__pycache__", ".venv-rknn", ".venv-qnn", ".coverage"}
_started_with: set[str] = set()


def pytest_sessionstart(session: pytest.Session) -> None:
    _started_with.update(p.name for p in Path.cwd().iterdir())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stray = sorted({p.name for p in Path.cwd().iterdir()} - _started_with - _TOLERATED)
    if stray:
        print(f"\ntests left files in {Path.cwd()}: {', '.join(stray)}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    def run(*args: str) -> CliRun:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run


@pytest.fixture
def save_model(tmp_path: Path) -> SaveModel:
    def save(model: onnx.ModelProto, name: str = "model.onnx") -> Path:
        path = tmp_path / name
        path.write_bytes(model.SerializeToString())
        return path

    return save


@pytest.fixture
def write_contract(tmp_path: Path) -> WriteContract:
    def write(doc: dict[str, Any], name: str = "npu-gate.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        return path

    return write


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """Compare text with tests/golden/<name>; rewrite it with --update-goldens."""
    update = request.config.getoption("--update-goldens")

    def check(name: str, text: str) -> None:
        path = REPO / "tests" / "golden" / name
        if update or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if not update:
                pytest.fail(f"golden file {name} was missing and has been written; rerun")
        assert text == path.read_text(encoding="utf-8"), (
            f"{name} differs from the golden file; rerun with --update-goldens if intended")

    return check


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty result cache: `check` caches by default, and a hit
    left by another test (or the developer's ~/.cache) must never change an output."""
    folder = tmp_path_factory.mktemp("npu-gate-cache")
    monkeypatch.setenv("NPU_GATE_CACHE_DIR", str(folder))
    return folder
