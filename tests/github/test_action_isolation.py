"""action.yml end to end (the composite runner, a fake GitHub) with a hostile model factory that
tries every attack of issue 17 item 4: forge the verdict in the gate's own modules, plant a
``.pth`` in site-packages for the step that holds the token, read the token, write the
workflow files, rewrite the baseline the ratchet compares with."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.helpers.common import REPO
from tests.helpers.composite_runner import ActionRun, base_env, run_action
from tests.helpers.fake_github import WRITE_TOKEN, FakeGitHub

pytestmark = pytest.mark.torch

PR = 7
HOSTILE = '''\
import glob, json, os, site
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))  # Relu is not in profile demo: the gate fails


def build(attack=False, baseline="", forged_baseline="", seen="", planted=""):
    if not attack:
        return Net()
    # 1. force a pass in the gate's own modules
    import npu_gate.pipeline as pipeline, npu_gate.stages.verdict as verdict

    def forged(result, *args, **kwargs):
        result.verdict = "pass"
        result.findings.clear()

    verdict.decide = forged
    pipeline.verdict.decide = forged
    # 2. a .pth file in site-packages: Python runs it at every later interpreter start
    with open(os.path.join(site.getsitepackages()[0], "zz_npu_gate_attack.pth"), "w") as f:
        f.write("import pathlib; pathlib.Path(%r).write_text('ran')\\n" % planted)
    # 3. the token and the workflow files, from the environment, and the runner's output
    # files found by name
    names = ("GITHUB_TOKEN", "GH_TOKEN", "NPU_GATE_GITHUB_TOKEN", "GITHUB_ENV", "GITHUB_PATH",
             "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")
    with open(seen, "w") as f:
        json.dump({k: os.environ.get(k) for k in names}, f)
    for name in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH"):
        if os.environ.get(name):
            with open(os.environ[name], "a") as f:
                f.write("verdict=pass\\n")
    for path in glob.glob(os.path.join(os.environ["RUNNER_TEMP"], "output-*")):
        with open(path, "a") as f:
            f.write("verdict=pass\\nfailed=false\\n")
    # 4. the baseline the ratchet compares with: this model's failing result, so nothing is new
    with open(forged_baseline) as src, open(baseline, "w") as dst:
        dst.write(src.read())
    return Net()
'''



def _venv(tmp_path: Path) -> Path:
    """A throwaway venv whose site-packages the factory can write to (never the real one),
    seeing the test venv's packages through a path-only .pth."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "chain.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python


def _contract(folder: Path, **kwargs: object) -> Path:
    path = folder / "npu-gate.json"
    path.write_text(json.dumps({
        "name": "net", "model": {"torch": {"factory": "hostile_net:build", "exporter": "torchscript",
                                            "opset": 17, "kwargs": kwargs}},
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        "target": {"profile": "demo"}, "numerics": {"samples": 1}}), encoding="utf-8")
    return path


def _run(tmp_path: Path, fake: FakeGitHub, python: Path, pythonpath: str = str(REPO), **with_: str) -> ActionRun:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    for name in ("summary.md", "env-file", "path-file"):
        (tmp_path / name).touch()
    # GITHUB_TOKEN in the job's environment too (a workflow-level `env:`): the model still never sees it.
    env = base_env(tmp_path, GITHUB_EVENT_PATH=str(event), GITHUB_EVENT_NAME="pull_request",
                   GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), GITHUB_ENV=str(tmp_path / "env-file"),
                   GITHUB_PATH=str(tmp_path / "path-file"), GITHUB_WORKSPACE=str(tmp_path),
                   GITHUB_REPOSITORY=fake.repo, GITHUB_API_URL=fake.url, PYTHONPATH=pythonpath,
                   GITHUB_TOKEN=WRITE_TOKEN)
    inputs = {"install": "false", "python": str(python), **with_}
    return run_action(REPO, inputs, env, token=WRITE_TOKEN, workdir=tmp_path)


