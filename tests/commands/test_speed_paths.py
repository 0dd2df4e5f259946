"""The fast paths of `inspect` give what the plain code gave (see bench/README.md)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from npu_gate.graph import facts as graph_facts
from npu_gate.process.gc_pause import gc_paused
from npu_gate.render import json_
from tests.helpers import model_zoo
from tests.helpers.common import REPO as ROOT


def test_gc_paused_restores_and_nests() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block does not switch it back on
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # off before: stays off
    finally:
        gc.enable()


def test_gc_paused_restores_on_error() -> None:
    try:
        with gc_paused():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()


def test_compact_matches_json_module() -> None:
    values = [
        {"name": "naïve \"x\"\n\t\x00", "shape": [1, None, "N"], "dtype": "float32"},
        [1.5, -0.0, 1e-07, "Infinity", True, False, None],
        {"nested": {"a": [], "b": {}}, "ünïcode": "日本"},
        "plain string", 3, 2.5, None,
    ]
    for value in values:
        assert json.loads(json_._compact(value)) == value


def test_compact_falls_back_for_what_orjson_refuses() -> None:
    big = 2**70  # boundary bytes computed from absurd dims
    expected = b'{"bytes":1180591620717411303424,"x":[null,1.0]}'
    assert json_._compact({"bytes": big, "x": [float("nan"), 1.0]}) == expected
    assert json_._compact({1: "int key"}) == b'{"1":"int key"}'
    assert json_._compact([float("inf")]) == b"[null]"  # orjson's own rule: never the token Infinity


def test_dumps_layout() -> None:
    text = json_.dumps({"a": 1, "nodes": [{"x": 1}, {"y": [2, 3]}], "empty": []})
    assert text == '{\n  "a": 1,\n  "nodes": [\n    {"x":1},\n    {"y":[2,3]}\n  ],\n  "empty": []\n}\n'


def test_tensor_info_from_type_cache_gives_own_shapes() -> None:
    value = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, "N", None, 4])
    first = graph_facts.tensor_info_from_type("a", value.type)
    second = graph_facts.tensor_info_from_type("b", value.type)  # same type: cached view
    assert (first.name, first.dtype, first.shape) == ("a", "float32", [1, "N", None, 4])
    assert second.shape == first.shape and second.shape is not first.shape
    assert first.shape is not None
    first.shape[0] = 7  # symbolic refinement may edit a shape: the other tensor keeps its own
    assert second.shape == [1, "N", None, 4]
    assert graph_facts.tensor_info_from_type("a", value.type).shape == [1, "N", None, 4]


def test_tensor_info_from_type_without_shape_or_tensor() -> None:
    no_shape = onnx.TypeProto()
    no_shape.tensor_type.elem_type = TensorProto.INT64
    info = graph_facts.tensor_info_from_type("s", no_shape)
    assert (info.dtype, info.shape) == ("int64", None)
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    info = graph_facts.tensor_info_from_type("q", seq)
    assert (info.dtype, info.shape) == (None, None)


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_inspect.py"), *args],
        capture_output=True, text=True, check=False, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_bench_phases_run() -> None:
    """The bench's phase list names functions that exist (it wraps them by name)."""
    done = _bench("--phases-only", "--sizes", "20")
    assert done.returncode == 0, done.stderr
    assert "20 nodes: floor (load + infer_shapes)" in done.stdout
    assert "graph.collect" in done.stdout and "json_.dumps" in done.stdout


def test_bench_before_needs_an_npu_gate_tree(tmp_path: Path) -> None:
    """--before a folder without npu_gate/__init__.py: one line on stderr, exit 2, nothing timed."""
    done = _bench("--before", str(tmp_path), "--sizes", "20", "--repeat", "1", "--skip-ort")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert "not an npu_gate source tree" in done.stderr and done.stdout == ""


@pytest.mark.slow
def test_bench_before_prints_the_before_column() -> None:
    """--before this tree: both sides checked to import their own tree, before/after columns printed."""
    done = _bench("--before", ".", "--sizes", "20", "--repeat", "1", "--skip-ort")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"after: npu_gate from {ROOT}" in lines and f"before: npu_gate from {ROOT}" in lines
    header = next(line for line in lines if line.lstrip().startswith("nodes"))
    assert "before s" in header and "after s" in header and "after/before" in header
    row = next(line for line in lines if line.split()[:1] == ["20"])
    values = row.split("floor")[0].split()  # nodes, the nine columns of today (ort: nan), before, after, ratio
    assert len(values) == 13 and values[11] == values[3]  # "after s" is the insp+json time
    # the ratio is of the unrounded times: the printed ones are rounded to 2 decimals
    assert float(values[12]) == pytest.approx(float(values[11]) / float(values[10]), abs=0.05)
    assert "linear growth: n/a (needs three sizes or more)" in lines


