"""The action's entry point run as GitHub runs it: env inputs, event file, output files."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from npu_gate import action
from tests.helpers import model_zoo
from tests.helpers.common import REPO, validate_merged, validate_result
from tests.helpers.fake_github import BOT, READ_TOKEN, WRITE_TOKEN, FakeGitHub
from tests.helpers.gate_models import add_contract, conv_only

PR = 12


class Runner:
    """A fake runner: workspace, event file, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.monkeypatch = monkeypatch
        self.event = root / "event.json"
        self.event.write_text(json.dumps({"pull_request": {"number": PR}}), encoding="utf-8")
        self.summary = root / "summary.md"
        self.summary.touch()
        self.step = 0

    def env(self, **inputs: str) -> dict[str, str]:
        self.step += 1
        output = self.root / f"output-{self.step}"
        output.touch()
        env = {"GITHUB_EVENT_PATH": str(self.event), "GITHUB_EVENT_NAME": "pull_request",
               "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(self.summary),
               "GITHUB_WORKSPACE": str(self.root), "GITHUB_REPOSITORY": "octo/models",
               "GITHUB_SERVER_URL": "https://github.test", "GITHUB_RUN_ID": "99"}
        env.update({f"NPU_GATE_{k.upper()}": v for k, v in inputs.items()})
        return env

    def gate(self, **inputs: str) -> tuple[dict[str, str], str]:
        self.monkeypatch.chdir(self.root)
        env = self.env(**inputs)
        out = io.StringIO()
        assert action.gate(env, out) == 0
        return outputs(env["GITHUB_OUTPUT"]), out.getvalue()

    def comment(self, fake: FakeGitHub, token: str = WRITE_TOKEN, **inputs: str
                ) -> tuple[dict[str, str], str]:
        inputs.setdefault("report_file", str(self.root / "npu-gate-out" / "comment.md"))
        env = self.env(**inputs)
        env |= {"GITHUB_API_URL": fake.url, "NPU_GATE_GITHUB_TOKEN": token}
        out = io.StringIO()
        assert action.comment(env, out) == 0
        return outputs(env["GITHUB_OUTPUT"]), out.getvalue()


def outputs(path: str) -> dict[str, str]:
    values: dict[str, str] = {}
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if "<<" in lines[i] and "=" not in lines[i].split("<<")[0]:
            key, delimiter = lines[i].split("<<")
            end = lines.index(delimiter, i + 1)
            values[key] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            key, value = lines[i].split("=", 1)
            values[key] = value
            i += 1
    return values


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runner:
    return Runner(tmp_path, monkeypatch)



