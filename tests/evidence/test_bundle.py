"""Evidence bundle (check --out/--bundle): contents, versions.json, determinism, minimal models."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npu_gate.cli import main
from tests.helpers import model_zoo
from tests.helpers.common import REPO, validate_result

EXAMPLE = REPO / "examples" / "seed-hardswish"


def _profile(ops: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "test-profile",
        "description": "test",
        "source": "test",
        "evidence": "illustrative",
        "ops": ops,
    }


def _onnx_contract(
    folder: Path, model: onnx.ModelProto, inputs: list[dict[str, Any]], ops: dict[str, Any]
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    (folder / "profile.json").write_text(json.dumps(_profile(ops)), encoding="utf-8")
    doc = {
        "name": "t",
        "model": {"onnx": "model.onnx"},
        "inputs": inputs,
        "target": {"profile": "profile.json"},
        "numerics": {"samples": 2},
    }
    path = folder / "npu-gate.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _bundle(contract: Path, out: Path) -> tuple[int, dict[str, Any]]:
    code = main(["check", str(contract), "--out", str(out), "-q"])
    return code, json.loads((out / "result.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def example_bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The lesson net gated twice, into two differently named and nested folders."""
    root = tmp_path_factory.mktemp("bundles")
    first, second = root / "a", root / "elsewhere" / "deeper" / "b"
    assert main(["check", str(EXAMPLE), "--out", str(first), "-q"]) == 1
    assert main(["check", str(EXAMPLE), "--out", str(second), "-q"]) == 1
    return first, second


@pytest.mark.torch
@pytest.mark.slow
def test_bundle_contents(example_bundles: tuple[Path, Path]) -> None:
    bundle = example_bundles[0]
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    assert files == [
        "conversion.log",
        "folded.onnx",
        "inputs.npz",
        "minimal/01-unsupported-op-Clip.onnx",
        "model.onnx",
        "npu-gate.json",
        "report.md",
        "result.json",
        "versions.json",
    ]
    assert (bundle / "npu-gate.json").read_bytes() == (EXAMPLE / "npu-gate.json").read_bytes()
    result = json.loads((bundle / "result.json").read_text(encoding="utf-8"))
    validate_result(result)
    assert result["minimal"] == {
        "distinct_failures": 1,
        "models": [
            {
                "rule": "unsupported-op",
                "op_type": "Clip",
                "constraint": None,
                "node": "/Clip",
                "occurrences": 1,
                "path": "minimal/01-unsupported-op-Clip.onnx",
                "nodes": 3,
                "verified": True,
            }
        ],
    }

    # model.onnx is what was analysed: its sha256 is the one in the result and versions.json
    sha = hashlib.sha256((bundle / "model.onnx").read_bytes()).hexdigest()
    assert result["model"]["sha256"] == sha
    versions = json.loads((bundle / "versions.json").read_text(encoding="utf-8"))
    assert set(versions) == {
        "python",
        "platform",
        "machine",
        "npu_gate",
        "torch",
        "onnx",
        "onnxruntime",
        "onnxscript",
        "exporter",
        "profile",
        "contract",
        "model",
        "bundle",
    }
    assert versions["bundle"] == {"kind": "npu-gate-bundle", "files": files}  # what a rerun may replace
    assert versions["exporter"] == {"path": "torchscript", "opset_requested": 17, "opset": 17}
    assert versions["profile"] == {
        "name": "demo",
        "sha256": result["profile"]["sha256"],
        "builtin": True,
    }
    assert versions["contract"] == {
        "file": "npu-gate.json",
        "sha256": hashlib.sha256((EXAMPLE / "npu-gate.json").read_bytes()).hexdigest(),
    }
    assert versions["model"] == {"file": "model.onnx", "sha256": sha}
    assert versions["onnx"] == onnx.__version__
    assert all(
        versions[k]
        for k in ("python", "platform", "npu_gate", "torch", "onnxruntime", "onnxscript")
    )

    # the numerics samples: 4 samples of images [1, 3, 16, 16] in the contract's range
    with np.load(bundle / "inputs.npz") as npz:
        assert list(npz) == ["images"]
        images = npz["images"]
    assert images.shape == (4, 1, 3, 16, 16)
    assert images.dtype == np.float32
    assert images.min() >= 0.0
    assert images.max() <= 1.0

    # folded.onnx: the 4 Constant nodes became initializers; 5 compute nodes remain
    folded = onnx.load(str(bundle / "folded.onnx"))
    assert [n.op_type for n in folded.graph.node] == ["Conv", "Add", "Clip", "Mul", "Div"]
    assert len(folded.graph.initializer) == 6
    onnx.checker.check_model(folded)

    log = (bundle / "conversion.log").read_text(encoding="utf-8")
    assert "export: ok" in log
    assert "folding: 4 folded nodes replaced by 4 initializers" in log
    assert "  export_s: " in log
    assert "DeprecationWarning" in log  # what the exporter warned

    report = (bundle / "report.md").read_text(encoding="utf-8")
    assert "[minimal/01-unsupported-op-Clip.onnx](minimal/01-unsupported-op-Clip.onnx)" in report


