"""The result cache: hits, a miss on every key change, corrupted entries, concurrent writers,
and a hit that imports none of onnx, onnxruntime, numpy or torch."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest

from npu_gate import cache
from npu_gate.contract.spec import load_contract
from npu_gate.versions import tool_versions
from tests.helpers.common import REPO, CliRun, validate_result
from tests.helpers.hook_fixtures import tiny_model, write_onnx_contract

CACHED = "result from cache (key "
Run = Callable[..., CliRun]


def entries(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if not p.name.startswith(".tmp-"))


@pytest.fixture
def cache_dir() -> Path:
    return Path(os.environ[cache.ENV_VAR])  # set per test by conftest


def test_second_run_is_a_hit_with_the_same_outputs(run_cli: Run, tmp_path: Path,
                                                   cache_dir: Path) -> None:
    contract = write_onnx_contract(tmp_path / "m", tiny_model(cpu_op="Relu"))
    out = tmp_path / "out"
    first = run_cli("check", contract, "--json", out / "1.json", "--markdown", out / "1.md",
                    "--log", out / "1.log")
    second = run_cli("check", contract, "--json", out / "2.json", "--markdown", out / "2.md",
                     "--log", out / "2.log")

    assert (first.code, second.code) == (1, 1)
    assert CACHED not in first.out
    [entry] = entries(cache_dir)
    key = entry.stem
    assert entry.parent.parent.name == "0.1.0"  # entries live under the npu_gate version
    assert second.out.startswith(first.out)
    assert second.out[len(first.out):].startswith(f"  {CACHED}{key[:12]}, computed ")
    fresh = json.loads((out / "1.json").read_text())
    cached = json.loads((out / "2.json").read_text())
    assert cached.pop("cache") == {"hit": True, "key": key, "created": cached_created(second)}
    assert cached == fresh
    validate_result(json.loads((out / "2.json").read_text()))
    markdown = (out / "2.md").read_text()
    assert markdown.startswith((out / "1.md").read_text())
    assert f"_Result from cache (key {key[:12]}" in markdown
    assert "`npu-gate check --no-cache` recomputes it._" in markdown
    assert (out / "2.log").read_text() == (out / "1.log").read_text()


def cached_created(run: CliRun) -> str:
    return run.out.split(", computed ")[1].split(")")[0]


def test_no_cache_runs_afresh_and_refreshes_the_entry(run_cli: Run, tmp_path: Path,
                                                      cache_dir: Path) -> None:
    contract = write_onnx_contract(tmp_path)
    assert run_cli("check", contract).code == 0
    [entry] = entries(cache_dir)
    entry.write_text("garbage")
    fresh = run_cli("check", contract, "--no-cache")
    assert (fresh.code, CACHED in fresh.out) == (0, False)
    assert json.loads(entry.read_text())["exit_code"] == 0  # rewritten by the forced run
    assert CACHED in run_cli("check", contract).out


def test_cache_dir_option_beats_the_environment(run_cli: Run, tmp_path: Path,
                                                cache_dir: Path) -> None:
    contract = write_onnx_contract(tmp_path / "m")
    assert run_cli("check", contract, "--cache-dir", tmp_path / "elsewhere", "-q").code == 0
    assert entries(cache_dir) == []
    assert len(entries(tmp_path / "elsewhere")) == 1


def test_default_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache.ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.resolve_dir(None) == tmp_path / "npu-gate"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.resolve_dir(None) == tmp_path / "home" / ".cache" / "npu-gate"
    assert cache.resolve_dir("x") == Path("x")


# --- a miss on every key change ---------------------------------------------------------

def hit(run_cli: Run, contract: Path, *extra: str) -> bool:
    run = run_cli("check", contract, *extra)
    assert run.code in (0, 1), run.err
    return CACHED in run.out


def test_model_bytes_change_is_a_miss(run_cli: Run, tmp_path: Path) -> None:
    contract = write_onnx_contract(tmp_path)
    assert not hit(run_cli, contract)
    assert hit(run_cli, contract)
    (tmp_path / "model.onnx").write_bytes(tiny_model(scale=3.0).SerializeToString())
    assert not hit(run_cli, contract)
    (tmp_path / "model.onnx").write_bytes(tiny_model(cpu_op="Relu").SerializeToString())
    run = run_cli("check", contract)
    assert run.code == 1
    assert CACHED not in run.out


def test_contract_change_is_a_miss(run_cli: Run, tmp_path: Path) -> None:
    contract = write_onnx_contract(tmp_path)
    assert not hit(run_cli, contract)
    contract.write_text(contract.read_text() + "\n")  # same meaning, other bytes
    assert not hit(run_cli, contract)
    assert hit(run_cli, contract)


def test_profile_change_is_a_miss(run_cli: Run, tmp_path: Path) -> None:
    profile = tmp_path / "t.npu-profile.json"
    doc = json.loads((REPO / "npu_gate" / "profiles" / "demo.json").read_text())
    profile.write_text(json.dumps(doc))
    contract = write_onnx_contract(tmp_path, tiny_model(cpu_op="Relu"),
                                   profile="t.npu-profile.json")
    assert run_cli("check", contract).code == 1
    doc["ops"]["Relu"] = {"constraints": []}
    profile.write_text(json.dumps(doc))
    run = run_cli("check", contract)
    assert (run.code, CACHED in run.out) == (0, False)


def test_npu_gate_version_change_is_a_miss(run_cli: Run, tmp_path: Path, cache_dir: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    contract = write_onnx_contract(tmp_path)
    assert not hit(run_cli, contract)
    monkeypatch.setattr(cache, "__version__", "0.2.0")
    assert not hit(run_cli, contract)
    assert hit(run_cli, contract)
    assert sorted(p.name for p in cache_dir.iterdir()) == ["0.1.0", "0.2.0"]


def test_npu_gate_code_change_is_a_miss(run_cli: Run, tmp_path: Path, cache_dir: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    contract = write_onnx_contract(tmp_path)
    assert not hit(run_cli, contract)
    assert hit(run_cli, contract)
    monkeypatch.setattr(cache, "code_digest", lambda: "0" * 64)  # other code, same version string
    assert not hit(run_cli, contract)
    assert hit(run_cli, contract)
    assert [p.parent.parent.name for p in entries(cache_dir)] == ["0.1.0", "0.1.0"]


def copy_of_npu_gate(root: Path) -> dict[str, Path]:
    """The package and the schemas as a source checkout holds them, without bytecode."""
    shutil.copytree(REPO / "npu_gate", root / "npu_gate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "schemas", root / "schemas")
    return {"npu_gate": root / "npu_gate", "schemas": root / "schemas"}


def test_code_digest_covers_every_file_of_the_package_and_the_schemas(tmp_path: Path) -> None:
    assert cache.code_digest() == cache.tree_digest({"npu_gate": REPO / "npu_gate", "schemas": REPO / "schemas"})
    folders = copy_of_npu_gate(tmp_path)
    pkg = folders["npu_gate"]
    base = cache.tree_digest(folders)
    assert base == cache.code_digest()  # bytecode and the checkout's location are not in it
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "cache.cpython-311.pyc").write_bytes(b"x")
    (pkg / ".cache.py.swp").write_bytes(b"x")
    (pkg / "render" / "text.pyc").write_bytes(b"x")
    assert cache.tree_digest(folders) == base

    def changed(path: Path, edit: Callable[[bytes], bytes]) -> str:
        before = path.read_bytes()
        path.write_bytes(edit(before))
        digest = cache.tree_digest(folders)
        path.write_bytes(before)
        assert cache.tree_digest(folders) == base
        return digest

    digests = {
        changed(pkg / "placement" / "place.py", lambda b: b.replace(b"not in profile", b"MISSING FROM profile")),
        changed(pkg / "render" / "text.py", lambda b: b + b"\n"),
        changed(pkg / "profiles" / "demo.json", lambda b: b.replace(b'"Conv"', b'"Conw"')),
        changed(pkg / "profiles" / "rknn-rk3588.calibration.json", lambda b: b + b" "),
        changed(folders["schemas"] / "profile.schema.json", lambda b: b + b" "),
    }
    assert len(digests) == 5 and base not in digests
    (pkg / "placement" / "place.py").rename(pkg / "placement" / "place2.py")  # the same bytes under another name
    assert cache.tree_digest(folders) not in digests | {base}


@pytest.mark.slow
def test_an_edited_install_with_the_same_version_is_not_answered_from_the_cache(tmp_path: Path) -> None:
    """The walkthrough's case: the installed code changes, __version__ does not."""
    copy_of_npu_gate(tmp_path / "install")
    contract = write_onnx_contract(tmp_path / "m", tiny_model(cpu_op="Relu"))
    env = os.environ | {"PYTHONPATH": str(tmp_path / "install")}

    def check() -> str:
        done = subprocess.run([sys.executable, "-m", "npu_gate", "check", str(contract)], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=120, check=False)
        assert done.returncode == 1, done.stderr
        return done.stdout

    first = check()
    assert "op Relu not in profile demo" in first and CACHED not in first
    assert CACHED in check()
    placement = tmp_path / "install" / "npu_gate" / "placement" / "place.py"
    placement.write_text(placement.read_text().replace("not in profile", "MISSING FROM profile"))
    after = check()
    assert "op Relu MISSING FROM profile demo" in after and CACHED not in after


