"""Hostile profile chains and the paths a contract names (issue 43, items 5, 6 and 9): an `extends`
chain deeper than MAX_EXTENDS, and any profile or file outside the repository (the contract's git work
tree, else its folder), are one error line naming the key, read nothing and quote nothing of the file;
`profile check` names typos, repeats and dead entries in `splits`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate.errors import ProfileError
from npu_gate.profile.spec import MAX_EXTENDS, load_profile
from tests.helpers.common import CliRun
from tests.helpers.hook_fixtures import tiny_model

Run = Callable[..., CliRun]
HEAD = {"name": "p", "description": "d", "source": "s", "evidence": "illustrative"}
TOKEN = "ghp_" + "x" * 36  # a token-like value in a JSON file outside the repository


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(HEAD | doc), encoding="utf-8")
    return path


def _repository(tmp_path: Path) -> Path:
    """A git work tree beside a folder outside it that holds a secret JSON file."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.json").write_text(json.dumps({"name": TOKEN, "ops": TOKEN}), encoding="utf-8")
    return repo


def _contract(folder: Path, **doc: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(tiny_model().SerializeToString())
    contract = {"model": {"onnx": "model.onnx"}, "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
                "target": {"profile": "demo"}} | doc
    path = folder / "npu-gate.json"
    path.write_text(json.dumps(contract), encoding="utf-8")
    return path


def test_a_chain_of_max_extends_bases_loads_and_one_more_is_one_line(tmp_path: Path) -> None:
    _write(tmp_path / "p0.json", {"extends": "demo", "ops": {}})
    for i in range(1, MAX_EXTENDS + 1):
        _write(tmp_path / f"p{i}.json", {"extends": f"p{i - 1}.json", "ops": {}})
    # p{MAX_EXTENDS - 1} has MAX_EXTENDS bases (the last one demo)
    assert len(load_profile(str(tmp_path / f"p{MAX_EXTENDS - 1}.json")).extends) == MAX_EXTENDS
    with pytest.raises(ProfileError) as info:
        load_profile(str(tmp_path / f"p{MAX_EXTENDS}.json"))
    assert info.value.problems == [f"{tmp_path / 'p0.json'}: extends chain deeper than {MAX_EXTENDS}"]


@pytest.mark.slow  # 3,001 files written
def test_an_extends_chain_3000_deep_is_one_line_not_a_recursion_error(tmp_path: Path, run_cli: Run) -> None:
    for i in range(3_000):
        _write(tmp_path / f"p{i}.json", {"extends": f"p{i + 1}.json", "ops": {}})
    _write(tmp_path / "p3000.json", {"ops": {}})
    contract = _contract(tmp_path / "c", target={"profile": "../p0.json"})
    (tmp_path / ".git").mkdir()
    r = run_cli("check", contract)
    stopped = tmp_path / "c" / ".." / f"p{MAX_EXTENDS}.json"
    assert (r.code, r.err) == (2, f"npu-gate: error: {stopped}: extends chain deeper than {MAX_EXTENDS}\n")
    r = run_cli("profile", "check", tmp_path / "p0.json")  # the base is read on its own: the same limit
    assert (r.code, r.err) == (1, f"npu-gate: error: {tmp_path / f'p{MAX_EXTENDS}.json'}: extends chain deeper "
                                  f"than {MAX_EXTENDS}\n")


@pytest.mark.parametrize("ref", ["../../outside/secret.json", "ABSOLUTE", "/etc/passwd", "/proc/self/environ",
                                 "link.json"])
def test_extends_outside_the_repository_is_refused_unread(tmp_path: Path, run_cli: Run, ref: str) -> None:
    repo = _repository(tmp_path)
    secret = tmp_path / "outside" / "secret.json"
    ref = str(secret) if ref == "ABSOLUTE" else ref
    (repo / "profiles").mkdir()
    (repo / "profiles" / "link.json").symlink_to(secret)  # a symlink in the repository, resolved
    profile = _write(repo / "profiles" / "p.json", {"extends": ref, "ops": {}})
    contract = _contract(repo / "m", target={"profile": "../profiles/p.json"})
    for command, label in ((["profile", "check", profile], profile),
                           (["inspect", repo / "x.onnx", "--profile", profile], profile),
                           (["check", contract], repo / "m" / ".." / "profiles" / "p.json")):
        r = run_cli(*command)
        assert r.code in (1, 2) and r.err == (
            f"npu-gate: error: {label}: extends: {ref!r} is outside the repository ({repo}): only a built-in "
            "profile or a file of the repository is read\n"), command
        assert TOKEN not in r.out + r.err


def test_a_contract_s_profile_outside_its_repository_is_refused(tmp_path: Path, run_cli: Run,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repository(tmp_path)
    contract = _contract(repo / "m", target={"profile": "../../outside/secret.json"})
    r = run_cli("check", contract)
    assert (r.code, r.err) == (2, f"npu-gate: error: {contract}: target.profile: '../../outside/secret.json' is "
                                  f"outside the repository ({repo}): only a built-in profile or a file of the "
                                  "repository is read\n")
    # without a git work tree: the working folder when it holds the contract, else the contract's folder
    (repo / ".git").rmdir()
    _write(repo / "shared.json", {"extends": "demo", "ops": {}})
    contract = _contract(repo / "m", target={"profile": "../shared.json"})
    r = run_cli("check", contract)
    assert r.code == 2 and f"target.profile: '../shared.json' is outside the repository ({repo / 'm'})" in r.err
    monkeypatch.chdir(repo)
    assert run_cli("check", contract).code == 0
    monkeypatch.chdir(repo / "m")
    assert run_cli("check", contract).code == 2
    _write(repo / "m" / "own.json", {"extends": "demo", "ops": {}})
    assert run_cli("check", _contract(repo / "m", target={"profile": "own.json"})).code == 0


def test_every_file_a_contract_names_is_bound_to_its_repository(tmp_path: Path, run_cli: Run) -> None:
    repo = _repository(tmp_path)
    secret = str(tmp_path / "outside" / "secret.json")
    (repo / "m").mkdir()
    os.symlink(secret, repo / "m" / "timings.json")
    contract = _contract(repo / "m", model={"onnx": "../../outside/secret.json"},
                         numerics={"samples_file": secret}, device_timings="timings.json",
                         quantization={"calibration": {"samples_file": "/proc/self/environ"}},
                         replacement={"onnx": "a\u0000b.onnx"})
    r = run_cli("check", contract)
    tail = f"is outside the repository ({repo}): a contract reads only files of its repository"
    assert r.code == 2 and r.err.splitlines() == [
        f"npu-gate: error: {contract}: model.onnx: '../../outside/secret.json' {tail}",
        f"npu-gate: error: {contract}: replacement.onnx: 'a\\x00b.onnx' cannot name a file (a NUL byte, or a name "
        "longer than the file system allows)",
        f"npu-gate: error: {contract}: numerics.samples_file: {secret!r} {tail}",
        f"npu-gate: error: {contract}: device_timings: 'timings.json' {tail}",
        f"npu-gate: error: {contract}: quantization.calibration.samples_file: '/proc/self/environ' {tail}",
    ]
    assert TOKEN not in r.err


def test_a_file_name_longer_than_the_system_allows_is_one_line(tmp_path: Path, run_cli: Run) -> None:
    (tmp_path / ".git").mkdir()
    long = "a" * 300 + ".onnx"
    r = run_cli("check", _contract(tmp_path / "m", model={"onnx": long}, device_timings="b/" * 2_100))
    cannot = "cannot name a file (a NUL byte, or a name longer than the file system allows)"
    assert r.code == 2 and [line.split(": ", 4)[3:] for line in r.err.splitlines()] == [
        ["model.onnx", f"{long[:299] + '…'!r} {cannot}"],
        ["device_timings", f"{('b/' * 150)[:299] + '…'!r} {cannot}"],
    ]
    profile = _write(tmp_path / "p.json", {"extends": "c/" * 2_100 + "x.json", "ops": {}})
    r = run_cli("profile", "check", profile)
    assert (r.code, r.err) == (1, f"npu-gate: error: {profile}: extends: {('c/' * 150)[:299] + '…'!r} {cannot}\n")


def test_splits_typos_repeats_and_dead_entries_are_profile_check_errors(tmp_path: Path, run_cli: Run) -> None:
    constraint = [{"id": "c", "output": 0, "dim": {"axis": -1, "max": 8}}]
    pieces = [{"op": "Conv", "device": "npu"}, {"op": "Transpose", "device": "cpu"}]
    entry = {"constraints": constraint, "pieces": pieces, "evidence": "e"}
    profile = _write(tmp_path / "p.json", {"extends": "demo", "ops": {"MatMul": {"constraints": []}}, "splits": [
        entry | {"id": "a", "op": "MatMul", "context": {"producers": {"op": "Cnov"}, "readers": ["Relu", "Transpsoe"]}},
        entry | {"id": "a", "op": "Conv"},  # the base's op: fine, but the id repeats
        entry | {"id": "b", "op": "Gemm"},
    ]})
    r = run_cli("profile", "check", profile)
    assert (r.code, r.err.splitlines()) == (1, [
        f"npu-gate: error: {profile}: splits[1].id: duplicate split id 'a'",
        f"npu-gate: error: {profile}: splits[2].op: 'Gemm' is not in ops, so the entry never matches (a split "
        "applies to a node placed on the NPU)",
        f"npu-gate: error: {profile}: splits[0].context.producers.op: unknown op type 'Cnov' in domain ai.onnx; "
        "did you mean 'Conv'?",
        f"npu-gate: error: {profile}: splits[0].context.readers[1]: unknown op type 'Transpsoe' in domain ai.onnx; "
        "did you mean 'Transpose' or 'ConvTranspose'?",
    ])


def test_a_command_line_name_longer_than_the_system_allows_is_one_line(tmp_path: Path, run_cli: Run) -> None:
    long = str(tmp_path / ("a" * 300 + ".json"))
    for command in (["profile", "check", long], ["check", long], ["inspect", long, "--profile", long]):
        r = run_cli(*command)
        assert r.code == 2 and len(r.err.splitlines()) == 1 and r.err.startswith("npu-gate: error: "), command
