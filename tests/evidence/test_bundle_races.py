"""Bundle publishing under concurrency and interrupts (issue 17, item 8): two runs publishing
the same --out take turns; SIGTERM and SIGINT remove the staging folder and say "interrupted"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from npu_gate.evidence import bundle
from tests.helpers.common import REPO
from tests.helpers.hook_fixtures import write_onnx_contract

ENV = os.environ | {"PYTHONPATH": str(REPO)}


def _fill(stage: Path, tag: str) -> None:
    (stage / "tag.txt").write_text(tag, encoding="utf-8")
    manifest = {"bundle": {"kind": bundle.BUNDLE_KIND, "files": [bundle.MARKER, "tag.txt"]}}
    (stage / bundle.MARKER).write_text(json.dumps(manifest), encoding="utf-8")


def test_many_publishers_of_one_folder_take_turns(tmp_path: Path) -> None:
    out = tmp_path / "out"
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def publish(tag: str) -> None:
        try:
            with bundle.staged(out) as stage:
                _fill(stage, tag)
                start.wait()
        except BaseException as exc:  # reported below
            errors.append(exc)

    for round_ in range(10):
        threads = [threading.Thread(target=publish, args=(f"{round_}-{i}",)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert (out / "tag.txt").read_text(encoding="utf-8").startswith(f"{round_}-")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no .partial, no .old


@pytest.mark.slow
def test_two_checks_with_the_same_out_at_once(tmp_path: Path) -> None:
    contract = write_onnx_contract(tmp_path / "c")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "npu_gate", "check", str(contract), "--out", str(out), "-q"]
    for _ in range(5):
        runs = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
                for _ in range(2)]
        for run in runs:
            _, err = run.communicate(timeout=120)
            assert run.returncode == 0, err
        assert (out / bundle.MARKER).is_file()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "out"]


# inspect_model finishes, says so in READY and then waits: the signal arrives while the bundle
# is staged and not yet published.
_RUNNER = """
import pathlib, sys, time
import npu_gate.pipeline as pipeline
real = pipeline.inspect_model
def waiting(*args, **kwargs):
    result = real(*args, **kwargs)
    pathlib.Path(sys.argv[1]).write_text("ready")
    time.sleep(60)
    return result
pipeline.inspect_model = waiting
from npu_gate.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_removes_the_staging_folder_and_says_interrupted(tmp_path: Path, sig: int, code: int) -> None:
    write_onnx_contract(tmp_path / "c")
    ready = tmp_path / "ready"
    work = tmp_path / "work"
    work.mkdir()
    run = subprocess.Popen([sys.executable, "-c", _RUNNER, str(ready), "inspect", str(tmp_path / "c" / "model.onnx"),
                            "--out", str(work / "out"), "-q"], stderr=subprocess.PIPE, text=True, env=ENV, cwd=work)
    deadline = time.monotonic() + 60
    while not ready.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), run.communicate(timeout=10)[1]
    assert any(p.name.endswith(".partial") for p in work.iterdir())
    run.send_signal(sig)
    _, err = run.communicate(timeout=60)
    assert run.returncode == code
    assert err == "npu-gate: interrupted\n"
    assert list(work.iterdir()) == []  # neither the staging folder nor a bundle
