"""CLI listings, exit codes, lean imports and packaging facts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import NoReturn

import pytest

import npu_gate
from npu_gate.resources import SCHEMA_NAMES, load_schema
from npu_gate.rules import RETIRED, RULES
from tests.helpers import model_zoo
from tests.helpers.common import REPO, RunCli, SaveModel, WriteContract, validate_result

if sys.version_info >= (3, 11):
    import tomllib
else:  # the package supports 3.10, where tomllib is the tomli backport
    import tomli as tomllib

ISSUE_RULE_IDS = {"onnx-checker", "shape-inference", "dynamic-input", "dynamic-shape", "unsupported-op",
                  "op-constraint", "numeric-mismatch", "export-failed", "gate-exceeded", "contract-invalid"}


def test_version_is_the_one_in_pyproject() -> None:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["version"] == npu_gate.__version__


def test_schemas_load_and_are_valid() -> None:
    from jsonschema import Draft202012Validator

    for name in SCHEMA_NAMES:
        schema = load_schema(name)
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"]


def test_every_schema_is_listed_and_ships_in_the_wheel() -> None:
    """The wheel maps schemas/ to npu_gate/schemas; load_schema knows each file by name."""
    files = sorted(p.name for p in (REPO / "schemas").glob("*.json"))
    assert files == sorted(f"{name}.schema.json" for name in SCHEMA_NAMES)
    assert "calibration.schema.json" in files
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["sources"] == {"schemas": "npu_gate/schemas"}


def _source_tree(tmp_path: Path) -> Path:
    """What the wheel is built from, copied without caches, with files a working tree may
    hold beside the package's own: a scratch model onnxruntime saved, notes, a stray script."""
    tree = tmp_path / "src"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", ".gitignore"):
        shutil.copy2(REPO / name, tree / name)
    for name in ("npu_gate", "schemas"):
        shutil.copytree(REPO / name, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for folder in (".", "npu_gate", "npu_gate/profiles", "schemas"):
        (tree / folder / "sym_shape_infer_temp.onnx").write_bytes(b"scratch")
        (tree / folder / "notes.txt").write_text("scratch")
    (tree / "tests").mkdir()
    (tree / "tests" / "test_x.py").write_text("")
    return tree


def test_the_wheel_holds_the_package_its_profiles_and_schemas_only(tmp_path: Path) -> None:
    """Built from a working tree with stray files in it, the wheel still holds exactly the
    package's modules, the built-in profiles with their calibration records and the schemas."""
    from hatchling.builders.wheel import WheelBuilder

    wheel = next(WheelBuilder(str(_source_tree(tmp_path))).build(directory=str(tmp_path / "dist")))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        meta = archive.read(f"npu_gate-{npu_gate.__version__}.dist-info/METADATA").decode()
        entry_points = archive.read(f"npu_gate-{npu_gate.__version__}.dist-info/entry_points.txt").decode()
    package = {p.relative_to(REPO).as_posix() for p in (REPO / "npu_gate").rglob("*.py")
               if "__pycache__" not in p.parts}
    package |= {f"npu_gate/profiles/{p.name}" for p in (REPO / "npu_gate" / "profiles").glob("*.json")}
    package |= {f"npu_gate/schemas/{name}.schema.json" for name in SCHEMA_NAMES}
    assert "npu_gate/profiles/rknn-rk3588.calibration.json" in package
    assert {n for n in names if not n.startswith("npu_gate-")} == package
    # The base install is the ONNX-only one: torch only with the [torch] extra.
    requires = [line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: ")]
    assert [r for r in requires if "extra ==" not in r] == [
        "jsonschema>=4.18", "numpy>=1.24", "onnx>=1.16", "onnxruntime>=1.18", "orjson>=3.9", "sympy>=1.12",
        "tabulate>=0.9"]
    assert {"onnxscript>=0.3; extra == 'torch'", "torch>=2.4; extra == 'torch'"} <= set(requires)
    assert f"Version: {npu_gate.__version__}" in meta.splitlines()
    assert entry_points.split() == ["[console_scripts]", "npu-gate", "=", "npu_gate.cli:main"]


def test_the_sdist_holds_what_its_tests_read(tmp_path: Path) -> None:
    """The sdist ships the test suite, so also the root files the tests read: the action, the
    hook manifest and the benches."""
    from hatchling.builders.sdist import SdistBuilder

    sdist = next(SdistBuilder(str(REPO)).build(directory=str(tmp_path)))
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    assert {n.split("/")[0] for n in names} == {
        ".gitignore", ".pre-commit-hooks.yaml", "CHANGELOG.md", "PKG-INFO", "README.md", "action.yml", "bench",
        "docs", "examples", "npu_gate", "pyproject.toml", "schemas", "tests"}
    assert {"bench/bench_inspect.py", "bench/README.md", "tests/conftest.py", "schemas/result.schema.json",
            "examples/seed-hardswish/npu-gate.json"} <= names


def test_rule_ids_are_kebab_case_documented_and_not_retired() -> None:
    assert set(RULES) >= ISSUE_RULE_IDS
    for rule in RULES.values():
        assert rule.id.replace("-", "").isalnum() and rule.id == rule.id.lower()
        assert rule.summary and rule.severity in ("error", "warning", "info")  # docs: tests/findings
        assert rule.id not in RETIRED


def test_rules_command(run_cli: RunCli) -> None:
    run = run_cli("rules")
    assert run.code == 0
    assert [line.split()[0] for line in run.out.splitlines()] == list(RULES)
    run = run_cli("rules", "--format", "json")
    assert {r["id"] for r in json.loads(run.out)} == set(RULES)


def test_explain_command(run_cli: RunCli) -> None:
    run = run_cli("explain", "unsupported-op")
    assert run.code == 0 and run.out.startswith("unsupported-op (error)")
    run = run_cli("explain", "no-such-rule")
    assert run.code == 2 and "unknown rule or constraint id" in run.err


@pytest.mark.parametrize(("ref", "hint"), [
    ("unsuported-op", "; did you mean 'unsupported-op'?"),
    ("fold-budgte", "; did you mean 'fold-budget'?"),
    ("rknn-rk3588:limit-opst", "; did you mean 'rknn-rk3588:limit-opset'?"),
    ("rknn-toolkit2-v2.1:slice-bach-1",
     "; did you mean 'rknn-toolkit2-v2.1:slice-batch-1' or 'rknn-toolkit2-v2.1:tile-batch-1' or "
     "'rknn-toolkit2-v2.1:roialign-batch-1'?"),
    ("qqqq-zzzz", ""),
])
def test_explain_suggests_the_nearest_ids(run_cli: RunCli, ref: str, hint: str) -> None:
    run = run_cli("explain", ref)
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: {ref}: unknown rule or constraint id{hint} (see `npu-gate rules` "
                       "and `npu-gate profile show NAME`)\n")


def test_profiles_command(run_cli: RunCli) -> None:
    run = run_cli("profiles")
    assert run.code == 0
    lines = {line.split()[0]: line.split()[1] for line in run.out.splitlines()}
    assert lines["demo"] == "illustrative"
    assert lines["ascend-atc"] == lines["mediatek-mdla2"] == "vendor-documentation"
    assert list(lines) == sorted(lines)


def test_inspect_json_and_exit_codes(tmp_path: Path, run_cli: RunCli, save_model: SaveModel) -> None:
    path = save_model(model_zoo.conv_relu())
    run = run_cli("inspect", path, "--json", tmp_path / "r.json")
    assert run.code == 1  # Relu is not in demo
    validate_result(json.loads((tmp_path / "r.json").read_text()))
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"name": "p", "description": "d", "source": "s",
                                   "evidence": "illustrative", "ops": {"Conv": {}, "Relu": {}}}))
    assert run_cli("inspect", path, "--profile", profile, "-q").code == 0
    run = run_cli("inspect", path, "--profile", "nope")
    assert run.code == 2 and "--profile: unknown profile 'nope'" in run.err
    run = run_cli("inspect", tmp_path / "missing.onnx")
    assert run.code == 2 and "missing.onnx: file not found" in run.err