def _without_timings(text: str) -> str:
    head, sep, _ = text.partition('"timings"')
    assert sep, "no timings key"
    return head


@pytest.mark.torch
@pytest.mark.slow
def test_bundles_are_deterministic(example_bundles: tuple[Path, Path]) -> None:
    a, b = example_bundles
    json_a = (a / "result.json").read_text(encoding="utf-8")
    json_b = (b / "result.json").read_text(encoding="utf-8")
    # timings is the last key; everything before it is byte-identical
    assert list(json.loads(json_a))[-1] == "timings"
    assert _without_timings(json_a) == _without_timings(json_b)
    assert json.loads(json_a)["timings"].keys() == json.loads(json_b)["timings"].keys()
    report_a = (a / "report.md").read_text(encoding="utf-8")
    report_b = (b / "report.md").read_text(encoding="utf-8")
    head_a, sep, tail_a = report_a.partition("### Timings")
    assert sep
    assert "###" not in tail_a  # Timings is the final section
    assert head_a == report_b.partition("### Timings")[0]
    # no absolute path of either bundle leaks into them
    for text in (json_a, report_a):
        assert str(a) not in text
        assert str(a.parent) not in text
    for name in ("model.onnx", "folded.onnx", "inputs.npz", "minimal/01-unsupported-op-Clip.onnx"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _conv_relu_contract(folder: Path) -> Path:
    return _onnx_contract(
        folder,
        model_zoo.conv_relu(),
        [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        {"Conv": {"constraints": []}, "Relu": {"constraints": []}},
    )


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _assert_refused(run_cli: Callable[..., Any], contract: Path, folder: Path, why: str) -> None:
    """check --out FOLDER exits 2 with ``why`` and leaves every file of FOLDER as it was."""
    before = _tree(folder)
    run = run_cli("check", contract, "--out", folder, "-q")
    assert (run.code, run.err) == (2, f"npu-gate: error: {folder}: {why}; refusing to overwrite it\n")
    assert _tree(folder) == before


def test_bundle_folder_replaced_but_foreign_files_refused(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    contract = _conv_relu_contract(tmp_path / "c")
    out = tmp_path / "out"
    assert run_cli("check", contract, "--out", out, "-q").code == 0
    (out / "report.md").write_text("stale", encoding="utf-8")
    assert run_cli("check", contract, "--out", out, "-q").code == 0
    assert (out / "report.md").read_text(encoding="utf-8") != "stale"  # a previous bundle is replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "out"]  # no staging folder left

    (out / "minimal").mkdir(exist_ok=True)
    (out / "minimal" / "notes.txt").write_text("mine", encoding="utf-8")
    _assert_refused(run_cli, contract, out, "holds files the previous bundle did not write (minimal/notes.txt)")

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine", encoding="utf-8")
    run = run_cli("check", contract, "--out", foreign, "-q")
    assert run.code == 2
    assert "not empty and not an npu-gate bundle" in run.err
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_a_file_named_versions_json_does_not_make_a_bundle(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    # Found by a walkthrough: any folder holding a versions.json used to be wiped as "a previous bundle".
    contract = _conv_relu_contract(tmp_path / "c")
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "versions.json").write_text('{"app": "1.2.3"}', encoding="utf-8")
    (project / "src" / "main.py").write_text("important", encoding="utf-8")
    _assert_refused(run_cli, contract, project,
                    "not empty and not an npu-gate bundle (no versions.json naming its files)")


def test_the_current_folder_is_never_a_bundle_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any]
) -> None:
    contract = _conv_relu_contract(tmp_path / "c")
    work = tmp_path / "work" / "deeper"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    for out in (".", "..", str(work)):
        run = run_cli("check", contract, "--out", out, "-q")
        assert run.code == 2, out
        assert run.err == (f"npu-gate: error: {out}: is the current folder or holds it; "
                           "choose a folder of its own for the bundle\n")
        run = run_cli("inspect", tmp_path / "c" / "model.onnx", "--out", out, "-q")
        assert run.code == 2, out
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["deeper"]


def test_a_run_that_cannot_run_keeps_the_previous_bundle(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    contract = _conv_relu_contract(tmp_path / "c")
    out = tmp_path / "out"
    assert run_cli("check", contract, "--out", out, "-q").code == 0
    before = _tree(out)
    (tmp_path / "c" / "model.onnx").write_bytes(b"not onnx")
    run = run_cli("check", contract, "--out", out, "-q")
    assert run.code == 2
    assert "not an ONNX model" in run.err
    assert _tree(out) == before
    run = run_cli("inspect", tmp_path / "c" / "model.onnx", "--out", out, "-q")
    assert run.code == 2
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "out"]  # no staging folder left
    fresh = tmp_path / "fresh"
    assert run_cli("check", contract, "--out", fresh, "-q").code == 2
    assert not fresh.exists()  # no empty folder left behind


def test_a_run_that_cannot_run_leaves_no_folder_it_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any]
) -> None:
    contract = _conv_relu_contract(tmp_path / "c")
    (tmp_path / "c" / "model.onnx").write_bytes(b"not onnx")
    monkeypatch.chdir(tmp_path)
    assert run_cli("check", contract, "--out", "new/deeper/out", "-q").code == 2
    assert run_cli("inspect", tmp_path / "c" / "model.onnx", "--out", "new/out", "-q").code == 2
    assert run_cli("check", contract, "--bundle", "-q").code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]  # no new/, no npu-gate-out/