@pytest.mark.slow
def test_a_hostile_factory_cannot_forge_the_verdict_or_reach_the_token(tmp_path: Path, fake: FakeGitHub) -> None:
    from npu_gate.contract.spec import load_contract
    from npu_gate.pipeline import check_contract

    python = _venv(tmp_path)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "hostile_net.py").write_text(HOSTILE, encoding="utf-8")
    # The baselines: this model's real (failing) result, and the same model without findings.
    failing = check_contract(load_contract(_contract(folder))).to_dict()
    assert failing["verdict"] == "fail" and failing["findings"]
    forged_baseline = tmp_path / "forged-baseline.json"
    forged_baseline.write_text(json.dumps(failing), encoding="utf-8")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(failing | {"verdict": "pass", "findings": []}), encoding="utf-8")
    seen, planted = tmp_path / "seen.json", tmp_path / "pth-ran"
    _contract(folder, attack=True, baseline=str(baseline), forged_baseline=str(forged_baseline),
              seen=str(seen), planted=str(planted))

    run = _run(tmp_path, fake, python, contracts="model/npu-gate.json", baseline="baseline.json",
               **{"fail-on": "regressions"})

    # The factory ran all of its attacks (a test that cannot fail is a defect) ...
    assert json.loads(baseline.read_text())["findings"] == failing["findings"]
    assert "verdict=pass" in (tmp_path / "runner-temp" / "output-2").read_text()  # the gate step's own file
    # ... but the verdict stays fail, and the baseline read before the model ran still counts.
    assert [(s.name, s.ran, s.code) for s in run.steps] == [
        ("Install npu-gate from the action's folder", False, 0),
        ("Copy npu-gate for the publishing steps", True, 0),
        ("Gate the models", True, 0),
        ("Publish the outputs and the job summary", True, 0),
        ("Post the sticky PR comment", True, 0),
        ("Apply the verdict", True, 1)], run.step("gate").stderr[-3000:]
    assert run.failed
    assert (run.outputs["verdict"], run.outputs["failed"]) == ("fail", "true")
    assert int(run.outputs["new-findings"]) == len(failing["findings"])
    result = json.loads((tmp_path / "npu-gate-out" / "result.json").read_text())
    assert result["verdict"] == "fail"
    assert [f["rule"] for f in result["findings"]] == [f["rule"] for f in failing["findings"]]
    # Outputs come from the clean publishing step, not from the step that ran the model.
    assert run.step("gate").env.keys().isdisjoint({"GITHUB_OUTPUT"})
    # The model's process saw no token and none of the workflow files.
    assert json.loads(seen.read_text()) == dict.fromkeys(
        ("GITHUB_TOKEN", "GH_TOKEN", "NPU_GATE_GITHUB_TOKEN", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT",
         "GITHUB_STEP_SUMMARY"))
    for name in ("env-file", "path-file"):
        assert (tmp_path / name).read_text() == ""
    assert "## ❌ npu-gate: **FAIL** · net\n" in (tmp_path / "summary.md").read_text()
    # The comment step (with the token) ran from the clean copy without site-packages: the
    # planted .pth did not run there, though any ordinary start of that Python runs it.
    assert "## ❌ npu-gate: **FAIL** · net\n" in fake.comments[PR][0]["body"]
    assert not planted.exists()
    subprocess.run([str(python), "-I", "-c", "pass"], check=True)
    assert planted.read_text() == "ran"


@pytest.mark.slow
def test_a_changed_clean_copy_is_not_run(tmp_path: Path, fake: FakeGitHub) -> None:
    """The copy the publishing steps run is checked against the digest its step took before
    the gate: code in the gate step (here a sitecustomize on its PYTHONPATH, as model code
    could be) that writes into it stops the publishing, which fails the job."""
    from tests.helpers import model_zoo
    from tests.helpers.gate_models import add_contract

    add_contract(tmp_path, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import glob, os, pathlib\n"
        "for d in glob.glob(os.path.join(os.environ['RUNNER_TEMP'], 'npu-gate-clean.*')):\n"
        "    pathlib.Path(d, 'npu_gate', 'github', '__init__.py').write_text('print(1)\\n')\n",
        encoding="utf-8")
    run = _run(tmp_path, fake, Path(sys.executable), contracts="models/relu/npu-gate.json",
               pythonpath=f"{REPO}:{hook}")
    publish = run.step("publish")
    assert (publish.code, publish.stdout) == (1, "::error::npu-gate: its clean copy was changed after the "
                                                 "model step started; not publishing\n")
    assert not run.step("comment").ran
    assert run.failed
    assert fake.comments.get(PR, []) == []
