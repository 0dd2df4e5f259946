"""The GitHub Action's entry point: ``python -m npu_gate.action gate|publish|comment``.

``gate`` runs in the step that imports the user's model: it gets no token (and drops any
token variables it inherited). It writes the result JSON, report.md and comment.md to the
artifacts folder, the job summary, annotations on the contract files and the step outputs,
and exits 0 (1 only when it cannot start: a missing working-directory): the composite's last
step applies the verdict, so the report and the comment are posted even when the gate fails.

``publish`` runs next, from a clean copy of this package (``python -I -S``, see action.yml):
it writes the step outputs from state.json and the job summary from report.md, so the step
that runs model code needs neither GITHUB_OUTPUT nor GITHUB_STEP_SUMMARY (nor GITHUB_ENV or
GITHUB_PATH, which action.yml takes away from it).

``comment`` runs in a later step with the token, from the same clean copy, and never imports
the model or onnx: it posts comment.md as the sticky PR comment, best effort (any API error is a warning).

Inputs arrive as NPU_GATE_* environment variables (see action.yml).
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from npu_gate.files import write_atomic
from npu_gate.github import workflow
from npu_gate.github.api import DEFAULT_API_URL, GitHubClient, GitHubError
from npu_gate.github.comment import (
    DEFAULT_AUTHOR,
    close_open_blocks,
    comment_body,
    fit,
    strip_markers,
    upsert,
    without_timings,
)
from npu_gate.github.untrusted import neutralise
from npu_gate.process import isolation

if TYPE_CHECKING:  # annotations only: render is imported lazily, where it is used
    from npu_gate.compare.report import ModelReport
    from npu_gate.result.types import GateResult

COMMENT_MODES = ("always", "on-change", "on-failure", "never")
TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN", "NPU_GATE_GITHUB_TOKEN", "INPUT_GITHUB-TOKEN")
STATE_FILE = "state.json"  # verdict, changed and PR number for the comment step
SEVERITY_RANK = ("error", "warning")
ANNOTATION_LEVELS = ("error", "warning", "notice")
RESULT_NAME = re.compile(r"[0-9]{2,}-[A-Za-z0-9._-]{1,80}\.json")  # results/ files: f"{i:02d}-{_safe(name)}.json"


def write_text(path: Path, text: str) -> None:
    """One of the step's files written whole (``files.write_atomic``): the publish step and the
    uploaded artifact never see a half-written result, report or state."""
    write_atomic(path, text.encode("utf-8"))


def _env(env: Mapping[str, str], name: str, default: str = "") -> str:
    return (env.get(f"NPU_GATE_{name}") or "").strip() or default


def _run_url(env: Mapping[str, str]) -> str | None:
    keys = ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    server, repo, run = (env.get(k) for k in keys)
    return f"{server}/{repo}/actions/runs/{run}" if server and repo and run else None


def _where(env: Mapping[str, str]) -> str:
    url = _run_url(env)
    run = f"the [workflow run]({url})'s job summary" if url else "the job summary"
    return f"{run} and in the artifacts (`report.md`, `result.json`)"


# ---------------------------------------------------------------- gate step

def find_contracts(spec: str) -> tuple[list[Path], dict[str, list[str]]]:
    """Paths for the ``contracts`` input: paths or globs, separated by newlines or spaces.

    Problems are keyed by what failed: a glob that matches nothing, or a path (given, or a
    glob's match) that is no contract file or folder holding one.
    """
    from npu_gate.contract.spec import find_contract
    from npu_gate.errors import GateError

    paths: list[Path] = []
    problems: dict[str, list[str]] = {}
    for pattern in spec.split():
        if _is_glob(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
            if not matches:
                problems.setdefault(pattern, []).append(f"contracts: no file matches {pattern!r}")
            candidates = [Path(m) for m in matches]
        else:
            candidates = [Path(pattern)]
        for c in candidates:
            try:
                path = find_contract(str(c))
            except GateError as exc:
                problems.setdefault(str(c), []).extend(exc.problems)
                continue
            if path.resolve() not in {p.resolve() for p in paths}:  # one file, two spellings
                paths.append(path)
    return paths, problems


def gate_models(paths: Sequence[Path], profile: str, workspace: Path) -> list[Any]:
    """Gate every contract on its own: one that cannot run does not stop the others.
    ``profile`` (the input) is a built-in name or a path relative to ``workspace``."""
    from npu_gate.compare.report import ModelReport
    from npu_gate.contract.spec import load_contract
    from npu_gate.errors import GateError
    from npu_gate.pipeline import check_contract
    from npu_gate.profile.spec import load_profile

    models = []
    names: dict[str, Path] = {}  # contract name -> its file
    for path in paths:
        try:
            contract = load_contract(path)
            # The baseline, merge and state.json match models by name: two of one name would
            # be compared with the same baseline entry, and this run's result.json refused.
            other = names.setdefault(contract.name, path)
            if other != path:
                raise GateError(f"{path}: name {contract.name!r} is also {other}'s: give one of "
                                "the contracts another \"name\" (models are matched by name)")
            if profile:
                contract = replace(contract, profile=load_profile(profile, workspace,
                                                                  where="profile input"))
            models.append(ModelReport(str(path), result=check_contract(contract), file=str(path)))
        except GateError as exc:
            models.append(ModelReport(str(path), problems=exc.problems, file=str(path)))
        except Exception as exc:  # an internal error in one model must not hide the others
            models.append(ModelReport(str(path), problems=[
                f"internal error: {type(exc).__name__}: {exc}"], file=str(path)))
    return models


def merge_models(spec: str, workspace: Path) -> list[Any]:
    """Results of other jobs for the ``merge`` input: result JSONs or merged documents.

    A gate run's state.json next to one names each model's contract relative to the
    workspace: the annotations point there.
    """
    from npu_gate.compare.merge import load_reports
    from npu_gate.compare.report import ModelReport
    from npu_gate.errors import GateError
    models: list[ModelReport] = []
    seen: dict[str, str] = {}  # result name -> the file it came from: results are matched by name
    for pattern in spec.split():
        magic = _is_glob(pattern)
        matches = sorted(glob.glob(pattern, recursive=True)) if magic else [pattern]
        if not matches:
            models.append(ModelReport(pattern, problems=[f"merge: no file matches {pattern!r}"],
                                      input_problem=True))
        for match in matches:
            try:
                loaded = load_reports([Path(match)])
            except GateError as exc:
                models.append(ModelReport(match, problems=exc.problems, input_problem=True))
                continue
            files = _read_state(Path(match).parent).get("contracts")
            for m in loaded:
                if m.result is not None and m.name in seen:
                    models.append(ModelReport(match, input_problem=True, problems=[
                        f"{match}: result {m.name!r} is also in {seen[m.name]}: merge each model once "
                        "(results are matched by name, as the baseline does)"]))
                    continue
                if m.result is not None:
                    seen[m.name] = match
                file = files.get(m.name) if isinstance(files, dict) else None
                m.file = str(workspace / file) if isinstance(file, str) and file else None
                models.append(m)
    return models


def annotate(models: Sequence[ModelReport], workspace: Path, out: TextIO | None = None,
             fail_on: str = "errors") -> None:
    """::error/::warning annotations, 10 per level (GitHub's limit), spread over the models and
    rules: each (model, rule) gets one before any gets a second, worst rules first.

    A finding at a node whose PyTorch source line is in the repository is annotated on that line
    (it shows in the PR's diff view); the others on the contract file. Under a baseline, findings
    the baseline does not have come first; the ones it has say so, and with ``fail-on:
    regressions`` (where they do not fail the step) they are notices.
    """
    from npu_gate.compare.baseline import finding_key
    from npu_gate.escape import visible
    from npu_gate.rules import RULES

    order = {rule: i for i, rule in enumerate(RULES)}
    # level -> (baseline-old, rule rank, model index, rule), file, line, message
    items: dict[str, list[tuple[tuple[bool, int, int, str], str | None, int | None, str]]] = {
        level: [] for level in ANNOTATION_LEVELS}
    for k, m in enumerate(models):
        file = _relative(Path(m.file), workspace) if m.file else None
        if m.result is None:
            for p in m.problems:
                items["error"].append(((False, -1, k, ""), file, None, f"npu-gate could not run: {p}"))
            continue
        c = m.comparison
        new = {finding_key(f) for f in c.new} if c is not None and c.found else None
        lines = _source_lines(m.result, workspace)
        for f in m.result.active_findings():
            if f.severity not in SEVERITY_RANK:
                continue
            old = new is not None and finding_key(f.to_dict()) not in new
            level = "notice" if old and fail_on == "regressions" else f.severity
            where = f" [{f.node}]" if f.node else ""
            message = f"{m.result.name}: {f.rule}{where}: {f.message}"
            at_file, at_line = lines.get(f.node or "", (file, None))
            items[level].append(((old, order.get(f.rule, len(order)), k, f.rule), at_file, at_line,
                                 message + ("; already in the baseline" if old else "")))
    caps = dict.fromkeys(items, workflow.MAX_ANNOTATIONS)
    if any(len(found) > workflow.MAX_ANNOTATIONS for found in items.values()):
        caps["notice"] -= 1  # room for the note below
    extra = []
    for level, found in items.items():
        chosen = spread(found)
        for _, file, line, message in chosen[: caps[level]]:
            # Model text in the message: escape sequences and bidi overrides shown as text,
            # as on the terminal (the log viewer interprets ANSI colours).
            workflow.command(level, visible(message), out, file=file, line=str(line) if line else None,
                             title=f"npu-gate {level}")
        if len(found) > caps[level]:
            extra.append(f"{len(found) - caps[level]} more {level}s")
    if extra:
        workflow.command("notice", f"npu-gate: {', '.join(extra)} are not annotated "
                         "(GitHub shows 10 per step); see the report.", out)


def spread(found: list[tuple[tuple[bool, int, int, str], Any, Any, str]]) -> list[Any]:
    """Annotations in the order they get the few slots: findings new to the baseline first; then
    round by round, one per (model, rule) group in each round (groups by rule rank, then model),
    so two models, or one model's many CPU nodes, cannot take every slot."""
    out: list[Any] = []
    for old in (False, True):
        groups: dict[tuple[int, int, str], list[Any]] = {}
        for item in found:
            if item[0][0] == old:
                groups.setdefault(item[0][1:], []).append(item)
        queues = [groups[k] for k in sorted(groups)]
        depth = max((len(q) for q in queues), default=0)
        out += [q[i] for i in range(depth) for q in queues if i < len(q)]
    return out


def _source_lines(result: GateResult, workspace: Path) -> dict[str, tuple[str, int]]:
    """Node name -> (file, line) of its PyTorch source, for the nodes whose source file is a
    file of the repository (``workspace``): model text, so only a relative path to an existing
    file under it is taken."""
    from npu_gate.graph.source import in_repository

    out = {}
    root = workspace.resolve()
    for n in result.nodes:
        src = n.source
        if not src or not src.get("file") or not isinstance(src.get("line"), int):
            continue
        if not in_repository(str(src["file"])):  # a NUL byte, an over-long name, /etc/passwd, ../x
            continue
        relative = Path(str(src["file"]))
        try:
            target = (root / relative).resolve()
            found = target.is_relative_to(root) and target.is_file()
        except (OSError, ValueError):  # the whole path too long under the workspace
            continue
        if found:
            out[n.name] = (relative.as_posix(), int(src["line"]))
    return out


def _relative(path: Path, workspace: Path) -> str:
    absolute = path.resolve()
    try:
        return absolute.relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _clear_results(folder: Path) -> None:
    """Remove the per-model results an earlier run wrote (NN-name.json, nothing else), so the
    artifact holds only this run's models; the folder goes too when that empties it."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if RESULT_NAME.fullmatch(path.name) and path.is_file():
            path.unlink()
    if not any(folder.iterdir()):
        folder.rmdir()


def _pr_number(env: Mapping[str, str]) -> int | None:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    number = (event.get("pull_request") or {}).get("number")
    if number is None and (event.get("issue") or {}).get("pull_request"):
        number = event["issue"].get("number")
    return number if isinstance(number, int) and number > 0 else None


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80] or "model"


def gate(env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    from npu_gate.compare.merge import FAIL_ON, attach_baseline, merged_document
    from npu_gate.compare.report import ModelReport, combined_verdict, should_fail
    from npu_gate.errors import GateError
    from npu_gate.render import json_
    from npu_gate.render.report import render_report
    from npu_gate.render.text import text_lines
    env = dict(os.environ if env is None else env)
    for name in TOKEN_VARIABLES:  # this process imports the user's model code
        os.environ.pop(name, None)
    stream = out or sys.stdout
    start = Path.cwd()
    workspace = Path(env["GITHUB_WORKSPACE"]) if env.get("GITHUB_WORKSPACE") else start
    artifacts = (start / _env(env, "ARTIFACTS_DIR", "npu-gate-out")).resolve()
    artifacts.mkdir(parents=True, exist_ok=True)
    fail_on = _env(env, "FAIL_ON", "errors")
    if fail_on not in FAIL_ON:
        workflow.warning(f"fail-on {fail_on!r} is not one of {', '.join(FAIL_ON)}; using errors",
                         stream)
        fail_on = "errors"
    mode = _env(env, "COMMENT", "always")
    if mode not in COMMENT_MODES:
        workflow.warning(f"comment {mode!r} is not one of {', '.join(COMMENT_MODES)}; "
                         "using always", stream)
    workdir = _env(env, "WORKING_DIRECTORY")
    if workdir and not Path(workdir).is_dir():
        workflow.command("error", f"working-directory {workdir!r} is not a folder", stream)
        return 1
    baseline_input = _env(env, "BASELINE")
    # Read before any model code runs: the code could rewrite the file the ratchet compares with.
    baseline: list[dict[str, Any]] | None = None
    baseline_problems: list[str] = []
    if baseline_input:
        from npu_gate.result.read import load_results

        try:
            baseline = load_results((start / baseline_input).resolve())
        except GateError as exc:
            baseline_problems = exc.problems

    # Paths in the inputs are relative to the workspace, except contracts: those are found,
    # and their model code runs, in working-directory.
    models: list[ModelReport]
    notes: list[str] = []
    if _env(env, "MERGE"):
        models = merge_models(_env(env, "MERGE"), workspace)
    else:
        if workdir:
            os.chdir(workdir)
        paths, problems = find_contracts(_env(env, "CONTRACTS", "npu-gate.json"))
        with isolation.recorded_notes() as notes:
            models = gate_models(paths, _env(env, "PROFILE"), start)
        models += [ModelReport(name, problems=found, input_problem=True)
                   for name, found in problems.items()]
    missing: list[str] = []  # baseline models this run did not gate
    for p in baseline_problems:
        workflow.warning(f"baseline not used: {p}", stream)
    if baseline is not None:
        missing = attach_baseline(models, baseline)
    if fail_on == "regressions" and not any(m.comparison for m in models):
        workflow.warning("fail-on: regressions needs a baseline; failing on errors instead", stream)

    failed = should_fail(models, fail_on)
    verdict = combined_verdict(models)
    report = render_report(models, failed=failed, fail_on=fail_on, missing=missing)
    for note in notes:  # the model's code or a compiler ran as this step's user: say so
        workflow.command("notice", f"npu-gate: {note}", stream)
        report += f"\nNote: {note}.\n"
    comment_id = _env(env, "COMMENT_ID")
    results_dir = artifacts / "results"
    _clear_results(results_dir)  # after reading: a merge input may sit there
    results = [m.result for m in models if m.result is not None]
    result_json = artifacts / "result.json"
    if len(models) == 1 and results:
        write_text(result_json, json_.render(results[0]))
    else:
        results_dir.mkdir(exist_ok=True)
        for i, r in enumerate(results):
            write_text(results_dir / f"{i:02d}-{_safe(r.name)}.json", json_.render(r))
        doc = merged_document(models, [m.comparison for m in models])
        write_text(result_json, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    report_md = artifacts / "report.md"
    write_text(report_md, report)
    comment_md = artifacts / "comment.md"
    write_text(comment_md, comment_body(without_timings(report), comment_id, where=_where(env)))
    changed = any(m.comparison is None or m.comparison.changed for m in models)
    pr = _pr_number(env)
    contracts = {m.name: _relative(Path(m.file), workspace) for m in models if m.file}
    totals = {"cpu_nodes": sum(r.summary.get("cpu_nodes") or 0 for r in results),
              "npu_partitions": sum(r.summary.get("npu_partitions") or 0 for r in results)}
    compared = [m.comparison for m in models if m.comparison is not None]
    outputs = {
        "verdict": verdict,
        "failed": "true" if failed else "false",
        "changed": "true" if changed else "false",
        "result-json": str(result_json),
        "report-md": str(report_md),
        "comment-md": str(comment_md),
        "cpu-nodes": str(totals["cpu_nodes"]),
        "npu-partitions": str(totals["npu_partitions"]),
        "new-findings": str(sum(len(c.new) for c in compared)) if compared else "",
        "artifacts-dir": str(artifacts),
        "fail-on": fail_on,
    }
    # The action's `publish` step (a clean interpreter) turns "outputs" into the step outputs and
    # report.md into the job summary: this step runs the model code and gets neither file.
    state = {"verdict": verdict, "failed": failed, "changed": changed, "pr_number": pr,
             "contracts": contracts, "outputs": outputs}
    write_text(artifacts / STATE_FILE, json.dumps(state) + "\n")

    workflow.append_summary(_summary(report), env)
    stream.write(text_lines(models, fail_on, missing))
    annotate(models, workspace, stream, fail_on)
    workflow.set_outputs(outputs, env)
    return 0


def _summary(report: str) -> str:
    return fit(report, workflow.SUMMARY_LIMIT, where="the artifacts (`report.md`)",
               measure=lambda s: len(s.encode("utf-8")))


# ---------------------------------------------------------------- publish step

OUTPUT_NAMES = ("verdict", "failed", "changed", "result-json", "report-md", "comment-md", "cpu-nodes",
                "npu-partitions", "new-findings", "artifacts-dir", "fail-on")
VERDICTS = ("pass", "fail", "error")


def publish(env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """The step after the gate, from a clean interpreter: the gate step's outputs (from
    state.json's ``outputs``) and the job summary (report.md). What does not check out (a
    missing or malformed state, an unknown verdict, a verdict that result.json's findings and
    gates do not give: ``_contradiction``) fails closed: ``verdict`` error, ``failed`` true.
    Stdlib only, like ``comment``."""
    env = dict(os.environ if env is None else env)
    stream = out or sys.stdout
    artifacts = (Path.cwd() / _env(env, "ARTIFACTS_DIR", "npu-gate-out")).resolve()
    outputs = _valid_outputs(_read_state(artifacts).get("outputs"))
    problem = None if outputs is None else _contradiction(artifacts, outputs, _env(env, "FAIL_ON", "errors"))
    if outputs is None or problem is not None:
        from npu_gate.escape import visible

        why = problem or "the gate step left no valid state.json"
        workflow.command("error", f"npu-gate: {visible(why)}; failing", stream)
        workflow.set_outputs({"verdict": "error", "failed": "true", "fail-on": _env(env, "FAIL_ON", "errors")},
                             env)
        return 0
    try:
        report = (artifacts / "report.md").read_text(encoding="utf-8")
    except (OSError, ValueError):
        report = ""
    if report:
        workflow.append_summary(_summary(report), env)
    workflow.set_outputs(outputs, env)
    return 0


def _contradiction(artifacts: Path, outputs: dict[str, str], fail_on: str) -> str | None:
    """Why the gate's outputs cannot be published, or None: the verdict is derived again from
    result.json's findings and gates (a merged document: its results and errors), never read
    from it or from state.json, and both must state it; and ``failed`` must be true where the
    derived verdict fails the step whatever the baseline (``fail-on`` as this step's input says:
    ``error`` unless ``never``, ``fail`` under ``errors``)."""
    from npu_gate.result.read import verdict_problem
    from npu_gate.result.types import FAIL
    from npu_gate.result.verdict import ERROR_VERDICT

    path = artifacts / "result.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        problem = verdict_problem(doc, str(path))
    except (OSError, ValueError):
        return f"{path}: cannot be read as JSON"
    except (KeyError, TypeError, AttributeError):
        return f"{path}: not an npu-gate result"
    if problem is not None:
        return problem
    derived = doc["verdict"]  # the one its findings and gates give, as just checked
    if outputs["verdict"] != derived:
        return (f"{artifacts / STATE_FILE}: verdict {outputs['verdict']!r} contradicts {path}, "
                f"whose findings and gates give {derived!r}")
    if fail_on not in ("regressions", "never"):
        fail_on = "errors"  # as the gate step reads it
    must_fail = (derived == ERROR_VERDICT and fail_on != "never") or (derived == FAIL and fail_on == "errors")
    if must_fail and outputs["failed"] != "true":
        return f"{artifacts / STATE_FILE}: failed false contradicts the verdict {derived!r} under fail-on {fail_on}"
    return None


def _valid_outputs(value: Any) -> dict[str, str] | None:
    """The gate's outputs when they are what it writes: the known names, one-line strings,
    a known verdict and ``failed`` true or false."""
    if not isinstance(value, dict) or set(value) != set(OUTPUT_NAMES):
        return None
    if not all(isinstance(v, str) and "\n" not in v and "\r" not in v for v in value.values()):
        return None
    if value["verdict"] not in VERDICTS or value["failed"] not in ("true", "false"):
        return None
    return {k: value[k] for k in OUTPUT_NAMES}


# ---------------------------------------------------------------- comment step

def _read_state(folder: Path) -> dict[str, Any]:
    try:
        state = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


def comment(env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """Post comment.md as the sticky comment. Always exits 0: commenting is best effort.

    ``COMMENT_FILE`` (the ``comment-file`` input) is an untrusted artifact: its mentions,
    references, links, images and HTML are neutralised. ``REPORT_FILE`` is this job's own
    gate step's comment.md, posted as written.
    """
    env = dict(os.environ if env is None else env)
    stream = out or sys.stdout
    mode = _env(env, "COMMENT", "always")
    if mode == "never":
        return 0
    if mode not in COMMENT_MODES:
        mode = "always"
    untrusted = _env(env, "COMMENT_FILE")
    file = untrusted or _env(env, "REPORT_FILE")
    if not file:
        workflow.warning("npu-gate: no comment file; PR comment skipped", stream)
        return 0
    path = Path(file)
    state = _read_state(path.parent)
    number = _int(_env(env, "PR_NUMBER")) or _pr_number(env) or _int(state.get("pr_number"))
    if number is None:
        stream.write("npu-gate: not a pull request event and no pr-number: no PR comment\n")
        return 0
    token = env.get("NPU_GATE_GITHUB_TOKEN", "")
    if not token:
        workflow.warning("npu-gate: no github-token; PR comment skipped", stream)
        return 0
    failing = (state.get("failed") or state.get("verdict") != "pass"
               or _derived_verdict(path.parent) not in (None, "pass"))
    create = (mode == "always"
              or (mode == "on-failure" and failing)
              or (mode == "on-change" and state.get("changed", True)))
    try:
        text = path.read_text(encoding="utf-8")
        if untrusted:
            text = close_open_blocks(neutralise(strip_markers(text)).rstrip("\n"))
        body = comment_body(text, _env(env, "COMMENT_ID"), where=_where(env))
        client = GitHubClient(token, env.get("GITHUB_REPOSITORY", ""),
                              env.get("GITHUB_API_URL") or DEFAULT_API_URL)
        _check_workflow_run(client, number, env)
        posted = upsert(client, number, body, comment_id=_env(env, "COMMENT_ID"),
                        author=_env(env, "COMMENT_AUTHOR", DEFAULT_AUTHOR), create=create)
    except (GitHubError, OSError, ValueError) as exc:
        hint = " (read-only token: fork PR or missing `pull-requests: write`?)" if getattr(
            exc, "status", 0) == 403 else ""
        workflow.warning(f"npu-gate: could not post the PR comment: {exc}{hint}. "
                         "The job summary and the artifacts still carry the report.", stream)
        return 0
    stream.write(f"npu-gate: PR #{number} comment {posted.action}"
                 + (f": {posted.url}" if posted.url else "") + "\n")
    workflow.set_outputs({"comment-url": posted.url or "", "comment-action": posted.action}, env)
    return 0


def _derived_verdict(folder: Path) -> str | None:
    """The verdict the findings and gates of the result.json in ``folder`` give (not its
    ``verdict``), or None without a readable one: ``on-failure`` creates the comment when
    either the state or this says the gate did not pass."""
    from npu_gate.result.read import document_verdict

    try:
        return document_verdict(json.loads((folder / "result.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _check_workflow_run(client: GitHubClient, number: int, env: Mapping[str, str]) -> None:
    """Under workflow_run the PR number comes from an untrusted artifact: it must name a PR
    whose head is the commit the triggering run tested."""
    if env.get("GITHUB_EVENT_NAME") != "workflow_run":
        return
    try:
        event = json.loads(Path(env.get("GITHUB_EVENT_PATH", "")).read_text(encoding="utf-8"))
        head_sha = event["workflow_run"]["head_sha"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError("workflow_run event without head_sha") from None
    pull = client.pull_request(number)
    if (pull.get("head") or {}).get("sha") != head_sha:
        raise ValueError(f"PR #{number} does not have the head commit of the triggering run")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["gate"]:
        return gate()
    if args == ["comment"]:
        return comment()
    if args == ["publish"]:
        return publish()
    print("usage: python -m npu_gate.action gate|publish|comment", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