def test_the_bundle_folder_gets_the_usual_permissions(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    """Not the private 0700 of the temporary folder it was staged in: a CI artifact step or a
    container's host user reads the bundle as they read the files in it."""
    contract = _conv_relu_contract(tmp_path / "c")
    old = os.umask(0o022)
    try:
        assert run_cli("check", contract, "--out", tmp_path / "out", "-q").code == 0
        assert run_cli("inspect", tmp_path / "c" / "model.onnx", "--out", tmp_path / "iout", "-q").code == 1
    finally:
        os.umask(old)
    for folder in ("out", "iout", "iout/minimal"):  # demo has no Relu: inspect writes a minimal model
        assert stat.S_IMODE((tmp_path / folder).stat().st_mode) == 0o755, folder


def test_two_contracts_with_one_bundle_folder_are_refused_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any]
) -> None:
    first = _conv_relu_contract(tmp_path / "x" / "det")
    second = _conv_relu_contract(tmp_path / "y" / "det")
    for path in (first, second):  # no "name": both are named after their folder, "det"
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc.pop("name", None)
        path.write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = run_cli("check", first, second, "--bundle", "-q")
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {second}: its bundle folder npu-gate-out/det is also {first}'s; "
                       'give one of the contracts another "name"\n')
    assert not (tmp_path / "npu-gate-out").exists()