def test_bad_profile_file_lists_every_problem(tmp_path: Path, run_cli: RunCli, save_model: SaveModel) -> None:
    path = save_model(model_zoo.conv_relu())
    profile = tmp_path / "bad.json"
    profile.write_text(json.dumps({"name": "bad", "description": "d", "source": "s", "evidence": "rumour",
                                   "ops": {"Conv": {"constraints": [{"id": "c", "attribute": "group"}]}}}))
    run = run_cli("inspect", path, "--profile", profile)
    assert run.code == 2
    assert "evidence: 'rumour' is not one of" in run.err


def test_inspect_never_imports_torch_or_onnxruntime(tmp_path: Path, save_model: SaveModel) -> None:
    path = save_model(model_zoo.conv_relu())
    code = (
        "import sys\n"
        "from npu_gate.cli import main\n"
        f"rc = main(['inspect', {str(path)!r}, '-q', '--json', {str(tmp_path / 'r.json')!r}])\n"
        "heavy = sorted(m for m in ('torch', 'onnxruntime') if m in sys.modules)\n"
        "print(rc, heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout
    assert out.strip() == "1 []"


def test_without_torch_a_torch_contract_stops_the_check_before_any_model_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli, save_model: SaveModel,
    write_contract: WriteContract
) -> None:
    """The ONNX-only install (no [torch] extra): whatever the order of the contracts, the
    torch one is named with the extra to install, exit 2, and no contract runs."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails, as without the extra
    monkeypatch.chdir(tmp_path)
    save_model(model_zoo.conv_relu())
    onnx_contract = write_contract({"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
                                    "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}]},
                                   "npu-gate.onnx.json")
    torch_contract = REPO / "examples" / "seed-hardswish" / "npu-gate.json"
    message = f"npu-gate: error: {torch_contract}: model.torch needs PyTorch: pip install 'npu-gate[torch]'\n"
    for args in ([onnx_contract, torch_contract], [torch_contract, onnx_contract], [torch_contract, "--bundle"]):
        run = run_cli("check", *args, "--no-cache")
        assert (run.code, run.out, run.err) == (2, "", message), args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "npu-gate.onnx.json"]  # no npu-gate-out/


def test_internal_errors_are_one_line(monkeypatch: pytest.MonkeyPatch, run_cli: RunCli, save_model: SaveModel) -> None:
    path = save_model(model_zoo.conv_relu())

    def boom(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("kaboom")

    monkeypatch.setattr("npu_gate.pipeline.inspect_model", boom)
    run = run_cli("inspect", path)
    assert run.code == 2
    assert run.err == "npu-gate: internal error: RuntimeError: kaboom (rerun with --debug for the traceback)\n"


def test_internal_error_with_a_multiline_message_is_one_line_and_its_traceback_goes_to_the_log(
        monkeypatch: pytest.MonkeyPatch, run_cli: RunCli, save_model: SaveModel, write_contract: WriteContract,
        tmp_path: Path) -> None:
    save_model(model_zoo.conv_relu())
    contract = write_contract({"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
                               "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}]})

    def boom(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("kaboom\x1b[2J\nsecond line\nthird line")

    monkeypatch.setattr("npu_gate.pipeline.check_contract", boom)
    run = run_cli("check", contract, "--no-cache")
    assert (run.code, run.out) == (2, "")
    assert run.err == "npu-gate: internal error: RuntimeError: kaboom\\x1b[2J (rerun with --debug for the traceback)\n"
    log = tmp_path / "logs" / "log.txt"
    run = run_cli("check", contract, "--no-cache", "--log", log)
    assert run.err == f"npu-gate: internal error: RuntimeError: kaboom\\x1b[2J (traceback in {log})\n"
    text = log.read_text()
    assert text.startswith("Traceback (most recent call last):\n")
    assert text.endswith("RuntimeError: kaboom\x1b[2J\nsecond line\nthird line\n")


# From Python 3.11 argparse swallows the write error of --help itself (exit 0); before, it
# reaches npu-gate's handler like any other broken pipe.
HELP_CODE = 0 if sys.version_info >= (3, 11) else 141


@pytest.mark.parametrize(("args", "code"), [
    (["rules"], 141), (["rules", "--format", "json"], 141), (["profile", "show", "demo"], 141),
    (["--help"], HELP_CODE), (["check", "--help"], HELP_CODE),
])
def test_a_reader_that_stops_early_ends_the_run_quietly(args: list[str], code: int) -> None:
    """`npu-gate rules | head -3`: stdout's reader is gone before anything is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "npu_gate", *args], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, cwd=REPO, timeout=60, check=False)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (code, "")


