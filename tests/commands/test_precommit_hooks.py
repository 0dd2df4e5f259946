"""The pre-commit side: `npu-gate validate`, `npu-gate check-onnx`, the hook manifest, and
end to end with `pre-commit try-repo` in a throwaway consumer repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from npu_gate.commands.check_onnx import UNCOVERED
from tests.helpers.common import REPO, CliRun
from tests.helpers.hook_fixtures import contract_doc, tiny_model, write_onnx_contract

Run = Callable[..., CliRun]
MANIFEST = REPO / ".pre-commit-hooks.yaml"


# --- npu-gate validate ------------------------------------------------------------------

def test_validate_accepts_contracts_and_profiles(run_cli: Run, tmp_path: Path) -> None:
    contract = write_onnx_contract(tmp_path, name="npu-gate.mobile.json")
    profile = tmp_path / "board.npu-profile.json"
    shutil.copy(REPO / "npu_gate" / "profiles" / "demo.json", profile)
    run = run_cli("validate", contract, profile)
    assert (run.code, run.err) == (0, "")
    assert run.out == f"{contract}: valid contract\n{profile}: valid profile\n"
    assert run_cli("validate", "-q", contract).out == ""


def test_validate_reports_every_problem_with_its_json_path(run_cli: Run, tmp_path: Path) -> None:
    good = write_onnx_contract(tmp_path / "good")
    doc = contract_doc()
    doc["inputs"][0]["shape"] = [1, -3]
    bad = tmp_path / "npu-gate.json"
    bad.write_text(json.dumps(doc))
    profile = tmp_path / "x.npu-profile.json"
    profile.write_text(json.dumps({"name": "x", "description": "d", "source": "s",
                                   "evidence": "illustrative",
                                   "ops": {"Relu": {"constraints": 3}}}))
    broken = tmp_path / "npu-gate.broken.json"
    broken.write_text('{"model": ')
    run = run_cli("validate", good, bad, profile, broken)
    assert run.code == 2
    assert run.out == f"{good}: valid contract\n"
    assert run.err.splitlines() == [
        f"npu-gate: error: {bad}: inputs[0].shape[1]: -3 is less than the minimum of 1",
        f"npu-gate: error: {profile}: ops.Relu.constraints: 3 is not of type 'array'",
        f"npu-gate: error: {broken}:1:11: invalid JSON: Expecting value",
    ]


def test_validate_sniffs_a_profile_by_its_content(run_cli: Run, tmp_path: Path) -> None:
    profile = tmp_path / "board.json"
    shutil.copy(REPO / "npu_gate" / "profiles" / "demo.json", profile)
    assert run_cli("validate", profile).out == f"{profile}: valid profile\n"


def test_validate_checks_what_the_contract_names(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "npu-gate.json"
    path.write_text(json.dumps(contract_doc("missing.onnx", profile="nope")))
    run = run_cli("validate", path)
    assert run.code == 2
    assert "target.profile: unknown profile 'nope'" in run.err
    assert "model.onnx: file 'missing.onnx' not found" in run.err


# --- npu-gate check-onnx ----------------------------------------------------------------

def test_check_onnx_gates_with_the_contracts_that_name_the_file(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_onnx_contract(tmp_path / "a")  # a/npu-gate.json names a/model.onnx: passes
    (tmp_path / "npu-gate.strict.json").write_text(  # a contract above it, naming the same file
        json.dumps(contract_doc("a/model.onnx", gates={"max_npu_partitions": 0})))
    run = run_cli("check-onnx", "a/model.onnx")
    assert run.code == 1
    assert run.out.count(": PASS\n") == 1
    assert "error gate-exceeded: max_npu_partitions: 1 exceeds the limit 0" in run.out


def test_check_onnx_warns_about_unnamed_files_unless_a_profile_is_given(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loose.onnx").write_bytes(tiny_model(cpu_op="Relu").SerializeToString())
    (tmp_path / "npu-gate.json").write_text(json.dumps(contract_doc("other.onnx")))  # names another
    skipped = run_cli("check-onnx", "loose.onnx")
    assert (skipped.code, skipped.out, skipped.err) == (0, "", f"npu-gate: warning: loose.onnx: {UNCOVERED}\n")
    gated = run_cli("check-onnx", "--profile", "demo", "loose.onnx")
    assert gated.code == 1
    assert "error unsupported-op [cpu0]: op Relu not in profile demo" in gated.out
    again = run_cli("check-onnx", "--profile", "demo", "loose.onnx")
    assert again.code == 1
    assert "result from cache" in again.out


def sibling_layout(repo: Path) -> Path:
    """The layout of issue 19: contracts/resnet18_onnx/npu-gate.json names
    ../../onnx/resnet18.onnx (a Relu falls back to the CPU, so max_cpu_nodes 0 fails)."""
    (repo / "onnx").mkdir(parents=True)
    (repo / "onnx" / "resnet18.onnx").write_bytes(tiny_model(cpu_op="Relu").SerializeToString())
    folder = repo / "contracts" / "resnet18_onnx"
    folder.mkdir(parents=True)
    contract = folder / "npu-gate.json"
    contract.write_text(json.dumps(contract_doc("../../onnx/resnet18.onnx")))
    return contract


def test_check_onnx_finds_a_contract_in_a_sibling_folder_of_the_repository(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    sibling_layout(repo)
    (repo / ".git").mkdir()  # the repository root, above the working directory
    (repo / "node_modules" / "x").mkdir(parents=True)  # never searched
    (repo / "node_modules" / "x" / "npu-gate.json").write_text(
        json.dumps(contract_doc("../../onnx/resnet18.onnx", gates={"max_npu_partitions": 0})))
    monkeypatch.chdir(repo / "onnx")
    run = run_cli("check-onnx", "resnet18.onnx", "--no-cache")
    assert (run.code, run.err) == (1, "")
    assert run.out.count("npu-gate: resnet18_onnx: FAIL") == 1
    assert "error gate-exceeded: max_cpu_nodes: 1 exceeds the limit 0" in run.out
    assert "max_npu_partitions" not in run.out


def test_check_onnx_without_git_searches_the_working_directory(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sibling_layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    run = run_cli("check-onnx", "onnx/resnet18.onnx", "--no-cache")
    assert run.code == 1
    assert "npu-gate: resnet18_onnx: FAIL" in run.out


def test_check_onnx_contracts_flag_adds_contracts_of_other_names(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    contract = sibling_layout(tmp_path)
    contract.rename(contract.with_name("gate.json"))  # not a contract name: not found alone
    alone = run_cli("check-onnx", "onnx/resnet18.onnx", "--no-cache")
    assert (alone.code, alone.err) == (0, f"npu-gate: warning: onnx/resnet18.onnx: {UNCOVERED}\n")
    listed = run_cli("check-onnx", "--contracts", "contracts/**/gate.json", "onnx/resnet18.onnx",
                     "--no-cache")
    assert (listed.code, listed.err) == (1, "")
    assert "npu-gate: resnet18_onnx: FAIL" in listed.out
    none = run_cli("check-onnx", "--contracts", "nothing/*.json", "onnx/resnet18.onnx")
    assert (none.code, none.err) == (2, "npu-gate: error: --contracts: 'nothing/*.json' matches no file\n")


def test_check_onnx_require_contract_fails_on_an_uncovered_file(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_onnx_contract(tmp_path / "a")  # covers a/model.onnx, which passes
    (tmp_path / "loose.onnx").write_bytes(tiny_model().SerializeToString())
    run = run_cli("check-onnx", "--require-contract", "a/model.onnx", "loose.onnx")
    assert run.code == 1
    assert run.out.count(": PASS\n") == 1
    assert run.err == f"npu-gate: error: loose.onnx: {UNCOVERED}\n"
    assert run_cli("check-onnx", "--require-contract", "--profile", "demo", "loose.onnx").code == 0
    assert UNCOVERED == ("not gated: no npu-gate contract names it as model.onnx; add one (npu-gate.json "
                         "anywhere in the repository), pass --contracts GLOB for contracts with other "
                         "names, or --profile NAME to gate it without a contract")


def test_check_onnx_warns_about_the_model_of_an_unparseable_contract_as_documented(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/pre-commit.md: check-onnx cannot know which model a broken contract names; the
    contract hook (validate) is the one that fails."""
    monkeypatch.chdir(tmp_path)
    contract = write_onnx_contract(tmp_path)
    contract.write_text(contract.read_text()[:-3])  # truncated JSON
    skipped = run_cli("check-onnx", "model.onnx")
    assert (skipped.code, skipped.err) == (0, f"npu-gate: warning: model.onnx: {UNCOVERED}\n")
    assert run_cli("check-onnx", "--require-contract", "model.onnx").code == 1
    validated = run_cli("validate", "npu-gate.json")
    assert validated.code == 2
    assert validated.err.startswith("npu-gate: error: npu-gate.json:")
    page = " ".join((REPO / "docs" / "pre-commit.md").read_text().split())
    assert ("A contract that cannot be parsed (invalid JSON or YAML) names no model, so its model gets the "
            "warning (exit 0, or 1 with `--require-contract`): keep `npu-gate-contract` in the same config") in page


