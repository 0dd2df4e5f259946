"""Baseline ratchet and merge: finding keys, deltas, `check --baseline`, `npu-gate merge`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from npu_gate.compare.baseline import compare, finding_key
from npu_gate.result.read import result_from_dict
from tests.helpers import model_zoo
from tests.helpers.common import CliRun, schema_errors, validate_merged, validate_result
from tests.helpers.gate_models import add_contract, conv_only


def _finding(rule: str, message: str, node: str | None = None, severity: str = "error",
             waived: bool = False) -> dict[str, object]:
    f: dict[str, object] = {"rule": rule, "severity": severity, "message": message,
                            "waived": waived}
    if node:
        f["node"] = node
    return f


def _doc(name: str, findings: list[dict[str, object]], cpu: int = 0, parts: int = 1,
         boundary: int | None = 0) -> dict[str, object]:
    return {"name": name, "findings": findings, "numerics": [],
            "summary": {"cpu_nodes": cpu, "npu_partitions": parts, "boundary_bytes": boundary}}


def test_finding_key_is_rule_node_constraint_and_subject_never_the_message() -> None:
    a = _finding("gate-exceeded", "max_cpu_nodes: 3 exceeds the limit 0") | {"subject": "max_cpu_nodes"}
    b = _finding("gate-exceeded", "3 CPU nodes, more than 0") | {"subject": "max_cpu_nodes"}
    c = _finding("gate-exceeded", "max_cpu_nodes: 3 exceeds the limit 0") | {"subject": "max_npu_partitions"}
    assert finding_key(a) == finding_key(b) == ("gate-exceeded", "", "", "max_cpu_nodes")
    assert finding_key(c) != finding_key(a)
    d = _finding("op-constraint", "pads 2 above 1", node="conv0") | {"constraint": "pads"}
    e = _finding("op-constraint", "pads 3 above 1", node="conv0") | {"constraint": "pads"}
    assert finding_key(d) == finding_key(e) == ("op-constraint", "conv0", "pads", "")


def test_results_from_before_subjects_are_keyed_by_the_message_subject() -> None:
    """Schema < 1.6 findings had no ``subject``: a finding naming no node is keyed by the
    message up to the first ": ", numbers ignored."""
    a = _finding("gate-exceeded", "max_cpu_nodes: 3 exceeds the limit 0")
    b = _finding("gate-exceeded", "max_cpu_nodes: 5 exceeds the limit 1")
    c = _finding("gate-exceeded", "max_npu_partitions: 3 exceeds the limit 0")
    assert finding_key(a, legacy=True) == finding_key(b, legacy=True) == ("gate-exceeded", "", "", "max_cpu_nodes")
    assert finding_key(c, legacy=True) != finding_key(a, legacy=True)


def test_a_baseline_from_before_subjects_matches_todays_findings() -> None:
    """Upgrading npu-gate with a 1.5 baseline: the same gate failure is not new, not fixed."""
    old = _doc("m", [_finding("gate-exceeded", "max_cpu_nodes: 3 exceeds the limit 0")]) | {"schema_version": "1.5"}
    now = _doc("m", [_finding("gate-exceeded", "max_cpu_nodes: 4 exceeds the limit 0")
                     | {"subject": "max_cpu_nodes"}]) | {"schema_version": "1.6"}
    c = compare(now, old)
    assert (c.new, c.fixed) == ([], [])
    moved = _doc("m", [_finding("gate-exceeded", "changed wording") | {"subject": "max_cpu_nodes"}]) \
        | {"schema_version": "1.6"}
    both_new = compare(moved, now | {"findings": now["findings"]})
    assert (both_new.new, both_new.fixed) == ([], [])


def test_compare_counts_new_and_fixed_as_multisets_and_ignores_waived() -> None:
    before = _doc("m", [_finding("unsupported-op", "x", "a"), _finding("unsupported-op", "x", "a"),
                        _finding("unsupported-op", "x", "b")], cpu=3, parts=2, boundary=100)
    after = _doc("m", [_finding("unsupported-op", "x", "a"), _finding("unsupported-op", "x", "c"),
                       _finding("unsupported-op", "x", "b", waived=True),
                       _finding("dynamic-shape", "y", "d", severity="warning")],
                 cpu=2, parts=3, boundary=None)
    c = compare(after, before)
    assert [(f["rule"], f["node"]) for f in c.new] == [("unsupported-op", "c"),
                                                       ("dynamic-shape", "d")]
    assert [f["node"] for f in c.fixed] == ["a", "b"]
    assert [(m.key, m.before, m.after, m.worse) for m in c.metrics] == [
        ("cpu_nodes", 3, 2, False), ("npu_partitions", 2, 3, True),
        ("boundary_bytes", 100, None, False)]
    assert c.regressions == ["1 new error finding", "NPU partitions: 2 → 3"]
    assert c.changed


def test_new_findings_sharing_a_message_are_one_row() -> None:
    from npu_gate.render.report import render_baseline

    after = _doc("m", [_finding("unsupported-op", "op Relu not in profile demo", f"r{i}") for i in range(7)]
                 + [_finding("gate-exceeded", "max_cpu_nodes: 7 exceeds the limit 0")], cpu=7, boundary=3 * 1024)
    text = render_baseline(compare(after, _doc("m", [])))
    rows = text.split("New findings:\n\n")[1].splitlines()[2:]
    assert [[c.strip() for c in row.split("|")[1:-1]] for row in rows] == [
        ["error", "`unsupported-op`", "7 nodes: " + ", ".join(f"<code>r{i}</code>" for i in range(5)) + " and 2 more",
         "op Relu not in profile demo"],
        ["error", "`gate-exceeded`", "", "max&#95;cpu&#95;nodes: 7 exceeds the limit 0"]]
    assert "| Boundary bytes        | 0          | 3,072 (3 KiB) | +3,072 (+3 KiB) |" in text


def test_a_model_missing_from_the_baseline_is_new() -> None:
    c = compare(_doc("new", [_finding("unsupported-op", "x", "a")]), None)
    assert not c.found
    assert c.regressions == ["1 new error finding"]


@pytest.fixture
def two_results(tmp_path: Path, run_cli: Callable[..., CliRun]) -> tuple[Path, Path]:
    ok = add_contract(tmp_path, "conv", conv_only(), [1, 3, 8, 8])
    bad = add_contract(tmp_path, "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    assert run_cli("check", ok, "--json", tmp_path / "conv.json", "-q").code == 0
    assert run_cli("check", bad, "--json", tmp_path / "relu.json", "-q").code == 1
    return tmp_path / "conv.json", tmp_path / "relu.json"


def test_result_json_round_trips(two_results: tuple[Path, Path]) -> None:
    for path in two_results:
        doc = json.loads(path.read_text())
        assert result_from_dict(doc).to_dict() == doc


def test_check_with_baseline_exit_codes(tmp_path: Path, two_results: tuple[Path, Path],
                                        run_cli: Callable[..., CliRun]) -> None:
    conv_json, relu_json = two_results
    relu = tmp_path / "models" / "relu" / "npu-gate.json"
    same = run_cli("check", relu, "--baseline", relu_json, "--fail-on", "regressions",
                   "--markdown", tmp_path / "same.md")
    assert same.code == 0
    # The gate's verdict is FAIL, but it does not decide the exit code: the headline says so.
    assert same.out.startswith("npu-gate: relu: FAIL (no regression: exit 0)\n")
    assert same.out.endswith("  baseline: 0 new, 0 fixed findings; no regression\n")
    assert "### Baseline" in (tmp_path / "same.md").read_text()
    # relu against conv's result: a model of another name is new in that baseline
    conv = tmp_path / "models" / "conv" / "npu-gate.json"
    conv_doc = json.loads(conv_json.read_text())
    conv_doc["name"] = "relu"
    renamed = tmp_path / "as-relu.json"
    renamed.write_text(json.dumps(conv_doc))
    worse = run_cli("check", relu, "--baseline", renamed, "--fail-on", "regressions", "-q")
    assert worse.code == 1
    never = run_cli("check", relu, "--baseline", renamed, "--fail-on", "never")
    assert never.code == 0 and never.out.startswith("npu-gate: relu: FAIL (fail-on never: exit 0)\n")
    assert run_cli("check", conv, "--baseline", renamed, "--fail-on", "regressions",
                   "-q").code == 0
    missing = run_cli("check", relu, "--fail-on", "regressions")
    assert missing.code == 2
    assert missing.err == "npu-gate: error: --fail-on regressions needs --baseline FILE\n"


def test_merge_combines_results_into_one_report(tmp_path: Path, two_results: tuple[Path, Path],
                                                run_cli: Callable[..., CliRun]) -> None:
    run = run_cli("merge", *two_results, "--json", tmp_path / "all.json", "--markdown",
                  tmp_path / "all.md", "-q")
    assert run.code == 1
    merged = json.loads((tmp_path / "all.json").read_text())
    validate_merged(merged)
    assert merged["kind"] == "npu-gate-merged"
    assert merged["verdict"] == "fail"
    assert merged["errors"] == []
    assert "baseline" not in merged
    for r in merged["results"]:
        validate_result(r)
    report = (tmp_path / "all.md").read_text()
    assert report.startswith("# ❌ npu-gate: **FAIL** · 2 models\n")
    # A merged document is itself mergeable, and usable as a baseline.
    again = run_cli("merge", tmp_path / "all.json", "--baseline", tmp_path / "all.json",
                    "--fail-on", "regressions", "-q", "--json", tmp_path / "again.json")
    assert again.code == 0
    with_baseline = json.loads((tmp_path / "again.json").read_text())
    validate_merged(with_baseline)
    assert [(c["name"], c["found"], c["new"], c["regressions"]) for c in with_baseline["baseline"]] == [
        ("conv", True, [], []), ("relu", True, [], [])]
    assert run_cli("merge", two_results[0], "-q").code == 0


def test_merged_schema_describes_the_merged_document_only(two_results: tuple[Path, Path]) -> None:
    """schemas/merged.schema.json: a plain result is not a merged document, and each entry of
    `results` is checked against the result schema."""
    conv = json.loads(two_results[0].read_text())
    assert schema_errors(conv, "merged") == [
        "[]: 'kind' is a required property", "[]: 'results' is a required property",
        "[]: 'errors' is a required property"]
    doc = {"schema_version": "1.0", "kind": "npu-gate-merged", "verdict": "error", "results": [conv],
           "errors": [{"contract": "models/bad/npu-gate.json", "problems": ["models/bad/npu-gate.json: model: x"]}]}
    assert schema_errors(doc, "merged") == []
    broken = dict(doc, verdict="unknown", results=[dict(conv, verdict="maybe")],
                  errors=[{"contract": "c", "problems": "one line"}])
    assert sorted(schema_errors(broken, "merged")) == [
        "['errors', 0, 'problems']: 'one line' is not of type 'array'",
        "['results', 0, 'verdict']: 'maybe' is not one of ['pass', 'fail']",
        "['verdict']: 'unknown' is not one of ['pass', 'fail', 'error']"]


def test_terminal_headlines_say_when_the_verdict_does_not_decide_the_exit(
        tmp_path: Path, two_results: tuple[Path, Path], run_cli: Callable[..., CliRun]) -> None:
    conv_json, relu_json = two_results
    # A passing model with one more NPU partition than its baseline: PASS, but exit 1.
    doc = json.loads(conv_json.read_text())
    doc["summary"]["npu_partitions"] += 1
    more = tmp_path / "more-partitions.json"
    more.write_text(json.dumps(doc))
    regressed = run_cli("merge", more, "--baseline", conv_json, "--fail-on", "regressions")
    assert regressed.code == 1
    assert regressed.out.startswith("npu-gate: conv: PASS (regressed: exit 1)\n")
    # Several models: each headline says how it counts, one last line gives the exit code.
    both = run_cli("merge", conv_json, relu_json, "--baseline", relu_json, "--fail-on", "regressions")
    assert both.code == 0
    lines = both.out.splitlines()
    assert [line for line in lines if line.startswith("npu-gate: ")] == [
        "npu-gate: conv: PASS", "npu-gate: relu: FAIL (no regression)", "npu-gate: exit 0 (--fail-on regressions)"]
    # The default --fail-on errors: verdict and exit code agree, nothing added.
    assert run_cli("merge", relu_json).out.startswith("npu-gate: relu: FAIL\n")


def test_merge_rejects_files_that_are_not_results(tmp_path: Path,
                                                  run_cli: Callable[..., CliRun]) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    run = run_cli("merge", junk)
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {junk}: not an npu-gate result "
                       "(run `npu-gate check --json`)\n")



@pytest.mark.parametrize("field", ["rule", "profile", "count", "gate", "timing", "stage"])
def test_crafted_results_are_refused_not_rendered(tmp_path: Path, two_results: tuple[Path, Path],
                                                  run_cli: Callable[..., CliRun], field: str) -> None:
    """A result JSON from another job or a fork's artifact: the terminal and the report show
    its ids and counts as written, so one that does not match the schema is refused."""
    hostile = "x\n::error::pwned`</details><img src=x>@octocat"
    doc = json.loads(two_results[1].read_text())
    if field == "rule":
        doc["findings"][0]["rule"] = hostile
    elif field == "profile":
        doc["profile"]["name"] = hostile
    elif field == "count":
        doc["summary"]["cpu_nodes"] = hostile
    elif field == "gate":
        doc["gates"][0]["name"] = hostile
    elif field == "timing":  # the keys of timings and stages are table cells
        doc["timings"][hostile] = 1.0
    else:
        doc["stages"][hostile] = doc["stages"].popitem()[1]
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(doc))
    for run in (run_cli("merge", crafted, "--markdown", tmp_path / "m.md"),
                run_cli("check", tmp_path / "models" / "relu" / "npu-gate.json", "--baseline", crafted, "-q"),
                run_cli("diff", two_results[1], crafted)):
        assert run.code == 2
        assert "\n::error::" not in run.out + run.err
        assert "::error::pwned" in run.err  # quoted, on one line
    assert not (tmp_path / "m.md").exists()




def test_a_huge_crafted_value_is_quoted_shortened(tmp_path: Path, two_results: tuple[Path, Path],
                                                  run_cli: Callable[..., CliRun]) -> None:
    doc = json.loads(two_results[1].read_text())
    doc["findings"][0]["rule"] = "X" * 1_000_000
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(doc))
    run = run_cli("merge", crafted)
    assert run.code == 2
    [line] = run.err.splitlines()
    assert line.startswith(f"npu-gate: error: {crafted}: findings[0].rule: 'XXX")
    assert len(line) == len("npu-gate: error: ") + 500 and line.endswith("X…")



def test_probe_and_exporter_text_read_back_stays_on_its_line(two_results: tuple[Path, Path]) -> None:
    from npu_gate.render import text

    doc = json.loads(two_results[1].read_text())
    hostile = "x\n::error::pwned\x1b[31m"
    doc["stages"]["probe"] = {"evidence": hostile, "probe_status": hostile}
    doc["exporter_comparison"] = {"exporter": hostile, "status": "failed"}
    out = text.render(result_from_dict(doc))
    assert "\n::error::" not in out and "\x1b" not in out
    assert out.count("x\\n::error::pwned\\x1b[31m") == 3


def test_a_rejected_rewrite_read_back_renders_as_text(tmp_path: Path, two_results: tuple[Path, Path],
                                                      run_cli: Callable[..., CliRun]) -> None:
    import cmarkgfm
    from cmarkgfm.cmark import Options

    doc = json.loads(two_results[1].read_text())
    doc["stages"]["suggestions"] = {"status": "ok", "tried": 1, "rejected": [
        {"rewrite": "x`<img src=x>`", "node": "n", "reason": "r"}]}
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(doc))
    run_cli("merge", crafted, "--markdown", tmp_path / "m.md", "-q")
    report = (tmp_path / "m.md").read_text(encoding="utf-8")
    assert "Tried and not suggested" in report
    assert "<img" not in cmarkgfm.github_flavored_markdown_to_html(report, options=Options.CMARK_OPT_UNSAFE)


def test_composed_report_golden(tmp_path: Path, two_results: tuple[Path, Path],
                                golden: Callable[[str, str], None]) -> None:
    """Two models, one with a baseline that had fewer problems: the report a PR shows."""
    from npu_gate.compare.baseline import compare
    from npu_gate.compare.report import ModelReport, should_fail
    from npu_gate.render.report import render_report
    conv_doc, relu_doc = (json.loads(p.read_text()) for p in two_results)
    for doc in (conv_doc, relu_doc):
        doc["timings"] = {}  # measured: not reproducible
    base = dict(conv_doc, name="relu")  # the base branch's relu model was still clean
    models = [ModelReport("models/conv/npu-gate.json", result_from_dict(conv_doc),
                          comparison=compare(conv_doc, conv_doc)),
              ModelReport("models/relu/npu-gate.json", result_from_dict(relu_doc),
                          comparison=compare(relu_doc, base)),
              ModelReport("models/bad/npu-gate.json", problems=[
                  "models/bad/npu-gate.json: model: 'onnx' is a required property"])]
    assert should_fail(models, "regressions")
    golden("report_many_models_baseline.md",
           render_report(models, failed=True, fail_on="regressions"))


def test_baseline_models_not_in_this_run_are_named(tmp_path: Path, two_results: tuple[Path, Path],
                                                   run_cli: Callable[..., CliRun]) -> None:
    """Models match by name: a baseline model that was not gated (removed, or its contract
    renamed) is named in the terminal and the report, never silently dropped."""
    conv_json, relu_json = two_results
    relu = tmp_path / "models" / "relu" / "npu-gate.json"
    run = run_cli("check", relu, "--baseline", conv_json, "--fail-on", "regressions", "--markdown",
                  tmp_path / "r.md")
    assert run.code == 1
    assert run.out.splitlines()[-2:] == [
        "  baseline: no result named relu (new model); regressed: 1 new error finding",
        "npu-gate: in the baseline, not in this run: conv"]
    assert ("In the baseline, not in this run: <code>conv</code> (models are matched by name: a renamed model "
            "is listed here under its old name and is new under its new one).\n") in (tmp_path / "r.md").read_text()
    merged = run_cli("merge", tmp_path / "conv.json", tmp_path / "relu.json", "-q", "--json", tmp_path / "all.json")
    assert merged.code == 1
    run = run_cli("merge", relu_json, "--baseline", tmp_path / "all.json", "--markdown", tmp_path / "m.md")
    assert run.out.endswith("\nnpu-gate: in the baseline, not in this run: conv\n")
    assert "In the baseline, not in this run: <code>conv</code> " in (tmp_path / "m.md").read_text()
    # Every baseline model gated: no such line.
    run = run_cli("check", relu, "--baseline", relu_json, "--markdown", tmp_path / "same.md")
    assert "not in this run" not in run.out + (tmp_path / "same.md").read_text()


def test_check_baseline_refuses_two_contracts_of_one_name(tmp_path: Path, two_results: tuple[Path, Path],
                                                          run_cli: Callable[..., CliRun]) -> None:
    """Models match the baseline by name: a second contract named `relu` (a new model with an
    error) was compared with the baseline's `relu` and passed as "no regression"."""
    _, relu_json = two_results
    relu = tmp_path / "models" / "relu" / "npu-gate.json"
    other = add_contract(tmp_path / "other", "relu", model_zoo.conv_relu(), [1, 3, 8, 8])
    run = run_cli("check", relu, other, "--baseline", relu_json, "--fail-on", "regressions")
    assert run.code == 2
    assert run.out == ""
    assert run.err == (f"npu-gate: error: {other}: name 'relu' is also {relu}'s: give one of the contracts "
                       "another \"name\" (--baseline matches models by name)\n")