def test_rule_docs_are_up_to_date(run_cli: RunCli) -> None:
    run = run_cli("rules", "--format", "markdown")
    assert run.out == (REPO / "docs" / "rules.md").read_text(), "regenerate: npu-gate rules --format markdown"


def test_builtin_profiles_are_valid() -> None:
    from npu_gate.calibrate import RECORD_VERSION
    from npu_gate.resources import builtin_profile_names, profile_dir
    from npu_gate.validation import schema_problems

    assert "demo" in builtin_profile_names()
    for path in profile_dir().iterdir():
        assert path.suffix == ".json", f"only profiles (and their calibration records) belong in {profile_dir()}"
        if path.name.endswith(".calibration.json"):  # a calibration record, beside its profile
            assert path.with_name(path.name.replace(".calibration", "")).is_file()
            record = json.loads(path.read_text())
            # any 1.x up to the version this tool writes: older records stay readable
            minor = int(record["schema_version"].removeprefix("calibration-1."))
            assert 0 <= minor <= int(RECORD_VERSION.removeprefix("calibration-1.")), path.name
            assert schema_problems(record, "calibration", path.name) == []
            continue
        assert schema_problems(json.loads(path.read_text()), "profile", path.name) == []


def test_rewrite_names_match_the_catalog() -> None:
    from npu_gate.contract.rewrite_names import REWRITE_NAMES
    from npu_gate.rewrites import REWRITES

    assert tuple(REWRITES) == REWRITE_NAMES