def test_constant_values_are_read_only_when_a_value_test_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile without value tests never reads a constant's value; one with them reads the
    tensors it tests, once per test."""
    from npu_gate.graph import shape_values
    from npu_gate.pipeline import inspect_model
    from npu_gate.profile.spec import load_profile
    from tests.helpers.profile_builders import BUILDERS

    asked: list[str] = []
    built: list[int] = []
    original_call, original_evaluator = shape_values.ConstantValues.__call__, shape_values.Evaluator

    def call(self: shape_values.ConstantValues, name: str) -> object:
        asked.append(name)
        return original_call(self, name)

    def evaluator(*args: object) -> shape_values.Evaluator:
        built.append(1)
        return original_evaluator(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(shape_values.ConstantValues, "__call__", call)
    monkeypatch.setattr(shape_values, "Evaluator", evaluator)
    (tmp_path / "m.onnx").write_bytes(BUILDERS["slice"](steps=[2]).SerializeToString())
    plain = tmp_path / "plain.json"
    head = {"name": "p", "description": "d", "source": "s", "evidence": "illustrative"}
    plain.write_text(json.dumps(head | {"ops": {"Slice": {"constraints": [
        {"id": "s", "input": 4, "constant": True}]}}}))
    valued = tmp_path / "valued.json"
    valued.write_text(json.dumps(head | {"ops": {"Slice": {"constraints": [
        {"id": "s", "input": 4, "value": {"each": True, "in": [1]}}]}}}))
    assert inspect_model(tmp_path / "m.onnx", load_profile(str(plain))).nodes[0].placement == "npu"
    assert (asked, built) == ([], [])
    assert inspect_model(tmp_path / "m.onnx", load_profile(str(valued))).nodes[0].placement == "cpu"
    assert (asked, built) == (["steps"], [1])


# What `inspect` of an ONNX file never runs, so never imports (docs/records/speed.md, session 8): the
# stages of a contract run and what only they use, the contract reader, the reports of `check`
# and Markdown's table writer. Each was imported by the modules `inspect` runs until then.
NOT_IMPORTED_BY_INSPECT = (
    "npu_gate.stages.rewrites", "npu_gate.rewrites", "npu_gate.rewrites.verify", "npu_gate.stages.compiler",
    "npu_gate.probe", "npu_gate.probe.runner", "npu_gate.quantize", "npu_gate.stages.export",
    "npu_gate.stages.exporters", "npu_gate.stages.numerics", "npu_gate.model.worker", "npu_gate.model.numerics",
    "npu_gate.model.samples", "npu_gate.contract.spec", "npu_gate.contract.device_timings",
    "npu_gate.contract.samples_file", "npu_gate.result.probe", "npu_gate.compare.report",
    "npu_gate.compare.baseline", "npu_gate.evidence", "npu_gate.render.markdown", "tabulate", "jsonschema",
)


def test_inspect_imports_no_stage_it_does_not_run(tmp_path: Path) -> None:
    """`inspect FILE.onnx --json` (built-in profile, no contract) imports none of
    NOT_IMPORTED_BY_INSPECT, and still imports what it runs (the check can see an import)."""
    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.conv_relu().SerializeToString())
    code = (
        "import json, sys\n"
        "from npu_gate.cli import main\n"
        f"rc = main(['inspect', {str(model)!r}, '--json', {str(tmp_path / 'r.json')!r}])\n"
        "print(json.dumps([rc, sorted(sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    rc, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert rc == 1  # demo: the Relu is on the CPU
    assert [m for m in NOT_IMPORTED_BY_INSPECT if m in modules] == []
    ran = ("npu_gate.pipeline", "npu_gate.stages.analyse", "npu_gate.stages.verdict", "npu_gate.stages.quantize",
           "npu_gate.contract.parts", "npu_gate.render.text", "npu_gate.render.json_")
    assert [m for m in ran if m not in modules] == []