def test_failing_model_writes_every_output_and_annotates_the_contract(runner: Runner) -> None:
    add_contract(runner.root, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    out, log = runner.gate(contracts="models/relu/npu-gate.json")
    art = runner.root / "npu-gate-out"
    assert out == {
        "verdict": "fail", "failed": "true", "changed": "true",
        "result-json": str(art / "result.json"), "report-md": str(art / "report.md"),
        "comment-md": str(art / "comment.md"), "cpu-nodes": "1", "npu-partitions": "1",
        "new-findings": "", "artifacts-dir": str(art), "fail-on": "errors",
    }
    result = json.loads((art / "result.json").read_text())
    validate_result(result)
    assert result["verdict"] == "fail"
    report = (art / "report.md").read_text()
    assert report.startswith("## ❌ npu-gate: **FAIL** · relu\n")
    assert runner.summary.read_text() == report
    comment = (art / "comment.md").read_text()
    assert "| load_s " in report
    assert comment == report.partition("### Timings")[0] + (
        "### Timings\n\nIn `report.md` (and the job summary when it has room): they change on every run, "
        "so the comment leaves them out.\n\n<!-- npu-gate:report id=default -->\n")
    assert ("::error file=models/relu/npu-gate.json,title=npu-gate error::relu: unsupported-op "
            "[relu0]: op Relu not in profile demo\n") in log
    assert json.loads((art / "state.json").read_text()) == {
        "verdict": "fail", "failed": True, "changed": True, "pr_number": PR,
        "contracts": {"relu": "models/relu/npu-gate.json"}, "outputs": out}


def test_publish_writes_the_gate_outputs_and_the_summary_from_the_state(runner: Runner) -> None:
    """action.yml's gate step has no GITHUB_OUTPUT/GITHUB_STEP_SUMMARY: `publish` writes them."""
    add_contract(runner.root, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    env = runner.env(contracts="models/relu/npu-gate.json")
    env.pop("GITHUB_OUTPUT")
    env.pop("GITHUB_STEP_SUMMARY")
    runner.monkeypatch.chdir(runner.root)
    assert action.gate(env, io.StringIO()) == 0
    assert runner.summary.read_text() == ""
    env = runner.env()
    out = io.StringIO()
    assert action.publish(env, out) == 0
    published = outputs(env["GITHUB_OUTPUT"])
    art = runner.root / "npu-gate-out"
    assert published == json.loads((art / "state.json").read_text())["outputs"]
    assert (published["verdict"], published["failed"], published["cpu-nodes"]) == ("fail", "true", "1")
    assert runner.summary.read_text() == (art / "report.md").read_text()
    assert out.getvalue() == ""


@pytest.mark.parametrize("state", [None, "[", {"outputs": {"verdict": "pass"}},
                                   {"outputs": dict.fromkeys(action.OUTPUT_NAMES, "x")},
                                   {"outputs": dict.fromkeys(action.OUTPUT_NAMES, "pass\nfailed=false")}])
def test_publish_fails_closed_on_a_missing_or_forged_state(runner: Runner, state: object) -> None:
    art = runner.root / "npu-gate-out"
    art.mkdir()
    if state is not None:
        (art / "state.json").write_text(state if isinstance(state, str) else json.dumps(state), encoding="utf-8")
    runner.monkeypatch.chdir(runner.root)
    env = runner.env()
    out = io.StringIO()
    assert action.publish(env, out) == 0
    assert outputs(env["GITHUB_OUTPUT"]) == {"verdict": "error", "failed": "true", "fail-on": "errors"}
    assert out.getvalue() == "::error::npu-gate: the gate step left no valid state.json; failing\n"


def test_the_gate_step_drops_token_variables(runner: Runner, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    add_contract(runner.root, "conv", conv_only(), [1, 3, 8, 8])
    monkeypatch.setenv("GITHUB_TOKEN", "sekret")
    monkeypatch.setenv("NPU_GATE_GITHUB_TOKEN", "sekret")
    out, log = runner.gate(contracts="models/conv/npu-gate.json")
    assert "GITHUB_TOKEN" not in os.environ
    assert "NPU_GATE_GITHUB_TOKEN" not in os.environ
    assert out["verdict"] == "pass"
    assert out["failed"] == "false"
    assert "::" not in log  # nothing to annotate


def test_comment_created_then_updated(runner: Runner, fake: FakeGitHub) -> None:
    add_contract(runner.root, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    fake.add_comment(PR, "LGTM", "alice")
    runner.gate(contracts="models/relu/npu-gate.json")
    first, log = runner.comment(fake)
    assert first["comment-action"] == "created"
    assert log.startswith(f"npu-gate: PR #{PR} comment created: https://github.test/")
    runner.gate(contracts="models/relu/npu-gate.json", comment="on-failure")
    second, _ = runner.comment(fake)
    assert second["comment-action"] in ("updated", "unchanged")
    ours = [c for c in fake.comments[PR] if c["user"]["login"] == BOT]
    assert len(ours) == 1
    assert fake.comments[PR][0]["body"] == "LGTM"
    assert ours[0]["body"].startswith("## ❌ npu-gate: **FAIL** · relu")
    assert ours[0]["body"].endswith("<!-- npu-gate:report id=default -->\n")


def test_an_unchanged_result_does_not_edit_the_comment(runner: Runner, fake: FakeGitHub) -> None:
    add_contract(runner.root, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    runner.gate(contracts="models/relu/npu-gate.json")
    runner.comment(fake)
    runner.gate(contracts="models/relu/npu-gate.json")
    second, _ = runner.comment(fake)
    assert second["comment-action"] == "unchanged"
    assert [method for method, _ in fake.calls] == ["GET", "POST", "GET"]


def test_read_only_token_is_a_warning_and_never_printed(runner: Runner, fake: FakeGitHub) -> None:
    add_contract(runner.root, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    runner.gate(contracts="models/relu/npu-gate.json")
    out, log = runner.comment(fake, token=READ_TOKEN)
    assert log == ("::warning::npu-gate: could not post the PR comment: HTTP 403: Resource not "
                   "accessible by integration (read-only token: fork PR or missing "
                   "`pull-requests: write`?). The job summary and the artifacts still carry "
                   "the report.\n")
    assert READ_TOKEN not in log
    assert out == {}
    assert PR not in fake.comments


@pytest.mark.parametrize("listing", [{"message": "Moved"}, [{"id": 1, "body": "x"}, 5]],
                         ids=["object", "not-comments"])
def test_a_listing_that_is_not_comments_is_a_warning_not_a_crash(runner: Runner, fake: FakeGitHub,
                                                                  listing: object) -> None:
    """A 200 whose JSON is not a list of comments (a proxy's answer) raised AttributeError:
    the comment step failed, and with it a job whose gate passed."""
    add_contract(runner.root, "conv", conv_only(), [1, 3, 8, 8])
    runner.gate(contracts="models/conv/npu-gate.json")
    fake.listing = listing
    out, log = runner.comment(fake)
    assert log == (f"::warning::npu-gate: could not post the PR comment: GET {fake.url}/repos/octo/models/"
                   f"issues/{PR}/comments?per_page=100: the response is not a list of comments. The job "
                   "summary and the artifacts still carry the report.\n")
    assert out == {}
    assert PR not in fake.comments


@pytest.mark.parametrize(("mode", "verdict_model", "created"), [
    ("never", "relu", False), ("on-failure", "conv", False), ("on-failure", "relu", True)])
def test_comment_modes(runner: Runner, fake: FakeGitHub, mode: str, verdict_model: str,
                       created: bool) -> None:
    model = model_zoo.conv_relu() if verdict_model == "relu" else conv_only()
    add_contract(runner.root, verdict_model, model, [1, 3, 8, 8])
    runner.gate(contracts=f"models/{verdict_model}/npu-gate.json")
    runner.comment(fake, comment=mode)
    assert (PR in fake.comments) is created
    assert fake.calls == ([] if mode == "never" else fake.calls)


def test_never_leaves_an_existing_comment_as_it_is(runner: Runner, fake: FakeGitHub) -> None:
    """Documented: `never` makes no API call (matrix legs must not overwrite the merged comment)."""
    fake.add_comment(PR, "OLD FAIL REPORT <!-- npu-gate:report id=default -->", BOT)
    add_contract(runner.root, "conv", conv_only(), [1, 3, 8, 8])
    runner.gate(contracts="models/conv/npu-gate.json", comment="never")
    posted, _ = runner.comment(fake, comment="never")
    assert posted == {}
    assert fake.calls == []
    assert [c["body"] for c in fake.comments[PR]] == ["OLD FAIL REPORT <!-- npu-gate:report id=default -->"]


def test_on_change_without_a_baseline_acts_like_always(runner: Runner, fake: FakeGitHub) -> None:
    add_contract(runner.root, "conv", conv_only(), [1, 3, 8, 8])
    out, _ = runner.gate(contracts="models/conv/npu-gate.json", comment="on-change")
    assert out["changed"] == "true"
    posted, _ = runner.comment(fake, comment="on-change")
    assert posted["comment-action"] == "created"


def test_on_change_creates_only_when_the_baseline_differs(runner: Runner, fake: FakeGitHub
                                                          ) -> None:
    add_contract(runner.root, "m", model_zoo.conv_relu(), [1, 3, 8, 8])
    runner.gate(contracts="models/m/npu-gate.json")
    base = _baseline(runner, "main")
    out, _ = runner.gate(contracts="models/m/npu-gate.json", baseline=base)
    assert out["changed"] == "false"
    posted, _ = runner.comment(fake, comment="on-change")
    assert posted["comment-action"] == "skipped"
    assert fake.calls == [("GET", f"/repos/octo/models/issues/{PR}/comments")]
    (runner.root / "models" / "m" / "model.onnx").write_bytes(conv_only().SerializeToString())
    out, _ = runner.gate(contracts="models/m/npu-gate.json", baseline=base)
    assert out["changed"] == "true"
    posted, _ = runner.comment(fake, comment="on-change")
    assert posted["comment-action"] == "created"


def test_on_failure_still_updates_an_existing_comment_when_fixed(runner: Runner,
                                                                  fake: FakeGitHub) -> None:
    add_contract(runner.root, "m", model_zoo.conv_relu(), [1, 3, 8, 8])
    runner.gate(contracts="models/m/npu-gate.json")
    runner.comment(fake, comment="on-failure")
    (runner.root / "models" / "m" / "model.onnx").write_bytes(conv_only().SerializeToString())
    out, _ = runner.gate(contracts="models/m/npu-gate.json")
    assert out["verdict"] == "pass"
    posted, _ = runner.comment(fake, comment="on-failure")
    assert posted["comment-action"] == "updated"
    assert fake.comments[PR][0]["body"].startswith("## ✅ npu-gate: **PASS** · m")


def test_glob_gates_many_models_into_one_report(runner: Runner) -> None:
    add_contract(runner.root, "a-conv", conv_only(), [1, 3, 8, 8])
    add_contract(runner.root, "b-relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    out, _ = runner.gate(contracts="models/*/npu-gate.json")
    assert out["verdict"] == "fail"
    assert out["cpu-nodes"] == "1"
    assert out["npu-partitions"] == "2"
    art = runner.root / "npu-gate-out"
    merged = json.loads((art / "result.json").read_text())
    validate_merged(merged)
    assert merged["kind"] == "npu-gate-merged"
    assert [r["name"] for r in merged["results"]] == ["a-conv", "b-relu"]
    for r in merged["results"]:
        validate_result(r)
    assert sorted(p.name for p in (art / "results").iterdir()) == ["00-a-conv.json",
                                                                   "01-b-relu.json"]
    report = (art / "report.md").read_text()
    assert report.startswith("# ❌ npu-gate: **FAIL** · 2 models\n")
    assert ("| a-conv  | pass      | <code>demo</code> (illustrative) | 0           | 1                | 0"
            in report)
    assert "## ✅ npu-gate: **PASS** · a-conv" in report
    assert "## ❌ npu-gate: **FAIL** · b-relu" in report


def test_results_of_an_earlier_run_are_cleared(runner: Runner) -> None:
    add_contract(runner.root, "a-conv", conv_only(), [1, 3, 8, 8])
    add_contract(runner.root, "b-relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    add_contract(runner.root, "c-conv", conv_only(), [1, 3, 8, 8])
    runner.gate(contracts="models/*/npu-gate.json")
    results = runner.root / "npu-gate-out" / "results"
    (results / "notes.txt").write_text("mine")
    runner.gate(contracts="models/a-conv models/c-conv")
    assert sorted(p.name for p in results.iterdir()) == ["00-a-conv.json", "01-c-conv.json", "notes.txt"]
    (results / "notes.txt").unlink()
    runner.gate(contracts="models/b-relu")  # one model: result.json only, and no results/ left
    assert not results.exists()


def test_a_contract_that_cannot_run_is_an_error_verdict(runner: Runner) -> None:
    add_contract(runner.root, "ok", conv_only(), [1, 3, 8, 8])
    bad = runner.root / "models" / "bad"
    bad.mkdir()
    (bad / "npu-gate.json").write_text('{"model": {}}', encoding="utf-8")
    out, log = runner.gate(contracts="models/*/npu-gate.json")
    assert out["verdict"] == "error"
    assert out["failed"] == "true"
    assert ("::error file=models/bad/npu-gate.json,title=npu-gate error::npu-gate could not run: "
            ) in log
    report = (runner.root / "npu-gate-out" / "report.md").read_text()
    assert "## ⚠️ npu-gate: **COULD NOT RUN** · models/bad/npu-gate.json" in report


def test_merge_mode_combines_other_jobs_results(runner: Runner) -> None:
    add_contract(runner.root, "a", conv_only(), [1, 3, 8, 8])
    add_contract(runner.root, "b", model_zoo.conv_relu(), [1, 3, 8, 8])
    for name in ("a", "b"):  # two matrix jobs
        runner.gate(contracts=f"models/{name}/npu-gate.json", artifacts_dir=f"legs/{name}")
    (runner.root / "legs" / "junk.json").write_text("[]")
    out, log = runner.gate(merge="legs/*/result.json legs/junk.json")
    assert out["verdict"] == "error"
    assert out["cpu-nodes"] == "1"
    merged = json.loads((runner.root / "npu-gate-out" / "result.json").read_text())
    validate_merged(merged)
    assert [r["name"] for r in merged["results"]] == ["a", "b"]
    assert merged["errors"] == [{"contract": "legs/junk.json", "problems": [
        "legs/junk.json: not an npu-gate result (run `npu-gate check --json`)"]}]
    report = (runner.root / "npu-gate-out" / "report.md").read_text()
    assert report.startswith("# ⚠️ npu-gate: **ERROR** · 2 models, 1 input problem\n")
    assert "## ✅ npu-gate: **PASS** · a" in report
    assert "## ❌ npu-gate: **FAIL** · b" in report
    # each job's state.json names its contract relative to the workspace: annotations point there
    assert "::error file=models/b/npu-gate.json,title=npu-gate error::b: unsupported-op [relu0]" in log
    assert ("::error title=npu-gate error::npu-gate could not run: legs/junk.json: not an "
            "npu-gate result") in log
    assert json.loads((runner.root / "npu-gate-out" / "state.json").read_text())["contracts"] == {
        "a": "models/a/npu-gate.json", "b": "models/b/npu-gate.json"}
    # a result JSON copied without its state.json: no file to point at
    (runner.root / "legs" / "b" / "state.json").unlink()
    _, log = runner.gate(merge="legs/*/result.json")
    assert "::error title=npu-gate error::b: unsupported-op [relu0]" in log


def test_merge_mode_refuses_the_same_model_from_two_files(runner: Runner) -> None:
    # results are matched by name (baseline, annotations): a model merged twice would count twice
    add_contract(runner.root, "a", conv_only(), [1, 3, 8, 8])
    add_contract(runner.root, "b", model_zoo.conv_relu(), [1, 3, 8, 8])
    runner.gate(contracts="models/a/npu-gate.json", artifacts_dir="legs/one")
    runner.gate(contracts="models/a/npu-gate.json models/b/npu-gate.json", artifacts_dir="legs/two")
    out, log = runner.gate(merge="legs/one/result.json legs/two/result.json")
    assert out["verdict"] == "error"
    merged = json.loads((runner.root / "npu-gate-out" / "result.json").read_text())
    validate_merged(merged)
    assert [r["name"] for r in merged["results"]] == ["a", "b"]
    assert merged["errors"] == [{"contract": "legs/two/result.json", "problems": [
        "legs/two/result.json: result 'a' is also in legs/one/result.json: merge each model once "
        "(results are matched by name, as the baseline does)"]}]
    assert "::error title=npu-gate error::npu-gate could not run: legs/two/result.json: result 'a'" in log


def test_two_contracts_of_one_name_are_refused_not_compared_with_one_baseline_entry(
        runner: Runner) -> None:
    """Two contracts named alike (default name: the folder's, `v1` here) were both gated and
    both compared with the baseline's one `v1`: a regression of one hid behind the other,
    state.json kept one contract, and result.json could not be merged or used as a baseline."""
    for team, model in (("a", conv_only()), ("b", model_zoo.conv_relu())):
        contract = add_contract(runner.root / team, "v1", model, [1, 3, 8, 8])
        doc = json.loads(contract.read_text())
        del doc["name"]
        contract.write_text(json.dumps(doc))
    out, log = runner.gate(contracts="*/models/v1/npu-gate.json")
    assert out["verdict"] == "error"
    assert out["failed"] == "true"
    merged = json.loads((runner.root / "npu-gate-out" / "result.json").read_text())
    validate_merged(merged)
    assert [r["name"] for r in merged["results"]] == ["v1"]
    assert merged["errors"] == [{"contract": "b/models/v1/npu-gate.json", "problems": [
        "b/models/v1/npu-gate.json: name 'v1' is also a/models/v1/npu-gate.json's: give one of "
        "the contracts another \"name\" (models are matched by name)"]}]
    assert ("::error file=b/models/v1/npu-gate.json,title=npu-gate error::npu-gate could not run: "
            "b/models/v1/npu-gate.json: name 'v1'") in log
    state = json.loads((runner.root / "npu-gate-out" / "state.json").read_text())
    assert state["contracts"] == {"v1": "a/models/v1/npu-gate.json",
                                  "b/models/v1/npu-gate.json": "b/models/v1/npu-gate.json"}
    # one contract spelled two ways is one model, not a clash with itself
    out, _ = runner.gate(contracts=f"a/models/v1 {runner.root}/a/models/v1/npu-gate.json")
    assert out["verdict"] == "pass"


def test_missing_working_directory_stops_the_step(runner: Runner) -> None:
    runner.monkeypatch.chdir(runner.root)
    env = runner.env(working_directory="nope")
    out = io.StringIO()
    assert action.gate(env, out) == 1
    assert out.getvalue() == "::error::working-directory 'nope' is not a folder\n"


def test_working_directory_resolves_contracts_and_model_code(runner: Runner) -> None:
    add_contract(runner.root, "m", conv_only(), [1, 3, 8, 8])
    out, _ = runner.gate(working_directory="models/m", contracts="npu-gate.json")
    assert out["verdict"] == "pass"
    assert out["result-json"] == str(runner.root / "npu-gate-out" / "result.json")


def test_each_failing_contracts_pattern_is_one_entry_not_a_model(runner: Runner) -> None:
    add_contract(runner.root, "conv", conv_only(), [1, 3, 8, 8])
    out, log = runner.gate(contracts="models/*/npu-gate.json\nmodels/nomatch*/npu-gate.json models/missing",
                           fail_on="bogus")
    assert out["verdict"] == "error"
    assert out["fail-on"] == "errors"
    assert "::warning::fail-on 'bogus' is not one of errors, regressions, never; using errors" in log
    merged = json.loads((runner.root / "npu-gate-out" / "result.json").read_text())
    validate_merged(merged)
    assert [r["name"] for r in merged["results"]] == ["conv"]
    assert merged["errors"] == [
        {"contract": "models/nomatch*/npu-gate.json",
         "problems": ["contracts: no file matches 'models/nomatch*/npu-gate.json'"]},
        {"contract": "models/missing", "problems": [merged["errors"][1]["problems"][0]]}]
    assert merged["errors"][1]["problems"][0].startswith("models/missing")
    report = (runner.root / "npu-gate-out" / "report.md").read_text()
    assert report.startswith("# ⚠️ npu-gate: **ERROR** · 1 model, 2 input problems\n")
    assert "## ⚠️ npu-gate: **COULD NOT RUN** · models/nomatch&#42;/npu-gate.json\n" in report
    assert "## ⚠️ npu-gate: **COULD NOT RUN** · models/missing\n" in report


def test_working_directory_moves_only_the_contracts(runner: Runner) -> None:
    """One rule: contracts resolve in working-directory; profile, baseline, merge and
    artifacts-dir in the workspace."""
    add_contract(runner.root, "m", model_zoo.conv_relu(), [1, 3, 8, 8])
    profile = json.loads((Path(action.__file__).parent / "profiles" / "demo.json").read_text())
    profile["name"] = "demo-relu"
    profile["ops"]["Relu"] = {}
    (runner.root / "relu-ok.json").write_text(json.dumps(profile))
    out, log = runner.gate(working_directory="models/m", contracts="npu-gate.json", profile="relu-ok.json")
    assert out["verdict"] == "pass", log
    (runner.root / "base.json").write_text((runner.root / "npu-gate-out" / "result.json").read_text())
    out, log = runner.gate(working_directory="models/m", contracts="npu-gate.json", profile="relu-ok.json",
                           baseline="base.json", artifacts_dir="out/m")
    assert out["new-findings"] == "0", log
    assert out["result-json"] == str(runner.root / "out" / "m" / "result.json")
    out, log = runner.gate(working_directory="models/m", merge="out/*/result.json")
    assert out["verdict"] == "pass", log


def test_no_matching_contract_is_an_error(runner: Runner) -> None:
    out, log = runner.gate(contracts="nothing/*.json")
    assert out["verdict"] == "error"
    assert "no file matches 'nothing/*.json'" in log


def test_annotations_are_capped_at_ten_per_level_worst_first(runner: Runner) -> None:
    add_contract(runner.root, "big", model_zoo.many_nodes(30), [1, 8, 16, 16])
    _, log = runner.gate(contracts="models/big/npu-gate.json")
    errors = [line for line in log.splitlines() if line.startswith("::error ")]
    assert len(errors) == 10
    assert all("unsupported-op" in line for line in errors)
    result = json.loads((runner.root / "npu-gate-out" / "result.json").read_text())
    total = sum(1 for f in result["findings"] if f["severity"] == "error" and not f["waived"])
    assert total > 10
    assert (f"::notice::npu-gate: {total - 10} more errors are not annotated (GitHub shows 10 "
            "per step); see the report.") in log



def test_annotations_show_escape_sequences_and_bidi_overrides_as_text(runner: Runner) -> None:
    from onnx import TensorProto, helper

    name = "relu\x1b[8m\u202egnp.exe\n::error::pwned"
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name=name)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    add_contract(runner.root, "m", model, [1, 4])
    _, log = runner.gate(contracts="models/m/npu-gate.json")
    errors = [line for line in log.splitlines() if line.startswith("::error ")]
    assert any("[relu\\x1b[8m\\u202egnp.exe\\n::error::pwned]" in line for line in errors)
    assert not any(ch in log for ch in "\x1b\u202e")


def _baseline(runner: Runner, name: str) -> str:
    art = runner.root / "npu-gate-out" / "result.json"
    target = runner.root / f"baseline-{name}.json"
    target.write_text(art.read_text())
    return target.name


def test_baseline_ratchet_passes_an_unchanged_failing_model(runner: Runner) -> None:
    add_contract(runner.root, "m", model_zoo.conv_relu(), [1, 3, 8, 8])
    runner.gate(contracts="models/m/npu-gate.json")
    base = _baseline(runner, "main")
    out, _ = runner.gate(contracts="models/m/npu-gate.json", baseline=base, fail_on="regressions")
    assert out["verdict"] == "fail"
    assert out["failed"] == "false"
    assert out["new-findings"] == "0"
    assert out["changed"] == "false"
    report = (runner.root / "npu-gate-out" / "report.md").read_text()
    assert report.startswith("With `fail-on: regressions` this check **passes**.")
    assert ("### Baseline\n\nCompared with the baseline: 0 new, 0 fixed findings. No regression."
            ) in report


def test_baseline_models_missing_from_the_run_are_named(runner: Runner) -> None:
    add_contract(runner.root, "m", conv_only(), [1, 3, 8, 8])
    add_contract(runner.root, "gone", conv_only(), [1, 3, 8, 8])
    runner.gate(contracts="models/m/npu-gate.json models/gone/npu-gate.json")
    base = _baseline(runner, "main")
    out, log = runner.gate(contracts="models/m/npu-gate.json", baseline=base, fail_on="regressions")
    assert out["failed"] == "false"
    assert "npu-gate: in the baseline, not in this run: gone\n" in log
    report = (runner.root / "npu-gate-out" / "report.md").read_text()
    assert "In the baseline, not in this run: <code>gone</code>" in report


def test_baseline_ratchet_fails_a_regression(runner: Runner) -> None:
    add_contract(runner.root, "m", conv_only(), [1, 3, 8, 8])
    runner.gate(contracts="models/m/npu-gate.json")
    base = _baseline(runner, "main")
    (runner.root / "models" / "m" / "model.onnx").write_bytes(
        model_zoo.conv_relu().SerializeToString())
    out, _ = runner.gate(contracts="models/m/npu-gate.json", baseline=base, fail_on="regressions")
    assert out["failed"] == "true"
    assert out["new-findings"] == "1"
    report = (runner.root / "npu-gate-out" / "report.md").read_text()
    assert ("**Regressed:** 1 new error finding; CPU nodes: 0 → 1; Boundary bytes: 0 → 1,024."
            ) in report


def test_under_a_baseline_new_findings_are_annotated_first(runner: Runner) -> None:
    """Old findings: after the new ones, marked, and notices when they cannot fail the step."""
    add_contract(runner.root, "m", model_zoo.many_nodes(30), [1, 8, 16, 16])
    runner.gate(contracts="models/m/npu-gate.json")
    base = _baseline(runner, "main")
    (runner.root / "models" / "m" / "model.onnx").write_bytes(model_zoo.many_nodes(33).SerializeToString())
    out, log = runner.gate(contracts="models/m/npu-gate.json", baseline=base, fail_on="regressions")
    new = int(out["new-findings"])
    assert 0 < new < 10
    levels = [(line.split(" ", 1)[0], line.endswith("; already in the baseline"))
              for line in log.splitlines() if line.startswith("::")]
    errors = [old for level, old in levels if level == "::error"]
    notices = [old for level, old in levels if level == "::notice"]
    assert errors == [False] * new
    assert notices[:9] == [True] * 9
    assert log.splitlines()[-1].startswith("::notice::npu-gate: ")
    assert log.splitlines()[-1].endswith(" more notices are not annotated (GitHub shows 10 per step); see the report.")
    _, log = runner.gate(contracts="models/m/npu-gate.json", baseline=base, fail_on="errors")
    errors = [line.endswith("; already in the baseline") for line in log.splitlines() if line.startswith("::error ")]
    assert errors == [False] * new + [True] * (10 - new)


def test_missing_baseline_file_is_a_warning(runner: Runner) -> None:
    add_contract(runner.root, "m", model_zoo.conv_relu(), [1, 3, 8, 8])
    out, log = runner.gate(contracts="models/m/npu-gate.json", baseline="nope.json",
                           fail_on="regressions")
    assert "::warning::baseline not used: " in log
    assert "::warning::fail-on: regressions needs a baseline; failing on errors instead" in log
    assert out["failed"] == "true"


def test_workflow_run_checks_the_pr_head(runner: Runner, fake: FakeGitHub) -> None:
    add_contract(runner.root, "m", model_zoo.conv_relu(), [1, 3, 8, 8])
    runner.gate(contracts="models/m/npu-gate.json")  # writes pr_number 12 into state.json
    runner.event.write_text(json.dumps({"workflow_run": {"head_sha": "abc"}}))
    fake.pulls[PR] = "other"
    env = runner.env(comment_file=str(runner.root / "npu-gate-out" / "comment.md"))
    env |= {"GITHUB_API_URL": fake.url, "NPU_GATE_GITHUB_TOKEN": WRITE_TOKEN,
            "GITHUB_EVENT_NAME": "workflow_run"}
    stream = io.StringIO()
    action.comment(env, stream)
    assert "does not have the head commit of the triggering run" in stream.getvalue()
    assert PR not in fake.comments
    fake.pulls[PR] = "abc"
    action.comment(env, io.StringIO())
    assert len(fake.comments[PR]) == 1


def test_the_comment_step_imports_only_the_standard_library(tmp_path: Path) -> None:
    """It runs from the action folder without npu-gate's dependencies installed."""
    import subprocess
    import sys

    code = ("import sys, npu_gate.action as a; a.comment({'NPU_GATE_COMMENT_FILE': 'none.md'}); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'onnx', 'onnxruntime', "
            "'torch', 'numpy', 'tabulate', 'jsonschema', 'yaml'}))")
    repo = REPO
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env={"PYTHONPATH": str(repo), "PATH": os.environ["PATH"]},
                          check=True)
    assert proc.stdout.splitlines()[-1] == "[]"


def test_comment_file_is_untrusted_and_neutralised(runner: Runner, fake: FakeGitHub) -> None:
    """Comment-only mode: the fork wrote comment.md; its text is posted, its links and mentions are not."""
    art = runner.root / "art"
    art.mkdir()
    (art / "comment.md").write_text("# hi @octocat\n[x](https://evil.example) <img src=x>\n<details>\n"
                                    "<!-- npu-gate:report id=other -->\n", encoding="utf-8")
    (art / "state.json").write_text(json.dumps({"pr_number": PR}), encoding="utf-8")
    posted, _ = runner.comment(fake, comment_file=str(art / "comment.md"), report_file="")
    assert posted["comment-action"] == "created"
    assert fake.comments[PR][0]["body"] == (
        "# hi @\u2060octocat\n[x]\u2060(https:\u2060//evil.example) <\u2060img src=x>\n<details>\n"
        "</details>\n\n<!-- npu-gate:report id=default -->\n")


def test_the_gate_steps_own_comment_is_posted_as_written(runner: Runner, fake: FakeGitHub) -> None:
    add_contract(runner.root, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    runner.gate(contracts="models/relu/npu-gate.json")
    art = runner.root / "npu-gate-out"
    (art / "comment.md").write_text("see [the docs](https://example.org)\n", encoding="utf-8")
    runner.comment(fake)
    assert fake.comments[PR][0]["body"] == (
        "see [the docs](https://example.org)\n\n<!-- npu-gate:report id=default -->\n")