def test_an_entry_of_another_version_is_never_trusted(run_cli: Run, tmp_path: Path,
                                                      cache_dir: Path) -> None:
    contract = write_onnx_contract(tmp_path)
    run_cli("check", contract)
    [entry] = entries(cache_dir)
    doc = json.loads(entry.read_text())
    doc["npu_gate"] = "0.0.9"
    doc["digest"] = cache._digest(doc)  # a well-formed entry, written by another version
    entry.write_text(json.dumps(doc))
    assert not hit(run_cli, contract)


def test_dependency_version_change_is_a_miss(run_cli: Run, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    contract = write_onnx_contract(tmp_path)
    assert not hit(run_cli, contract)
    real = tool_versions()
    monkeypatch.setattr(cache, "tool_versions", lambda: real | {"onnx": "0.0.1"})
    assert not hit(run_cli, contract)


def test_waiver_expiry_is_part_of_the_key(run_cli: Run, tmp_path: Path) -> None:
    waiver = {"rule": "unsupported-op", "op_type": "Relu", "reason": "r", "expires": "2027-01-01"}
    contract = write_onnx_contract(tmp_path, tiny_model(cpu_op="Relu"), waivers=[waiver], gates={})
    before, after = ("--today", "2026-06-01"), ("--today", "2027-06-01")
    assert run_cli("check", contract, *before).code == 0
    assert hit(run_cli, contract, "--today", "2026-12-31")  # still unexpired: same result
    run = run_cli("check", contract, *after)
    assert (run.code, CACHED in run.out) == (1, False)


def test_external_data_change_is_a_miss(run_cli: Run, tmp_path: Path) -> None:
    folder = tmp_path / "ext"
    folder.mkdir()
    model = tiny_model()
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    contract = write_onnx_contract(folder, model)  # rewrites model.onnx without external data
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    assert not hit(run_cli, contract)
    assert hit(run_cli, contract)
    data = folder / "model.onnx.data"
    stat = data.stat()
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # touched, same bytes
    assert hit(run_cli, contract)
    raw = bytearray(data.read_bytes())
    raw[0] ^= 0xFF
    data.write_bytes(bytes(raw))
    assert not hit(run_cli, contract)


def torch_contract(folder: Path) -> Path:
    shutil.copytree(REPO / "examples" / "seed-hardswish", folder)
    return folder / "npu-gate.json"


def test_the_data_beside_a_torch_contract_is_in_the_key_its_python_files_are_not(tmp_path: Path) -> None:
    """The code a factory imports is an entry's dependency (the files the run imported, see
    test_torch_contract_hit_and_miss_on_source_change); the key covers the data beside it."""
    contract_path = torch_contract(tmp_path / "seed")
    today = dt.date(2026, 1, 1)

    def key(*exclude: Path) -> str:
        return cache.contract_key(load_contract(contract_path), today, exclude)

    base = key()
    assert key() == base
    net = tmp_path / "seed" / "seed_net.py"
    net.write_text(net.read_text() + "# comment\n")
    (tmp_path / "seed" / "tools.py").write_text("print('unrelated')\n")
    assert key() == base
    (tmp_path / "seed" / "weights.bin").write_bytes(b"\x00")  # data the factory may read
    assert key() != base
    with_data = key()
    (tmp_path / "seed" / "__pycache__").mkdir(exist_ok=True)
    (tmp_path / "seed" / "__pycache__" / "seed_net.cpython-311.pyc").write_bytes(b"x")
    (tmp_path / "seed" / ".hidden").write_text("x")
    assert key() == with_data
    report = tmp_path / "seed" / "report.md"  # --markdown written into the contract folder
    report.write_text("run 1")
    assert key(report) == with_data


def test_a_torch_factory_outside_the_contract_folder_is_keyed_too(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the repository root, where the module now is
    contract_path = torch_contract(tmp_path / "seed")
    (tmp_path / "seed" / "seed_net.py").rename(tmp_path / "seed_net.py")
    key = cache.contract_key(load_contract(contract_path), dt.date(2026, 1, 1))  # no NotCacheable
    assert key == cache.contract_key(load_contract(contract_path), dt.date(2026, 1, 1))


def test_unreadable_file_in_a_torch_folder_runs_uncached(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from npu_gate import cli
    from npu_gate.commands.cached import cached
    from npu_gate.result.types import GateResult

    contract_path = torch_contract(tmp_path / "seed")
    (tmp_path / "seed" / "weights.bin").write_bytes(b"\x00")
    real = cache._sha256_file

    def deny(path: Path) -> str:  # root reads any file, so chmod cannot stage this
        if path.name == "weights.bin":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(cache, "_sha256_file", deny)
    result = GateResult(name="seed", verdict="pass", profile={"name": "demo", "evidence": "x"},
                        versions={}, model={})
    args = cli.build_parser().parse_args(["check", str(contract_path), "-q"])
    code = cached(args, "seed", lambda: cache.contract_key(
        load_contract(contract_path), dt.date(2026, 1, 1)), lambda: (result, []))
    assert code == 0
    assert capsys.readouterr().err == (
        f"npu-gate: note: seed: not cached: cannot read {tmp_path / 'seed' / 'weights.bin'}: "
        "Permission denied\n")
    assert entries(cache_dir) == []


@pytest.mark.torch
@pytest.mark.slow
def test_torch_contract_hit_and_miss_on_source_change(run_cli: Run, tmp_path: Path) -> None:
    contract = torch_contract(tmp_path / "seed")
    first = run_cli("check", contract)
    second = run_cli("check", contract)
    assert (first.code, second.code) == (1, 1)
    assert CACHED not in first.out
    assert CACHED in second.out
    (tmp_path / "seed" / "tools.py").write_text("print('unrelated')\n")  # not imported: still a hit
    assert CACHED in run_cli("check", contract).out
    net = tmp_path / "seed" / "seed_net.py"
    net.write_text(net.read_text() + "# comment\n")  # imported by the factory: a miss
    assert CACHED not in run_cli("check", contract).out
    assert CACHED in run_cli("check", contract).out


@pytest.mark.torch
@pytest.mark.slow
def test_a_module_outside_the_contract_folder_is_a_dependency(run_cli: Run, tmp_path: Path) -> None:
    """The factory's module at the repository root (issue 18): cached, and its change is a miss."""
    (tmp_path / ".git").mkdir()
    contract = torch_contract(tmp_path / "contracts" / "seed")
    (tmp_path / "contracts" / "seed" / "seed_net.py").rename(tmp_path / "seed_net.py")
    assert CACHED not in run_cli("check", contract).out
    assert CACHED in run_cli("check", contract).out
    net = tmp_path / "seed_net.py"
    net.write_text(net.read_text() + "# comment\n")
    assert CACHED not in run_cli("check", contract).out


UNCACHED = {  # what docs/cache.md lists under "Runs that never use the cache"
    "--out": ["--out", "bundle"],
    "--bundle": ["--bundle"],
    "--baseline": ["--baseline", "base.json"],
    "--fail-on regressions": ["--baseline", "base.json", "--fail-on", "regressions"],
    "--fail-on never": ["--fail-on", "never"],
    "--device-timings": ["--device-timings", "board.csv"],
}


@pytest.mark.parametrize("option", list(UNCACHED))
def test_the_documented_uncached_runs_neither_read_nor_store(run_cli: Run, tmp_path: Path, cache_dir: Path,
                                                             monkeypatch: pytest.MonkeyPatch, option: str) -> None:
    monkeypatch.chdir(tmp_path)  # --bundle writes npu-gate-out/ here
    contract = write_onnx_contract(tmp_path / "m")
    assert run_cli("check", contract, "--json", "base.json", "--cache-dir", tmp_path / "other", "-q").code == 0
    Path("board.csv").write_text("scope,key,ms\nnode,mul0,0.5\n")
    for _ in range(2):
        run = run_cli("check", contract, *UNCACHED[option])
        assert (run.code, CACHED in run.out) == (0, False), run.err
    assert entries(cache_dir) == []
    doc = (REPO / "docs" / "cache.md").read_text()
    section = doc.split("## Runs that never use the cache\n")[1].split("\n## ")[0].split("\nMeasured with")[0]
    assert f"`{option}" in section


# --- corrupted entries and concurrent writers -----------------------------------------------

@pytest.mark.parametrize("damage", ["truncate", "not-json", "tamper", "empty", "wrong-key",
                                    "json-list", "bad-deps"])
def test_corrupted_entry_is_ignored_and_rebuilt(run_cli: Run, tmp_path: Path, cache_dir: Path,
                                                damage: str) -> None:
    contract = write_onnx_contract(tmp_path)
    run_cli("check", contract)
    [entry] = entries(cache_dir)
    text = entry.read_text()
    if damage == "truncate":
        entry.write_text(text[: len(text) // 2])
    elif damage == "not-json":
        entry.write_bytes(b"\xff\xfe garbage")
    elif damage == "tamper":
        entry.write_text(text.replace('"exit_code": 0', '"exit_code": 1'))
    elif damage == "empty":
        entry.write_text("")
    elif damage == "json-list":
        entry.write_text("[1, 2]")
    elif damage == "bad-deps":
        doc = json.loads(text)
        doc["deps"] = [{"path": 3}]
        doc["digest"] = cache._digest(doc)
        entry.write_text(json.dumps(doc))
    else:
        doc = json.loads(text)
        doc["key"] = "0" * 64
        doc["digest"] = cache._digest(doc)
        entry.write_text(json.dumps(doc))
    run = run_cli("check", contract)
    assert (run.code, CACHED in run.out) == (0, False)
    assert json.loads(entry.read_text())["key"] == entry.stem  # rebuilt
    assert hit(run_cli, contract)


WRITER = """
import json, sys
from pathlib import Path
from npu_gate import cache

root, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = cache.Store(Path(root))
seen = []
for i in range(n):
    store.put(cache.new_entry(key, i % 2, json.dumps({"i": i}), "md" * 5000 * (i + 1),
                              f"text {i}", [], []))
    got = store.get(key)  # another writer may have replaced it: it must still be whole
    if got is None:
        seen.append("none")
    else:
        whole = got.markdown == "md" * 5000 * (json.loads(got.json)["i"] + 1)
        seen.append("ok" if whole else "torn")
print(json.dumps(seen))
"""


def test_concurrent_writers_of_one_key(tmp_path: Path) -> None:
    key = "ab" * 32
    env = os.environ | {"PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), key, "40"],
                              stdout=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    seen = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        seen += json.loads(out)
    assert len(seen) == 160
    assert set(seen) == {"ok"}  # every read saw one whole entry, never a torn or missing one
    files = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert files == [f"{key}.json"]  # no temp files left behind
    assert cache.Store(tmp_path).get(key) is not None


def test_unwritable_cache_never_fails_the_gate(run_cli: Run, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    contract = write_onnx_contract(tmp_path / "m")
    run = run_cli("check", contract, "--cache-dir", blocker / "cache")
    assert (run.code, run.err) == (0, "")


# --- a hit stays light ------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["demo", "board.npu-profile.json"])
def test_a_hit_imports_no_onnx_numpy_or_torch(tmp_path: Path, run_cli: Run, profile: str) -> None:
    shutil.copy(REPO / "npu_gate" / "profiles" / "demo.json", tmp_path / "board.npu-profile.json")
    contract = write_onnx_contract(tmp_path, tiny_model(cpu_op="Relu"), profile=profile)
    assert run_cli("check", contract, "-q").code == 1  # fills the cache (this test's folder)
    code, heavy, lines = _fresh_main(["check", str(contract), "--markdown", str(tmp_path / "r.md")], tmp_path)
    assert (code, heavy) == (1, [])
    assert CACHED in lines[-1]
    assert "Result from cache" in (tmp_path / "r.md").read_text()


@pytest.mark.parametrize("args", [["model.onnx"], ["--profile", "board.npu-profile.json", "other.onnx"]],
                         ids=["contract", "profile-option"])
def test_a_check_onnx_hit_with_a_profile_file_imports_no_onnx_numpy_or_torch(
        tmp_path: Path, run_cli: Run, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The npu-gate-onnx hook's hit used to load the contract (or --profile) with the
    onnx-based profile lint, importing onnx and numpy on every commit."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(REPO / "npu_gate" / "profiles" / "demo.json", tmp_path / "board.npu-profile.json")
    write_onnx_contract(tmp_path, tiny_model(cpu_op="Relu"), profile="board.npu-profile.json")
    (tmp_path / "other.onnx").write_bytes(tiny_model(cpu_op="Relu").SerializeToString())
    assert run_cli("check-onnx", *args).code == 1  # fills the cache
    code, heavy, lines = _fresh_main(["check-onnx", *args], tmp_path)
    assert (code, heavy) == (1, [])
    assert CACHED in lines[-1]


def test_every_file_the_contract_names_is_part_of_the_key(tmp_path: Path) -> None:
    """An ONNX contract's key used to cover only the model: editing samples_file,
    device_timings, replacement.onnx or a metric module gave a stale hit."""
    import numpy as np

    folder = tmp_path / "m"
    contract_path = write_onnx_contract(folder, tiny_model(cpu_op="Relu"))
    doc = json.loads(contract_path.read_text())
    doc["numerics"] = {"samples_file": "real.npz"}
    doc["device_timings"] = "board.csv"
    doc["replacement"] = {"onnx": "replacement.onnx"}
    doc["metric"] = {"callable": "task_metric:score"}
    contract_path.write_text(json.dumps(doc))
    shape = doc["inputs"][0]["shape"]
    # the stubs fear a key named allow_pickle
    np.savez(folder / "real.npz", **{doc["inputs"][0]["name"]: np.zeros([1, *shape], np.float32)})  # type: ignore[arg-type]
    (folder / "board.csv").write_text("scope,key,ms\nmodel,m,1.0\n")
    (folder / "replacement.onnx").write_bytes(tiny_model(cpu_op="Relu").SerializeToString())
    (folder / "task_metric.py").write_text("def score(a, b):\n    return {}\n")
    today = dt.date(2026, 12, 2)

    def key() -> str:
        return cache.contract_key(load_contract(contract_path), today)

    keys = [key()]
    (folder / "board.csv").write_text("scope,key,ms\nmodel,m,9.99\n")
    keys.append(key())
    np.savez(folder / "real.npz", **{doc["inputs"][0]["name"]: np.ones([1, *shape], np.float32)})  # type: ignore[arg-type]
    keys.append(key())
    (folder / "replacement.onnx").write_bytes(tiny_model(cpu_op="Sigmoid").SerializeToString())
    keys.append(key())
    assert len(set(keys)) == len(keys)
    # the metric's module is what the run imports: a dependency of the entry, not in the key
    # (test_a_module_outside_the_contract_folder_is_a_dependency)
    (folder / "task_metric.py").write_text("def score(a, b):\n    return {'x': 1.0}\n")
    assert key() == keys[-1]
    assert key() == keys[-1]  # and nothing else moves it


def _fresh_main(argv: list[str], cwd: Path) -> tuple[int, list[str], list[str]]:
    """``npu_gate.cli.main(argv)`` in a fresh interpreter: its exit code, the heavy packages
    it imported, and the lines it printed."""
    probe = (
        "import json, sys\n"
        "from npu_gate.cli import main\n"
        f"code = main({argv!r})\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules}\n"
        "               & {'onnx', 'onnxruntime', 'numpy', 'torch', 'tabulate'})\n"
        "print(json.dumps({'code': code, 'heavy': heavy}))\n"
    )
    env = os.environ | {"PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    *lines, last = done.stdout.strip().splitlines()
    result = json.loads(last)
    return result["code"], result["heavy"], lines
