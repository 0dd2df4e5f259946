"""The suite's own slow check (tests/conftest.py): an unmarked test over the limit fails with its
figure, a marked one passes, a quick one passes, and ``inf`` turns the check off. Run in a child
pytest over a folder whose conftest takes the repository's hooks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import REPO

CONFTEST = """from tests.conftest import (pytest_collection_modifyitems, pytest_runtest_call,
                            pytest_runtest_makereport, pytest_runtest_setup)
"""

TESTS = """import time

import pytest


def busy(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_unmarked_busy():
    busy(0.4)


@pytest.mark.slow
def test_marked_busy():
    busy(0.4)


def test_quick():
    pass
"""


def run_child(tmp_path: Path, limit: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_marks_child.py").write_text(TESTS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NPU_GATE_SLOW_TEST_SECONDS": limit}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-rf", "-o", "markers=slow", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # a child pytest importing the suite's conftest: 2-4 s
def test_an_unmarked_test_over_the_limit_fails_naming_its_figure(tmp_path: Path) -> None:
    child = run_child(tmp_path, "0.2")
    assert child.returncode == 1, child.stdout + child.stderr
    failed = [line for line in child.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1, child.stdout
    assert "test_unmarked_busy" in failed[0]
    assert "NPU_GATE_SLOW_TEST_SECONDS=0.2) but is not marked `slow`" in child.stdout
    assert "2 passed" in child.stdout


@pytest.mark.slow
def test_inf_turns_the_check_off(tmp_path: Path) -> None:
    child = run_child(tmp_path, "inf")
    assert child.returncode == 0, child.stdout + child.stderr
    assert "3 passed" in child.stdout
