"""action.yml itself: its hygiene rules, and its steps run by a local composite runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import model_zoo
from tests.helpers.common import REPO
from tests.helpers.composite_runner import ActionRun, base_env, run_action
from tests.helpers.fake_github import BOT, READ_TOKEN, WRITE_TOKEN, FakeGitHub
from tests.helpers.gate_models import add_contract, conv_only

SPEC = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
STEPS = SPEC["runs"]["steps"]
PR = 5


def test_inputs_and_outputs_are_the_documented_interface() -> None:
    assert list(SPEC["inputs"])[:9] == ["contracts", "profile", "comment", "comment-id", "baseline",
                                        "fail-on", "github-token", "working-directory",
                                        "artifacts-dir"]
    assert SPEC["inputs"]["contracts"]["default"] == "npu-gate.json"
    assert SPEC["inputs"]["github-token"]["default"] == "${{ github.token }}"
    for name in ("verdict", "result-json", "report-md", "cpu-nodes", "npu-partitions",
                 "new-findings"):
        # written by the clean publishing step, never by the step that runs the model
        assert SPEC["outputs"][name]["value"] == f"${{{{ steps.publish.outputs.{name} }}}}"


def test_steps_follow_the_script_injection_rules() -> None:
    assert SPEC["runs"]["using"] == "composite"
    for step in STEPS:
        assert step["shell"] == "bash"
        assert "${{" not in step["run"], "inputs reach scripts through env:, never inline"
        assert "github.action_path" not in step["run"]
        assert "uses" not in step
    gate = next(s for s in STEPS if s.get("id") == "gate")
    install = STEPS[0]
    for step in (install, gate):  # the steps that run the user's code see no token
        assert not any("token" in f"{k}={v}".lower() for k, v in step["env"].items())
    # ... nor the files that change later steps; the clean copy is made before it
    assert gate["run"].startswith("exec env -u GITHUB_ENV -u GITHUB_PATH -u GITHUB_OUTPUT -u GITHUB_STEP_SUMMARY ")
    # ... and the step's shell becomes the gate, started without the token (a job-wide env: GITHUB_TOKEN)
    assert "-u GITHUB_TOKEN -u GH_TOKEN -u NPU_GATE_GITHUB_TOKEN " in gate["run"]
    assert [s.get("id") for s in STEPS].index("clean") < [s.get("id") for s in STEPS].index("gate")
    for step in STEPS:
        if "npu_gate.action" in step["run"] and step.get("id") != "gate":  # publish, comment
            assert '-I -S -B -c' in step["run"] and '"$NPU_GATE_CLEAN"' in step["run"]
            assert '"$NPU_GATE_CLEAN_DIGEST"' in step["run"]
    assert STEPS[-1]["if"] == "steps.publish.outputs.failed == 'true'"
    assert "exit 1" in STEPS[-1]["run"]



def _run(tmp_path: Path, fake: FakeGitHub, token: str = WRITE_TOKEN, **with_: str) -> ActionRun:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    summary = tmp_path / "summary.md"
    summary.touch()
    env = base_env(tmp_path, GITHUB_EVENT_PATH=str(event), GITHUB_EVENT_NAME="pull_request",
                   GITHUB_STEP_SUMMARY=str(summary), GITHUB_WORKSPACE=str(tmp_path),
                   GITHUB_REPOSITORY=fake.repo, GITHUB_API_URL=fake.url, PYTHONPATH=str(REPO))
    inputs = {"install": "false", "python": sys.executable, **with_}
    return run_action(REPO, inputs, env, token=token, workdir=tmp_path)


@pytest.mark.slow
def test_failing_gate_reports_comments_then_fails_last(tmp_path: Path, fake: FakeGitHub) -> None:
    add_contract(tmp_path, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    run = _run(tmp_path, fake, contracts="models/relu/npu-gate.json")
    assert [(s.name, s.ran, s.code) for s in run.steps] == [
        ("Install npu-gate from the action's folder", False, 0),
        ("Copy npu-gate for the publishing steps", True, 0),
        ("Gate the models", True, 0),
        ("Publish the outputs and the job summary", True, 0),
        ("Post the sticky PR comment", True, 0),
        ("Apply the verdict", True, 1)]
    assert run.failed
    assert run.steps[-1].stdout == ("::error::npu-gate: verdict fail (fail-on: errors); the report "
                                    "is in the job summary\n")
    assert run.outputs["verdict"] == "fail"
    assert run.outputs["cpu-nodes"] == "1"
    assert run.outputs["result-json"] == str(tmp_path / "npu-gate-out" / "result.json")
    assert run.outputs["comment-url"].startswith("https://github.test/octo/models/pull/5")
    assert "NPU_GATE_GITHUB_TOKEN" not in run.step("gate").env
    assert run.step("comment").env["NPU_GATE_GITHUB_TOKEN"] == WRITE_TOKEN
    assert WRITE_TOKEN not in "".join(s.stdout + s.stderr for s in run.steps)
    assert (tmp_path / "summary.md").read_text().startswith("## ❌ npu-gate: **FAIL** · relu")
    assert [c["user"]["login"] for c in fake.comments[PR]] == [BOT]


@pytest.mark.slow
def test_the_last_step_names_the_fail_on_value_used(tmp_path: Path, fake: FakeGitHub) -> None:
    add_contract(tmp_path, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    run = _run(tmp_path, fake, contracts="models/relu", comment="never", **{"fail-on": "bogus"})
    assert run.failed
    assert run.step("Apply the verdict").stdout == (
        "::error::npu-gate: verdict fail (fail-on: errors); the report is in the job summary\n")


def test_passing_gate_and_read_only_token(tmp_path: Path, fake: FakeGitHub) -> None:
    add_contract(tmp_path, "conv", conv_only(), [1, 3, 8, 8])
    run = _run(tmp_path, fake, token=READ_TOKEN, contracts="models/*/npu-gate.json")
    assert not run.failed
    assert not run.step("Apply the verdict").ran
    assert run.step("comment").stdout.startswith("::warning::npu-gate: could not post the PR "
                                                 "comment: HTTP 403")
    assert run.outputs["verdict"] == "pass"
    assert run.outputs["comment-url"] == ""


def test_report_only_run_then_comment_only_mode(tmp_path: Path, fake: FakeGitHub) -> None:
    """The fork-safe pair: gate without commenting, then post the artifact's comment.md."""
    add_contract(tmp_path, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    gated = _run(tmp_path, fake, contracts="models/relu", **{"fail-on": "never",
                                                             "comment": "never"})
    assert not gated.failed
    assert gated.outputs["verdict"] == "fail"
    assert not gated.step("comment").ran
    assert fake.calls == []
    artifact = tmp_path / "npu-gate-out"
    run = _run(tmp_path, fake, **{"comment-file": str(artifact / "comment.md"),
                                  "comment-id": "fork"})
    assert [s.ran for s in run.steps] == [False, True, False, False, True, False]
    assert not run.failed
    assert fake.comments[PR][0]["body"].endswith("<!-- npu-gate:report id=fork -->\n")


@pytest.mark.parametrize("workflow", sorted((REPO / "examples" / "workflows").glob("*.yml")),
                         ids=lambda p: p.name)
def test_example_workflows_use_only_real_inputs_and_pinned_actions(workflow: Path) -> None:
    doc = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    ours = 0
    for job in doc["jobs"].values():
        for step in job["steps"]:
            uses = step.get("uses")
            if uses is None:
                continue
            ref = uses.split("@", 1)[1]
            assert len(ref) == 40, f"{uses}: pin actions by full commit SHA"
            if uses.startswith("OWNER/npu-gate@"):
                ours += 1
                assert set(step.get("with", {})) <= set(SPEC["inputs"])
    assert ours >= 1
    assert "pull_request_target" not in doc[True]  # YAML 1.1 reads the key `on` as True


def test_the_comment_step_ignores_python_code_in_the_workspace(tmp_path: Path, fake: FakeGitHub) -> None:
    """A fork's artifact downloaded into the workspace root could hold an `npu_gate/` package;
    `python -m` would import it, from the current folder, in the step that holds the token."""
    planted = tmp_path / "npu_gate"
    planted.mkdir()
    (planted / "__init__.py").write_text(
        "from pathlib import Path\nPath(__file__).with_name('pwned').touch()\n", encoding="utf-8")
    (tmp_path / "comment.md").write_text("hello\n", encoding="utf-8")
    run = _run(tmp_path, fake, **{"comment-file": "comment.md"})
    assert run.step("comment").code == 0
    assert not (planted / "pwned").exists()
    assert fake.comments[PR][0]["body"].startswith("hello\n")