def test_merge_of_a_contract_that_could_not_run_exits_2_like_check(
        tmp_path: Path, two_results: tuple[Path, Path], run_cli: Callable[..., CliRun]) -> None:
    conv = json.loads(two_results[0].read_text())
    doc = {"schema_version": "1.0", "kind": "npu-gate-merged", "verdict": "error", "results": [conv],
           "errors": [{"contract": "models/bad/npu-gate.json", "problems": ["models/bad/npu-gate.json: model: x"]}]}
    validate_merged(doc)
    merged = tmp_path / "with-error.json"
    merged.write_text(json.dumps(doc))
    for fail_on in ("errors", "regressions", "never"):
        run = run_cli("merge", merged, "--baseline", two_results[0], "--fail-on", fail_on)
        assert run.code == 2, fail_on
        assert "npu-gate: models/bad/npu-gate.json: COULD NOT RUN\n  models/bad/npu-gate.json: model: x\n" in run.out
        if fail_on != "errors":
            assert run.out.endswith(f"npu-gate: exit 2 (--fail-on {fail_on})\n")


def test_diff_of_a_merged_document_says_what_it_is(tmp_path: Path, two_results: tuple[Path, Path],
                                                   run_cli: Callable[..., CliRun]) -> None:
    assert run_cli("merge", *two_results, "-q", "--json", tmp_path / "all.json").code == 1
    run = run_cli("diff", tmp_path / "all.json", two_results[1])
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {tmp_path / 'all.json'}: a merged document (npu-gate merge, or the action's "
                       "result-json for several models) holding 2 result(s): conv, relu; diff one model's own result "
                       "JSON (`npu-gate check --json`; the action writes them to results/NN-NAME.json in its "
                       "artifacts-dir)\n")


