"""A compiler venv a contract names decides only when `npu-gate probe setup` made it (issue 43,
item 8): a folder of the pull request with an empty ``onnxruntime_qnn-2.7.0.dist-info`` and a
``bin/python`` that replays a build where every node ran on the HTP is refused, exit 2, and the
gate does not pass on it with ``decide: measured``. A venv given on the command line
(``probe --venv``) is the user's choice and is not checked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from npu_gate.probe import get_compiler
from npu_gate.probe.setup_env import MANIFEST, venv_problem
from tests.helpers.common import REPO, RunCli
from tests.helpers.probe_venvs import setup_like_venv

RECORDED = REPO / "tests" / "fixtures" / "qnn" / "opset20"  # one Relu, built by onnxruntime-qnn 2.7.0 on the HTP
FORGER = f'''\
#!/usr/bin/env python3
# a forged "compiler": replays a recorded build where every node ran on the HTP
import shutil, sys
sys.stdout.write(open({str(RECORDED / "work" / "attempt-1" / "compiler.log")!r}).read())
shutil.copy({str(RECORDED / "work" / "attempt-1" / "assignment.json")!r}, "assignment.json")
shutil.copy({str(RECORDED / "work" / "attempt-1" / "response.json")!r}, sys.argv[-1])
'''


def _forged_venv(folder: Path) -> Path:
    """The issue's venv: an empty dist-info of the pinned version and a fake interpreter."""
    (folder / "lib" / "python3.11" / "site-packages" / "onnxruntime_qnn-2.7.0.dist-info").mkdir(parents=True)
    (folder / "bin").mkdir()
    (folder / "bin" / "python").write_text(FORGER, encoding="utf-8")
    (folder / "bin" / "python").chmod(0o755)
    return folder


def _contract(folder: Path) -> Path:
    shutil.copyfile(RECORDED / "model.onnx", folder / "model.onnx")
    doc = {"name": "relu", "model": {"onnx": "model.onnx"},
           "inputs": [{"name": "x", "shape": [1, 4, 8, 8], "dtype": "float32"}],
           # the demo profile has no Relu: the prediction puts the one node on CPU
           "target": {"profile": "demo", "probe": {"compiler": "qnn", "target": "htp", "venv": "venv-qnn",
                                                   "decide": "measured"}},
           "gates": {"max_cpu_nodes": 0}}
    (folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder / "npu-gate.json"


def test_the_forged_venv_of_the_issue_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    _forged_venv(tmp_path / "venv-qnn")
    contract = _contract(tmp_path)
    run = run_cli("check", contract, "--no-cache", "--json", tmp_path / "out.json")
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: {contract}: target.probe.venv: {tmp_path / 'venv-qnn'}: not a compiler "
                       f"venv made by `npu-gate probe setup`: no complete {MANIFEST} (not made by `npu-gate probe "
                       "setup`)\n")
    assert not (tmp_path / "out.json").exists()


def test_the_same_driver_given_on_the_command_line_is_the_users_choice(run_cli: RunCli, tmp_path: Path) -> None:
    """What the forger's interpreter would have decided: `probe --venv` runs it (the user named it)."""
    venv = _forged_venv(tmp_path / "venv-qnn")
    run = run_cli("probe", RECORDED / "model.onnx", "--compiler", "qnn", "--target", "htp", "--venv", venv,
                  "--inputs", "x:1,4,8,8", "--json", tmp_path / "probe.json")
    assert run.code == 0, run.err
    doc = json.loads((tmp_path / "probe.json").read_text(encoding="utf-8"))
    assert [(n["name"], n["actual"]) for n in doc["nodes"]] == [("relu", "npu")]


@pytest.mark.parametrize(("forgery", "problem"), [
    ("manifest", "onnxruntime-qnn 2.7.0: no RECORD in its .dist-info (not installed by pip)"),
    ("record", "onnxruntime-qnn 2.7.0: onnxruntime_qnn/__init__.py is missing or not the file pip installed"),
    ("version", "onnxruntime-qnn 2.6.0 is installed there, the plug-in pins 2.7.0"),
    ("interpreter", "bin/python is a file of the venv, not the interpreter `python -m venv` links to"),
    ("compiler", f"{MANIFEST} is for another compiler or setup"),
])
def test_a_forged_manifest_or_package_is_refused(tmp_path: Path, forgery: str, problem: str) -> None:
    venv = setup_like_venv(tmp_path / "venv-qnn", "qnn", "2.6.0" if forgery == "version" else "2.7.0")
    site = venv / "lib" / "python3.11" / "site-packages"
    if forgery == "manifest":  # a manifest copied in, beside an empty dist-info
        (site / "onnxruntime_qnn-2.7.0.dist-info" / "RECORD").unlink()
    elif forgery == "record":
        (site / "onnxruntime_qnn" / "__init__.py").write_text("FORGED = True\n", encoding="utf-8")
    elif forgery == "interpreter":
        (venv / "bin" / "python").unlink()
        (venv / "bin" / "python").write_text(FORGER, encoding="utf-8")
    elif forgery == "compiler":
        doc = json.loads((venv / MANIFEST).read_text(encoding="utf-8"))
        (venv / MANIFEST).write_text(json.dumps({**doc, "compiler": "rknn"}), encoding="utf-8")
    found = venv_problem(get_compiler("qnn"), venv)
    assert found is not None and found.replace(str(venv) + os.sep, "").startswith(problem)


def test_a_venv_as_probe_setup_leaves_it_is_accepted(tmp_path: Path) -> None:
    assert venv_problem(get_compiler("qnn"), setup_like_venv(tmp_path / "venv-qnn", "qnn", "2.7.0")) is None
    assert venv_problem(get_compiler("fake"), tmp_path / "anything") is None  # the fake runs no venv


def test_a_venv_committed_to_the_repository_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    """Even with every file consistent: git tracks it, so the pull request wrote it; `probe setup`
    refuses to reuse (or replace) it too."""
    if shutil.which("git") is None:
        pytest.skip("no git on this machine")
    venv = setup_like_venv(tmp_path / "venv-qnn", "qnn", "2.7.0")
    assert venv_problem(get_compiler("qnn"), venv) is None
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "venv-qnn/npu-gate-probe.json"], check=True)
    assert venv_problem(get_compiler("qnn"), venv) == (
        f"{venv / MANIFEST} is tracked by git: a compiler venv is made by `npu-gate probe setup`, not committed")
    run = run_cli("probe", "setup", "qnn", venv)
    assert (run.code, run.err) == (2, f"npu-gate: error: {venv}: {venv / MANIFEST} is tracked by git; a compiler "
                                      "venv is made here, not committed: choose a folder outside the repository's "
                                      "files\n")
    assert (venv / MANIFEST).is_file()  # nothing removed
