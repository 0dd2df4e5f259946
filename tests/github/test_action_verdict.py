"""The Action derives the verdict again (issue 43 item 2): the publish step checks state.json's
verdict and ``failed`` against the verdict result.json's findings and gates give, merge mode
refuses an edited result, and ``comment: on-failure`` does not trust a forged pass."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate import action
from tests.github.test_action import PR, Runner, outputs
from tests.helpers import model_zoo
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.gate_models import add_contract

FAILED_CLOSED = {"verdict": "error", "failed": "true", "fail-on": "errors"}


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runner:
    return Runner(tmp_path, monkeypatch)



def _edit(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def _state_pass(state: dict[str, Any]) -> None:
    state["verdict"] = state["outputs"]["verdict"] = "pass"
    state["failed"], state["outputs"]["failed"] = False, "false"


def _publish(runner: Runner, **inputs: str) -> tuple[dict[str, str], str]:
    env = runner.env(**inputs)
    out = io.StringIO()
    assert action.publish(env, out) == 0
    return outputs(env["GITHUB_OUTPUT"]), out.getvalue()


@pytest.fixture
def failing(runner: Runner) -> Path:
    """The artifacts of a failing gate run."""
    add_contract(runner.root, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    assert runner.gate(contracts="models/relu/npu-gate.json")[0]["verdict"] == "fail"
    return runner.root / "npu-gate-out"


def test_publish_refuses_a_result_edited_to_pass(runner: Runner, failing: Path) -> None:
    _edit(failing / "result.json", lambda d: d.update(verdict="pass"))
    _edit(failing / "state.json", _state_pass)
    published, log = _publish(runner)
    assert published == FAILED_CLOSED
    assert log == (f"::error::npu-gate: {failing / 'result.json'}: verdict 'pass' contradicts its findings and "
                   "gates, which give 'fail': refused; failing\n")


def test_publish_refuses_a_state_whose_verdict_the_result_does_not_give(runner: Runner, failing: Path) -> None:
    _edit(failing / "state.json", _state_pass)
    published, log = _publish(runner)
    assert published == FAILED_CLOSED
    assert log == (f"::error::npu-gate: {failing / 'state.json'}: verdict 'pass' contradicts "
                   f"{failing / 'result.json'}, whose findings and gates give 'fail'; failing\n")


@pytest.mark.parametrize(("fail_on", "refused"), [("errors", True), ("", True), ("regressions", False),
                                                  ("never", False)])
def test_publish_refuses_failed_false_where_the_verdict_fails_the_step(runner: Runner, failing: Path,
                                                                       fail_on: str, refused: bool) -> None:
    """Under ``fail-on: regressions`` or ``never`` a failing verdict may leave ``failed`` false
    (the baseline decides, or nothing does); under ``errors`` (the default) it may not."""
    _edit(failing / "state.json", lambda s: s["outputs"].update(failed="false"))
    published, log = _publish(runner, fail_on=fail_on)
    if refused:
        assert published["failed"] == "true" and published["verdict"] == "error"
        assert log == (f"::error::npu-gate: {failing / 'state.json'}: failed false contradicts the verdict "
                       "'fail' under fail-on errors; failing\n")
    else:
        assert (published["verdict"], published["failed"], log) == ("fail", "false", "")


def test_publish_fails_closed_without_a_result(runner: Runner, failing: Path) -> None:
    (failing / "result.json").unlink()
    published, log = _publish(runner)
    assert published == FAILED_CLOSED
    assert log == f"::error::npu-gate: {failing / 'result.json'}: cannot be read as JSON; failing\n"
    (failing / "result.json").write_text('{"verdict": "pass"}')
    assert _publish(runner)[1] == f"::error::npu-gate: {failing / 'result.json'}: not an npu-gate result; failing\n"


def test_merge_mode_makes_an_edited_result_an_error_entry(runner: Runner, failing: Path) -> None:
    forged = runner.root / "jobs" / "relu" / "result.json"
    forged.parent.mkdir(parents=True)
    forged.write_text((failing / "result.json").read_text())
    _edit(forged, lambda d: d.update(verdict="pass"))
    out, log = runner.gate(merge="jobs/*/result.json")
    assert (out["verdict"], out["failed"]) == ("error", "true")
    assert f"{forged.relative_to(runner.root)}: verdict 'pass' contradicts its findings and gates" in log
    assert _publish(runner)[0]["verdict"] == "error"  # the merged document the gate wrote checks out


def test_on_failure_comments_when_the_result_fails_though_the_state_says_pass(
        runner: Runner, failing: Path, fake: FakeGitHub) -> None:
    _edit(failing / "state.json", _state_pass)
    posted, _ = runner.comment(fake, comment="on-failure")
    assert posted["comment-action"] == "created"
    assert len(fake.comments[PR]) == 1


def test_an_edited_baseline_is_not_used(runner: Runner, failing: Path) -> None:
    baseline = runner.root / "base.json"
    baseline.write_text((failing / "result.json").read_text())
    _edit(baseline, lambda d: d.update(verdict="pass"))
    out, log = runner.gate(contracts="models/relu/npu-gate.json", baseline="base.json", fail_on="regressions")
    assert (out["verdict"], out["failed"], out["new-findings"]) == ("fail", "true", "")
    assert (f"::warning::baseline not used: {baseline}: verdict 'pass' contradicts its findings and gates, "
            "which give 'fail': refused\n") in log