@pytest.mark.parametrize("names", [("Det", "det"), ("n" * 300 + "a", "n" * 300 + "b")])
def test_bundle_folders_that_clash_on_some_file_system_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any], names: tuple[str, str]
) -> None:
    # Case: one folder on macOS and Windows. Length: names are cut to fit a file system's
    # 255-byte limit, so two long ones may share a folder.
    paths = [_conv_relu_contract(tmp_path / side / "c") for side in ("x", "y")]
    for path, name in zip(paths, names, strict=True):
        doc = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps(doc | {"name": name}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = run_cli("check", *paths, "--bundle", "-q")
    assert run.code == 2
    assert f"{paths[1]}: its bundle folder npu-gate-out/" in run.err
    assert not (tmp_path / "npu-gate-out").exists()


def test_a_long_contract_name_still_gets_its_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any]
) -> None:
    path = _conv_relu_contract(tmp_path / "c")
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) | {"name": "n" * 300}),
                    encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = run_cli("check", path, "--bundle", "-q")
    assert run.code == 0, run.err
    assert (tmp_path / "npu-gate-out" / ("n" * 100) / "report.md").is_file()


def test_bundle_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any]
) -> None:
    contract = _onnx_contract(
        tmp_path / "c",
        model_zoo.conv_relu(),
        [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        {"Conv": {"constraints": []}, "Relu": {"constraints": []}},
    )
    monkeypatch.chdir(tmp_path)
    run = run_cli("check", contract, "--bundle")
    assert run.code == 0
    assert "evidence bundle: npu-gate-out/t" in run.out
    bundle = tmp_path / "npu-gate-out" / "t"
    result = json.loads((bundle / "result.json").read_text(encoding="utf-8"))
    assert result["minimal"] == {"distinct_failures": 0, "models": []}
    assert result["model"]["path"] == "model.onnx"  # relative to the contract
    assert "### Minimal failing models\n\nNone: no failure could be blamed on a node." in (
        bundle / "report.md"
    ).read_text(encoding="utf-8")
    versions = json.loads((bundle / "versions.json").read_text(encoding="utf-8"))
    assert versions["exporter"] == {"path": "onnx-file", "opset_requested": None, "opset": 17}
    assert versions["profile"]["builtin"] is False
    # ONNX contract: no numerics ran, the bundle holds the contract's seeded samples
    with np.load(bundle / "inputs.npz") as npz:
        assert npz["x"].shape == (2, 1, 3, 8, 8)


def test_bundle_keeps_external_data(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    model_zoo.external_data(folder)
    model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
    inputs = [
        {
            "name": i.name,
            "shape": [d.dim_value for d in i.type.tensor_type.shape.dim],
            "dtype": "float32",
        }
        for i in model.graph.input
    ]
    (folder / "profile.json").write_text(json.dumps(_profile({"MatMul": {}})), encoding="utf-8")
    (folder / "npu-gate.json").write_text(
        json.dumps(
            {
                "model": {"onnx": "model.onnx"},
                "inputs": inputs,
                "target": {"profile": "profile.json"},
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code, _ = _bundle(folder / "npu-gate.json", out)
    assert code == 0
    assert (out / "model.onnx.data").read_bytes() == (folder / "model.onnx.data").read_bytes()
    assert (out / "model.onnx").read_bytes() == (folder / "model.onnx").read_bytes()


# ---------------------------------------------------------------- minimal models


def _minimal_models(out: Path) -> tuple[dict[str, Any], list[onnx.ModelProto]]:
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    validate_result(result)
    models = [onnx.load(str(out / m["path"])) for m in result["minimal"]["models"]]
    return result["minimal"], models


def test_minimal_model_unsupported_op(tmp_path: Path) -> None:
    # diamond: Relu -> (Clip, Sigmoid) -> Add; the profile lacks Clip and Sigmoid
    contract = _onnx_contract(
        tmp_path / "c",
        model_zoo.diamond(),
        [{"name": "x", "shape": [1, 4, 8, 8], "dtype": "float32"}],
        {"Relu": {}, "Add": {}, "Constant": {}},
    )
    code, _ = _bundle(contract, tmp_path / "out")
    assert code == 1
    minimal, models = _minimal_models(tmp_path / "out")
    assert minimal == {
        "distinct_failures": 2,
        "models": [
            {
                "rule": "unsupported-op",
                "op_type": "Clip",
                "constraint": None,
                "node": "B",
                "occurrences": 1,
                "path": "minimal/01-unsupported-op-Clip.onnx",
                "nodes": 3,
                "verified": True,
            },
            {
                "rule": "unsupported-op",
                "op_type": "Sigmoid",
                "constraint": None,
                "node": "C",
                "occurrences": 1,
                "path": "minimal/02-unsupported-op-Sigmoid.onnx",
                "nodes": 1,
                "verified": True,
            },
        ],
    }
    clip = models[0]
    # the Clip with its constant min/max kept; its producer (Relu) cut into a typed input
    assert [n.op_type for n in clip.graph.node] == ["Constant", "Constant", "Clip"]
    assert [
        (i.name, [d.dim_value for d in i.type.tensor_type.shape.dim], i.type.tensor_type.elem_type)
        for i in clip.graph.input
    ] == [("a", [1, 4, 8, 8], TensorProto.FLOAT)]
    assert [o.name for o in clip.graph.output] == ["b"]
    onnx.checker.check_model(clip, full_check=True)
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "| `unsupported-op` <code>Sigmoid</code> | <code>C</code>" in report


def test_minimal_model_constraint_violation(tmp_path: Path) -> None:
    ops = {
        "Conv": {
            "constraints": [{"id": "kernel-1x1", "attribute": "kernel_shape", "in": [[1, 1]]}]
        },
        "Relu": {},
    }
    contract = _onnx_contract(
        tmp_path / "c",
        model_zoo.conv_relu(),
        [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        ops,
    )
    code, result = _bundle(contract, tmp_path / "out")
    assert code == 1
    assert [(f["rule"], f.get("constraint")) for f in result["findings"]] == [
        ("op-constraint", "kernel-1x1")
    ]
    minimal, models = _minimal_models(tmp_path / "out")
    assert minimal["models"] == [
        {
            "rule": "op-constraint",
            "op_type": "Conv",
            "constraint": "kernel-1x1",
            "node": "conv0",
            "occurrences": 1,
            "path": "minimal/01-op-constraint-Conv-kernel-1x1.onnx",
            "nodes": 1,
            "verified": True,
        }
    ]
    conv = models[0]
    assert [i.name for i in conv.graph.input] == ["x"]
    assert sorted(t.name for t in conv.graph.initializer) == ["conv_b", "conv_w"]  # weights kept


def test_minimal_model_profile_limit(tmp_path: Path) -> None:
    """A node that falls back only because of a profile limit (here `limit-dtypes`) is a
    violated constraint id too; it used to get no minimal model."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu_f"),
        helper.make_node("Cast", ["r"], ["c"], name="cast", to=TensorProto.FLOAT16),
        helper.make_node("Relu", ["c"], ["y"], name="relu_h"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    contract = _onnx_contract(
        tmp_path / "c", model, [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
        {"Relu": {}, "Cast": {}},
    )
    profile = contract.parent / "profile.json"
    doc = json.loads(profile.read_text())
    doc["limits"] = {"dtypes": ["float32"]}
    profile.write_text(json.dumps(doc))
    code, result = _bundle(contract, tmp_path / "out")
    assert code == 1
    assert [(f["rule"], f.get("node"), f.get("constraint")) for f in result["findings"]] == [
        ("profile-limit", "cast", "limit-dtypes"),
        ("profile-limit", "relu_h", "limit-dtypes"),
        ("profile-limit", "relu_h", "limit-dtypes"),
    ]
    minimal, models = _minimal_models(tmp_path / "out")
    assert minimal["models"] == [
        {
            "rule": "profile-limit",
            "op_type": "Cast",
            "constraint": "limit-dtypes",
            "node": "cast",
            "occurrences": 1,
            "path": "minimal/01-profile-limit-Cast-limit-dtypes.onnx",
            "nodes": 1,
            "verified": True,
        },
        {
            "rule": "profile-limit",
            "op_type": "Relu",
            "constraint": "limit-dtypes",
            "node": "relu_h",
            "occurrences": 2,
            "path": "minimal/02-profile-limit-Relu-limit-dtypes.onnx",
            "nodes": 1,
            "verified": True,
        },
    ]
    assert [n.name for n in models[1].graph.node] == ["relu_h"]


def test_minimal_model_dynamic_chain(tmp_path: Path) -> None:
    # Relu (static) -> NonZero (data-dependent shape) -> Transpose -> Cast: one dynamic chain
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("NonZero", ["r"], ["nz"], name="nonzero"),
        helper.make_node("Transpose", ["nz"], ["t"], name="transpose", perm=[1, 0]),
        helper.make_node("Cast", ["t"], ["y"], name="cast", to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    ops: dict[str, dict[str, Any]] = {op: {} for op in ("Relu", "NonZero", "Transpose", "Cast")}
    contract = _onnx_contract(
        tmp_path / "c", model, [{"name": "x", "shape": [2, 3], "dtype": "float32"}], ops
    )
    code, result = _bundle(contract, tmp_path / "out")
    assert code == 1
    assert [(f["rule"], f.get("node")) for f in result["findings"]] == [
        ("dynamic-shape", "nonzero"),
        ("dynamic-shape", "transpose"),
        ("dynamic-shape", "cast"),
    ]
    minimal, models = _minimal_models(tmp_path / "out")
    assert minimal == {
        "distinct_failures": 1,
        "models": [
            {
                "rule": "dynamic-shape",
                "op_type": "NonZero",
                "constraint": None,
                "node": "nonzero",
                "occurrences": 3,
                "path": "minimal/01-dynamic-shape-NonZero.onnx",
                "nodes": 1,
                "verified": True,
            }
        ],
    }
    assert [
        (i.name, [d.dim_value for d in i.type.tensor_type.shape.dim]) for i in models[0].graph.input
    ] == [("r", [2, 3])]


def test_minimal_model_runtime_input_constraint(tmp_path: Path) -> None:
    """A constant-input constraint fails on the cut model only if the producer really
    was a runtime tensor: here the Reshape's shape is a graph input, so the re-check
    agrees. (A shape computed by a chain that folds under the contract is constant.)"""
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")]
    graph = helper.make_graph(
        nodes,
        "rs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    ops = {"Reshape": {"constraints": [{"id": "shape-constant", "input": 1, "constant": True}]}}
    contract = _onnx_contract(
        tmp_path / "c", model, [{"name": "x", "shape": [2, 3], "dtype": "float32"},
                                {"name": "s", "shape": [2], "dtype": "int64"}], ops
    )
    _bundle(contract, tmp_path / "out")
    minimal, models = _minimal_models(tmp_path / "out")
    assert [(m["rule"], m["constraint"], m["nodes"], m["verified"]) for m in minimal["models"]] == [
        ("dynamic-shape", None, 1, True),  # the Reshape's output shape depends on data
        ("op-constraint", "shape-constant", 1, True)
    ]
    assert [i.name for i in models[0].graph.input] == ["x", "s"]


def test_copy_of_contract_never_overwrites_bundle_files(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    contract = _onnx_contract(
        folder,
        model_zoo.conv_relu(),
        [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        {"Conv": {}, "Relu": {}},
    )
    odd = folder / "result.json"
    shutil.copyfile(contract, odd)
    code, result = _bundle(odd, tmp_path / "out")
    assert code == 0
    assert result["name"] == "t"
    assert (tmp_path / "out" / "contract-result.json").read_bytes() == odd.read_bytes()


def test_minimal_model_checker_error(tmp_path: Path) -> None:
    # an op ONNX does not know, in the default domain: onnx.checker names the node
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Foo", ["r"], ["y"], name="foo"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    contract = _onnx_contract(
        tmp_path / "c",
        model,
        [{"name": "x", "shape": [2], "dtype": "float32"}],
        {"Relu": {}},
    )
    code, result = _bundle(contract, tmp_path / "out")
    assert code == 1
    assert [f["message"] for f in result["findings"] if f["rule"] == "onnx-checker"] == [
        "No Op registered for Foo with domain_version of 17",
        "==> Context: Bad node spec for node. Name: foo OpType: Foo",
    ]
    minimal, models = _minimal_models(tmp_path / "out")
    assert minimal["models"] == [
        {
            "rule": "onnx-checker",
            "op_type": "Foo",
            "constraint": None,
            "node": "foo",
            "occurrences": 1,
            "path": "minimal/01-onnx-checker-Foo.onnx",
            "nodes": 1,
            "verified": True,
        },
        {
            "rule": "unsupported-op",
            "op_type": "Foo",
            "constraint": None,
            "node": "foo",
            "occurrences": 1,
            "path": "minimal/02-unsupported-op-Foo.onnx",
            "nodes": 1,
            "verified": True,
        },
    ]
    assert [n.name for n in models[0].graph.node] == ["foo"]


def test_minimal_model_full_check_error(tmp_path: Path) -> None:
    """The full check's strict shape inference names its node as `(op_type:Add, node name:
    add)`, not in onnx.checker's `Name: ... OpType:` form: that finding used to get no
    minimal model although it names its node."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "w"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        initializer=[onnx.numpy_helper.from_array(np.ones((1, 4), np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    contract = _onnx_contract(
        tmp_path / "c",
        model,
        [{"name": "x", "shape": [1, 3], "dtype": "float32"}],
        {"Relu": {}, "Add": {}},
    )
    code, result = _bundle(contract, tmp_path / "out")
    assert code == 1
    assert [(f["message"], f.get("node")) for f in result["findings"] if f["rule"] == "onnx-checker"] == [
        ("full check: [ShapeInferenceError] Inference error(s): (op_type:Add, node name: add): "
         "[ShapeInferenceError] Incompatible dimensions", "add"),
    ]
    minimal, models = _minimal_models(tmp_path / "out")
    assert minimal["models"][0] == {
        "rule": "onnx-checker",
        "op_type": "Add",
        "constraint": None,
        "node": "add",
        "occurrences": 1,
        "path": "minimal/01-onnx-checker-Add.onnx",
        "nodes": 1,
        "verified": True,
    }
    assert [n.name for n in models[0].graph.node] == ["add"]
    assert [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim])
            for i in models[0].graph.input] == [("r", [1, 3])]


def test_out_takes_one_contract(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    inputs = [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}]
    a = _onnx_contract(tmp_path / "a", model_zoo.conv_relu(), inputs, {"Conv": {}, "Relu": {}})
    b = _onnx_contract(tmp_path / "b", model_zoo.conv_relu(), inputs, {"Conv": {}, "Relu": {}})
    run = run_cli("check", a, b, "--out", tmp_path / "out")
    assert run.code == 2
    assert "--out take one contract" in run.err
    assert not (tmp_path / "out").exists()


def test_temporary_export_folder_never_reaches_the_result() -> None:
    from npu_gate.stages.export import scrub

    assert scrub("Load model from /tmp/npu-gate-x1/model.onnx failed", "/tmp/npu-gate-x1") == (
        "Load model from <export dir>/model.onnx failed"
    )
    assert scrub(None, "/tmp/x") is None


def test_inspect_bundle_without_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.diamond().SerializeToString())
    out = tmp_path / "out"
    code = (
        "import sys; from npu_gate.cli import main; "
        f"c = main(['inspect', {str(model)!r}, '--out', {str(out)!r}, '-q']); "
        "print(c, 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout == "1 False\n"
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [
        "conversion.log",
        "folded.onnx",
        "minimal/01-unsupported-op-Relu.onnx",
        "minimal/02-unsupported-op-Clip.onnx",
        "minimal/03-unsupported-op-Sigmoid.onnx",
        "model.onnx",
        "report.md",
        "result.json",
        "versions.json",
    ]
    versions = json.loads((out / "versions.json").read_text(encoding="utf-8"))
    assert versions["contract"] is None
    assert versions["exporter"] == {"path": "onnx-file", "opset_requested": None, "opset": 17}
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert [m["verified"] for m in result["minimal"]["models"]] == [True, True, True]