def test_check_onnx_without_pyyaml_stops_on_a_yaml_contract_rather_than_skipping_its_model(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid YAML contract in a hook environment without PyYAML (`additional_dependencies:
    [pyyaml]` given to npu-gate-contract only): the model it may name must not pass as skipped."""
    monkeypatch.chdir(tmp_path)
    write_onnx_contract(tmp_path)
    contract = tmp_path / "npu-gate.json"
    contract.rename(tmp_path / "npu-gate.yaml")  # JSON is valid YAML
    assert run_cli("check-onnx", "model.onnx").code == 0  # with PyYAML: gated, passes
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` fails, as without the extra
    run = run_cli("check-onnx", "model.onnx", "--no-cache")
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: {tmp_path.resolve() / 'npu-gate.yaml'}: "
                       "YAML contracts need PyYAML (pip install 'npu-gate[yaml]')\n")


def test_check_onnx_uses_the_cache_and_no_cache(run_cli: Run, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_onnx_contract(tmp_path)
    assert "result from cache" not in run_cli("check-onnx", "model.onnx").out
    assert "result from cache" in run_cli("check-onnx", "model.onnx").out
    assert "result from cache" not in run_cli("check-onnx", "--no-cache", "model.onnx").out


def test_check_onnx_missing_file_is_exit_2(run_cli: Run, tmp_path: Path) -> None:
    run = run_cli("check-onnx", tmp_path / "nope.onnx")
    assert run.code == 2
    assert run.err == f"npu-gate: error: {tmp_path / 'nope.onnx'}: file not found\n"


# --- the manifest -----------------------------------------------------------------------

def hooks() -> dict[str, dict[str, object]]:
    return {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}


def test_manifest_hooks() -> None:
    h = hooks()
    assert list(h) == ["npu-gate-contract", "npu-gate-onnx", "npu-gate"]
    assert (h["npu-gate-contract"]["language"], h["npu-gate-contract"]["entry"]) == (
        "python", "npu-gate validate")
    onnx_hook = h["npu-gate-onnx"]
    assert (onnx_hook["language"], onnx_hook["entry"], onnx_hook["files"]) == (
        "python", "npu-gate check-onnx", r"\.onnx$")
    assert onnx_hook["verbose"] is True  # pre-commit shows the uncovered-file warning of a passing hook
    full = h["npu-gate"]
    assert (full["language"], full["entry"], full["pass_filenames"], full["require_serial"]) == (
        "system", "npu-gate check", False, True)
    assert all(hook["minimum_pre_commit_version"] == "3.2.0" for hook in h.values())
    assert not any("additional_dependencies" in hook for hook in h.values())  # never torch


@pytest.mark.parametrize(("path", "matches"), [
    ("npu-gate.json", True), ("models/npu-gate.json", True), ("npu-gate.mobile.json", True),
    ("a/npu-gate.yaml", True), ("board.npu-profile.json", True), ("p/x.npu-profile.json", True),
    ("my-npu-gate.json", False), ("npu-gate.json.bak", False), ("npu-gate-result.json", False),
    ("npu-profile.json", False), ("package.json", False),
])
def test_contract_hook_files_pattern(path: str, matches: bool) -> None:
    assert bool(re.search(str(hooks()["npu-gate-contract"]["files"]), path)) is matches


def pre_commit(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run pre-commit as a user would: the `language: python` hooks import the npu_gate
    their own environment installed from this repository (no PYTHONPATH leaks in), and
    `npu-gate` on PATH (the `language: system` hook) runs this checkout's code."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if cwd != REPO:
        bin_dir = cwd.parent / "user-bin"
        bin_dir.mkdir(exist_ok=True)
        script = bin_dir / "npu-gate"
        script.write_text(
            f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m npu_gate "$@"\n')
        script.chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_manifest_is_valid_for_pre_commit() -> None:
    pytest.importorskip("pre_commit")
    done = pre_commit("validate-manifest", str(MANIFEST), cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


# --- end to end: a consumer repository and `pre-commit try-repo` -----------------------

def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def consumer(tmp_path: Path) -> Path:
    """A git repo whose npu-gate.json names models/good.onnx (every node on the NPU)."""
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("try-repo needs git and this repository as a git checkout")
    repo = tmp_path / "consumer"
    (repo / "models").mkdir(parents=True)
    (repo / "models" / "good.onnx").write_bytes(tiny_model().SerializeToString())
    (repo / "npu-gate.json").write_text(json.dumps(contract_doc("models/good.onnx")))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    return repo


def add_bad_files(repo: Path) -> None:
    """models/npu-gate.bad.json naming models/bad.onnx (a Relu falls back to CPU), and an
    invalid profile."""
    (repo / "models" / "bad.onnx").write_bytes(tiny_model(cpu_op="Relu").SerializeToString())
    (repo / "models" / "npu-gate.bad.json").write_text(json.dumps(contract_doc("bad.onnx")))
    (repo / "broken.npu-profile.json").write_text(json.dumps({"name": "broken"}))
    (repo / "models" / "loose.onnx").write_bytes(tiny_model().SerializeToString())  # no contract names it
    git(repo, "add", "-A")


def hook_line(name: str, status: str) -> str:
    return rf"(?m)^{re.escape(name)}\.+{status}$"


@pytest.mark.slow
def test_try_repo_all_hooks_pass_then_fail_with_reasons(consumer: Path) -> None:
    """Each try-repo installs the python hooks' environment afresh (about 30 s): two runs."""
    good = pre_commit("try-repo", str(REPO), "--all-files", "--verbose", cwd=consumer)
    assert good.returncode == 0, good.stdout + good.stderr
    out = good.stdout
    for name in ("npu-gate contract and profile files", "npu-gate ONNX models", "npu-gate"):
        assert re.search(hook_line(name, "Passed"), out), out
    assert "npu-gate.json: valid contract" in out
    assert out.count("npu-gate: consumer: PASS") == 2  # the ONNX hook and the full gate

    add_bad_files(consumer)
    bad = pre_commit("try-repo", str(REPO), "--all-files", cwd=consumer)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    out = bad.stdout
    assert re.search(hook_line("npu-gate contract and profile files", "Failed"), out), out
    assert re.search(hook_line("npu-gate ONNX models", "Failed"), out), out
    assert re.search(hook_line("npu-gate", "Passed"), out), out  # npu-gate.json is unchanged
    assert "- exit code: 2" in out  # the invalid profile
    assert ("npu-gate: error: broken.npu-profile.json: (root): 'ops' is a required property"
            in out)
    assert "models/npu-gate.bad.json: valid contract" in out
    assert "- exit code: 1" in out  # the bad model
    assert "npu-gate: consumer: PASS" in out
    assert "npu-gate: models: FAIL" in out
    assert "error unsupported-op [cpu0]: op Relu not in profile demo" in out
    assert "error gate-exceeded: max_cpu_nodes: 1 exceeds the limit 0" in out
    assert f"npu-gate: warning: models/loose.onnx: {UNCOVERED}" in out  # shown without --verbose


@pytest.mark.slow
def test_try_repo_system_hook_runs_check_and_then_hits_the_cache(consumer: Path) -> None:
    # `language: system` installs nothing: npu-gate is the one on PATH (see pre_commit()).
    first = pre_commit("try-repo", str(REPO), "npu-gate", "--all-files", "--verbose", cwd=consumer)
    assert first.returncode == 0, first.stdout + first.stderr
    assert re.search(r"npu-gate\.+Passed", first.stdout)
    assert "npu-gate: consumer: PASS" in first.stdout
    assert "result from cache" not in first.stdout
    second = pre_commit("try-repo", str(REPO), "npu-gate", "--all-files", "--verbose", cwd=consumer)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "result from cache (key " in second.stdout