def test_captured_c_stdio_output_stays_out_of_a_buffered_stdout() -> None:
    # Not a terminal and no PYTHONUNBUFFERED: C's stdout is block-buffered, and what C code
    # printed during the capture once reached the real stdout at exit, after the capture.
    code = (
        "import ctypes\n"
        "from npu_gate.model.capture import capture_output\n"
        "with capture_output() as got:\n"
        "    ctypes.CDLL(None).printf(b'from C\\n')\n"
        "print('captured:', got.lines)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO, env=env).stdout
    assert out == "captured: ['from C']\n"


def test_without_torch_a_torch_replacement_is_named_by_diff_and_check_onnx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli, save_model: SaveModel,
    write_contract: WriteContract
) -> None:
    """`diff` and `check-onnx` gate a contract without `check`'s torch test: its torch
    replacement must still name the missing extra, not its factory's module failing to import."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails, as without the extra
    monkeypatch.chdir(tmp_path)
    model = save_model(model_zoo.conv_relu())
    (tmp_path / "net.py").write_text("import torch\n\ndef build():\n    return torch.nn.Identity()\n")
    contract = write_contract({"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
                               "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
                               "replacement": {"torch": {"factory": "net:build"}}})
    message = f"{contract}: replacement.torch needs PyTorch: pip install 'npu-gate[torch]'\n"
    for args in (["diff", model, contract], ["check-onnx", model, "--no-cache"]):
        run = run_cli(*args)
        assert run.code == 2 and run.err.endswith(message) and run.err.count("\n") == 1, (args, run.err)


def test_check_of_several_contracts_ends_with_the_overall_count(run_cli: RunCli, tmp_path: Path) -> None:
    from tests.helpers.hook_fixtures import tiny_model, write_onnx_contract

    write_onnx_contract(tmp_path / "a")  # every node on the NPU: passes
    write_onnx_contract(tmp_path / "b", tiny_model(cpu_op="Relu"))  # max_cpu_nodes 0: fails
    bad = write_onnx_contract(tmp_path / "c")
    bad.write_text(bad.read_text().replace('"name": "x"', '"name": "images"'))  # not the model's input
    run = run_cli("check", tmp_path / "a", tmp_path / "b", tmp_path / "c", "--no-cache")
    assert run.code == 2
    assert run.out.splitlines()[-1] == "npu-gate: 3 models: 1 passed, 1 failed, 1 could not run"
    assert [line for line in run.out.splitlines() if line.startswith("npu-gate: ")][:2] == [
        "npu-gate: a: PASS", "npu-gate: b: FAIL"]
    assert "inputs[0].name: 'images' is not an input of the model" in run.err
    two = run_cli("check", tmp_path / "a", tmp_path / "b")
    assert (two.code, two.out.splitlines()[-1]) == (1, "npu-gate: 2 models: 1 passed, 1 failed")
    assert "models:" not in run_cli("check", tmp_path / "a").out
    assert run_cli("check", tmp_path / "a", tmp_path / "b", "-q").out == ""