def test_merge_refuses_two_results_of_the_same_name(tmp_path: Path, two_results: tuple[Path, Path],
                                                   run_cli: Callable[..., CliRun]) -> None:
    conv_json, relu_json = two_results
    assert run_cli("merge", conv_json, relu_json, "-q", "--json", tmp_path / "all.json").code == 1
    tail = ": merge each model once (results are matched by name, as the baseline does)"
    twice = run_cli("merge", conv_json, conv_json)
    assert (twice.code, twice.out) == (2, "")
    assert twice.err == f"npu-gate: error: {conv_json}: given twice\n"
    overlap = run_cli("merge", tmp_path / "all.json", conv_json, "--json", tmp_path / "x.json")
    assert overlap.code == 2 and not (tmp_path / "x.json").exists()
    assert overlap.err == f"npu-gate: error: {conv_json}: result 'conv' is also in {tmp_path / 'all.json'}{tail}\n"
    doc = json.loads((tmp_path / "all.json").read_text())
    doc["results"][1]["name"] = "conv"
    (tmp_path / "same.json").write_text(json.dumps(doc))
    inside = run_cli("merge", tmp_path / "same.json")
    assert inside.code == 2
    assert inside.err == f"npu-gate: error: {tmp_path / 'same.json'}: result 'conv' is twice in this file{tail}\n"
