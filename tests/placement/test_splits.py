"""Nodes the compiler runs as pieces on several devices (profile ``splits``, issue 20): RKNN's wide
MatMul/Gemm heads become an NPU Conv, a CPU Transpose and an NPU Reshape. Exact placements,
partitions, boundary bytes and findings on tiny models built here (no compiler)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_gate.pipeline import inspect_model
from npu_gate.placement.partitions import boundaries, build_partitions
from npu_gate.placement.place import Placement
from npu_gate.profile.spec import load_profile
from npu_gate.result.probe import ProbeNode
from npu_gate.result.types import GateResult
from tests.helpers.common import validate_result

PIECES = [{"op": "Conv", "device": "npu"}, {"op": "Transpose", "device": "cpu"}, {"op": "Reshape", "device": "npu"}]


def _head(t: int | str, c: int, n: int, op: str = "MatMul", weight: bool = True, tail: str = "Relu") -> onnx.ModelProto:
    """x [1, T, C] (Gemm: [T, C]) -> Relu -> MatMul by a constant [C, N] (Gemm: [N, C]^T + bias) -> tail -> y."""
    w = np.random.default_rng(0).uniform(0.1, 1.0, (n, c) if op == "Gemm" else (c, n)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")] if weight else []
    shape: list[Any] = [t, c] if op == "Gemm" else [1, t, c]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    if not weight:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [c, n]))
    if op == "Gemm":
        inits.append(numpy_helper.from_array(np.zeros(n, np.float32), "b"))
        mm = helper.make_node("Gemm", ["a", "w", "b"], ["m"], name="fc", transB=1)
    else:
        mm = helper.make_node("MatMul", ["a", "w"], ["m"], name="fc")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["a"], name="before"), mm,
                               helper.make_node(tail, ["m"], ["y"], name="after")], "head", inputs,
                              [onnx.ValueInfoProto(name="y")], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _inspect(tmp_path: Path, model: onnx.ModelProto, profile: str = "rknn-rk3588") -> GateResult:
    path = tmp_path / "head.onnx"
    path.write_bytes(model.SerializeToString())
    return inspect_model(path, load_profile(profile))


def _summary(result: GateResult) -> tuple[int, int, Any]:
    s = result.summary
    return s["npu_partitions"], s["cpu_partitions"], s["boundary_bytes"]


def test_a_matmul_head_above_8192_outputs_is_split_into_npu_cpu_npu_partitions(tmp_path: Path) -> None:
    result = _inspect(tmp_path, _head(2, 8, 8193))
    fc = next(n for n in result.nodes if n.name == "fc")
    assert fc.placement == "npu" and fc.partition == 0
    assert fc.split is not None and fc.split["id"] == "matmul-wide-output-transpose-on-cpu"
    assert fc.split["pieces"] == PIECES
    assert fc.split["reasons"][0].startswith("output 0 dim -1 = 8193 is above the maximum 8192")
    assert [(p.device, p.nodes) for p in result.partitions] == [
        ("npu", ["before", "fc"]), ("cpu", ["fc"]), ("npu", ["fc", "after"])]
    # the head's output [1, 2, 8193] float32 crosses NPU -> CPU and back
    assert _summary(result) == (2, 1, 2 * 2 * 8193 * 4)
    assert [(b.tensor, b.bytes, b.source, b.target) for b in result.boundaries] == [
        ("m@0", 65544, 0, 1), ("m@1", 65544, 1, 2)]
    found = [f for f in result.findings if f.rule == "npu-node-split"]
    assert [(f.severity, f.node, f.constraint, f.actual) for f in found] == [
        ("warning", "fc", "matmul-wide-output-transpose-on-cpu", ["npu", "cpu", "npu"])]
    assert found[0].message.startswith("fc (MatMul) runs as Conv (NPU) -> Transpose (CPU) -> Reshape (NPU): ")
    assert found[0].fix is not None and "out_features at or below 8192" in found[0].fix
    assert (found[0].evidence, found[0].doc) == (
        "measured", "rknn-rk3588-splits.calibration.json#matmul-const-weight-wide-n")
    assert fc.split["evidence"].startswith("measured by rknn-toolkit2 2.5.0 rk3588: calibration "
                                           "rknn-rk3588-splits.calibration.json#matmul-const-weight-wide-n, split at ")
    doc = result.to_dict()
    validate_result(doc)
    assert doc["schema_version"] == "1.11"
    assert doc["nodes"][1]["split"]["pieces"] == PIECES and "split" not in doc["nodes"][0]


@pytest.mark.parametrize("model", [
    pytest.param(lambda: _head(2, 8, 8192), id="n-8192"),
    pytest.param(lambda: _head(1, 8, 8193), id="t-1"),  # no Transpose at all: one Conv
    pytest.param(lambda: _head(2, 8, 8193, weight=False), id="runtime-weight"),
    pytest.param(lambda: _head("T", 8, 8193), id="symbolic-t"),  # T could be 1
])
def test_a_head_the_compiler_keeps_whole_is_not_split(tmp_path: Path, model: Callable[[], onnx.ModelProto]) -> None:
    result = _inspect(tmp_path, model())
    fc = next(n for n in result.nodes if n.name == "fc")
    assert fc.placement == "npu" and fc.split is None
    assert not [f for f in result.findings if f.rule == "npu-node-split"]
    assert result.summary["npu_partitions"] == 1 and result.summary["cpu_partitions"] == 0


def test_a_symbolic_batch_dim_does_not_hide_a_split(tmp_path: Path) -> None:
    """PP-OCRv6-small's head reads [unk__12, 40, 120]: the dims the condition tests are known."""
    model = _head(2, 8, 8193)
    for value in (*model.graph.input, *model.graph.value_info):
        if value.name in ("x", "a", "m"):
            value.type.tensor_type.shape.dim[0].dim_param = "B"
    del model.graph.value_info[:]
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "B"
    result = _inspect(tmp_path, onnx.shape_inference.infer_shapes(model))
    fc = next(n for n in result.nodes if n.name == "fc")
    assert fc.outputs[0]["shape"] == ["B", 2, 8193]
    assert fc.split is not None and result.summary["npu_partitions"] == 2
    assert result.summary["boundary_bytes"] is None  # the crossing tensor's size is not static


def test_a_gemm_head_is_split_as_the_matmul(tmp_path: Path) -> None:
    result = _inspect(tmp_path, _head(32, 8, 8210, op="Gemm"))
    fc = next(n for n in result.nodes if n.name == "fc")
    assert fc.split is not None and fc.split["id"] == "gemm-wide-output-transpose-on-cpu"
    assert _summary(result) == (2, 1, 2 * 32 * 8210 * 4)
    whole = _inspect(tmp_path, _head(1, 8, 8210, op="Gemm"))
    assert _summary(whole) == (1, 0, 0)


def test_a_cpu_reader_of_a_split_node_reads_its_last_piece(tmp_path: Path) -> None:
    """The last piece runs on the NPU: a CPU reader after it is a partition of its own, not part of the
    CPU piece's; a profile without ``splits`` keeps the node whole."""
    result = _inspect(tmp_path, _head(2, 8, 8193, tail="NonZero"))
    assert [(p.device, p.nodes) for p in result.partitions] == [
        ("npu", ["before", "fc"]), ("cpu", ["fc"]), ("npu", ["fc"]), ("cpu", ["after"])]
    whole = _inspect(tmp_path, _head(2, 8, 8193), "demo")
    assert all(n.split is None for n in whole.nodes) and not whole.boundaries
    assert not [f for f in whole.findings if f.rule == "npu-node-split"]


def test_partitions_over_pieces_without_a_graph() -> None:
    """build_partitions/boundaries on placements alone: a -> s (split npu/cpu/npu) -> b."""
    from npu_gate.graph.facts import collect

    facts = collect(_head(2, 8, 8193), [], None)
    placements = [Placement("npu"), Placement("npu", split={"id": "x", "pieces": PIECES, "reasons": [],
                                                              "evidence": "e"}), Placement("npu")]
    deps = [[], [0], [1]]
    parts = build_partitions(facts, placements, deps)
    assert [(p.device, p.nodes, p.pieces) for p in parts] == [
        ("npu", [0, 1], {1: [0]}), ("cpu", [1], {1: [1]}), ("npu", [1, 2], {1: [2]})]
    assert [(b.tensor, b.source, b.target) for b in boundaries(facts, parts)] == [("m@0", 0, 1), ("m@1", 1, 2)]


def test_a_predicted_split_agrees_with_a_compiler_split_only() -> None:
    split = ProbeNode("fc", "MatMul", predicted="split", actual="split", runs_on="split", became="Conv+Transpose")
    assert split.agrees is True
    assert ProbeNode("fc", "MatMul", predicted="npu", actual="split", runs_on="split").agrees is False
    assert ProbeNode("fc", "MatMul", predicted="split", actual="npu", runs_on="npu").agrees is False


def test_the_splits_key_is_inherited_and_schema_checked(tmp_path: Path) -> None:
    assert [e["id"] for e in load_profile("rknn-rk3588").splits or []] == [
        "matmul-wide-output-transpose-on-cpu", "gemm-wide-output-transpose-on-cpu",
        "concat-of-flattened-levels-reshape-after"]
    bad = {"name": "p", "description": "d", "source": "s", "evidence": "illustrative", "extends": "rknn-rk3588",
           "ops": {}, "splits": [{"id": "x", "op": "MatMul", "constraints": [], "pieces": PIECES, "evidence": "e"}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    from npu_gate.errors import ProfileError

    with pytest.raises(ProfileError, match="splits"):
        load_profile(str(path))
    none = {**bad, "splits": None}
    path.write_text(json.dumps(none), encoding="utf-8")
    assert load_profile(str(path)).splits is None


def test_the_markdown_report_shows_the_pieces(tmp_path: Path) -> None:
    from npu_gate.render.markdown import render

    text = render(_inspect(tmp_path, _head(2, 8, 8193)))
    assert "| npu (split: Conv npu → Transpose cpu → Reshape npu) |" in text
    assert "npu-node-split" in text


def test_a_split_condition_without_a_test_is_a_profile_error(tmp_path: Path) -> None:
    from npu_gate.errors import ProfileError

    doc = {"name": "p", "description": "d", "source": "s", "evidence": "illustrative", "extends": "rknn-rk3588",
           "ops": {}, "splits": [{"id": "x", "op": "MatMul", "constraints": [{"id": "no-test", "output": 0}],
                                  "pieces": PIECES, "evidence": "e"}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ProfileError, match=r"splits\[0\]\.constraints\[0\]"):
        load_profile(str(path))


def test_the_memory_estimate_counts_a_split_nodes_weights_once(tmp_path: Path) -> None:
    result = _inspect(tmp_path, _head(2, 8, 8193))
    weights = {p.id: p.weight_bytes for p in result.partitions if p.device == "npu"}
    # the [8, 8193] weight in float16 padded to 64 bytes, plus the layout's 2048-byte overhead per partition
    assert weights == {0: 131136 + 2048, 2: 2048}


@pytest.mark.slow
def test_the_rknn_splits_entries_are_what_their_record_derives() -> None:
    """The base profile's MatMul/Gemm entries are copied from ``profile calibrate --from-record`` on the
    checked-in splits record (docs/records/): re-derived here without the compiler, they cannot drift
    apart. (The Concat entry is measured on hand-built heads: test_probe_rknn.py re-measures them.)"""
    from npu_gate.calibrate import derive_profile, record_json
    from tests.helpers.common import REPO

    path = REPO / "docs" / "records" / "rknn-rk3588-splits.calibration.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    doc, derived = derive_profile(record)
    base = json.loads((REPO / "npu_gate" / "profiles" / "rknn-toolkit2-v2.1.json").read_text(encoding="utf-8"))
    from_record = [e for e in base["splits"] if e.get("doc", "").startswith("rknn-rk3588-splits.calibration.json#")]
    assert doc["splits"] == derived.splits == from_record
    assert {k: v["verdict"] for k, v in derived.verdicts.items()} == {
        "splits MatMul matmul-wide-output-transpose-on-cpu": "confirmed",
        "splits Gemm gemm-wide-output-transpose-on-cpu": "confirmed"}
    assert derived.verdicts == record["verdicts"] and record_json(record) == path.read_text(encoding="utf-8")
    assert (record["sweep"], record["timings"]["points"], record["compiler"]) == (
        "splits", 40, {"name": "rknn-toolkit2", "version": "2.5.0", "target": "rk3588"})


# --- a Concat of flattened levels (nudenet's YOLOv8 head): a context on producers and readers --------


def _head_nodes(name: str, tmp_path: Path) -> tuple[Any, dict[str, Any]]:
    from tests.helpers.cleanup_models import MODELS

    result = _inspect(tmp_path, MODELS[name]())
    return result, {n.name: n for n in result.nodes}


LEVELS_40 = [("npu", ["relu", "pool20", "pool10", "flat40", "flat20"]), ("cpu", ["flat10"])]
LEVELS_52 = [("npu", ["relu", "pool26", "pool13", "flat52"]), ("cpu", ["flat26"]), ("cpu", ["flat13"])]


@pytest.mark.parametrize(("name", "total", "partitions"), [
    ("head_split_2100", 2100, [*LEVELS_40, ("npu", ["cat"]), ("cpu", ["cat"]), ("npu", ["split", "scores"])]),
    ("head_split_3549", 3549, [*LEVELS_52, ("npu", ["cat"]), ("cpu", ["cat"]), ("npu", ["split", "scores"])]),
    ("head_transpose_2100", 2100, [*LEVELS_40, ("npu", ["cat"]), ("cpu", ["cat"]), ("npu", ["after"])])])
def test_a_concat_of_flattened_levels_read_by_a_split_or_transpose_is_split(tmp_path: Path, name: str, total: int,
                                                                           partitions: list[Any]) -> None:
    """RKNN flattens once after the Concat (measured: a CPU Reshape between the NPU Concat and its reader)."""
    result, nodes = _head_nodes(name, tmp_path)
    cat = nodes["cat"]
    assert cat.placement == "npu" and cat.split is not None
    assert (cat.split["id"], cat.split["pieces"]) == (
        "concat-of-flattened-levels-reshape-after",
        [{"op": "Concat", "device": "npu"}, {"op": "Reshape", "device": "cpu"}])
    assert cat.split["reasons"][0].startswith(f"output 0 dim -1 = {total} is not a multiple of 8")
    # 3 NPU partitions: the compiler's NPU segments (tests/probe/test_probe_rknn.py re-measures them)
    assert [(p.device, p.nodes) for p in result.partitions] == partitions
    found = [f for f in result.findings if f.rule == "npu-node-split"]
    assert [(f.node, f.constraint, f.actual) for f in found] == [
        ("cat", "concat-of-flattened-levels-reshape-after", ["npu", "cpu"])]
    assert found[0].fix is not None and "multiple of 8" in found[0].fix
    validate_result(result.to_dict())


@pytest.mark.parametrize("name", ["head_split_336", "head_transpose_336", "head_sigmoid_2100"])
def test_a_concat_of_flattened_levels_stays_whole_at_a_multiple_of_8_or_an_elementwise_reader(
        tmp_path: Path, name: str) -> None:
    """336 = 16*16 + 8*8 + 4*4: the added Reshape runs on the NPU; a Sigmoid reader: the flatten goes to the
    output's adapter (measured), the entry's ``readers`` context does not hold."""
    result, nodes = _head_nodes(name, tmp_path)
    assert nodes["cat"].placement == "npu" and nodes["cat"].split is None
    assert not [f for f in result.findings if f.rule == "npu-node-split"]


def _concat_model(reshape_to: list[int] | None = None, count: int = 2, reader: str = "Split", output: bool = False,
                  in_shape: list[int] | None = None, producer: str = "Reshape") -> onnx.ModelProto:
    """count inputs ``in_shape`` (default [1, 8, 3, 3]) -> ``producer`` (a Reshape to ``reshape_to``, default
    [1, 8, 9]; or a Squeeze of the last axis) -> Concat (last axis) -> reader (or the graph output). The
    defaults are the positive case: total 18, not a multiple of 8."""
    shape = in_shape or ([1, 8, 9, 1] if producer == "Squeeze" else [1, 8, 3, 3])
    constant = [3] if producer == "Squeeze" else reshape_to or [1, 8, 9]
    inits = [numpy_helper.from_array(np.array(constant, np.int64), "to")]
    nodes, flat = [], []
    for i in range(count):
        nodes.append(helper.make_node(producer, [f"x{i}", "to"], [f"f{i}"], name=f"flat{i}"))
        flat.append(f"f{i}")
    nodes.append(helper.make_node("Concat", flat, ["cat"], name="cat", axis=-1))
    outputs = [onnx.ValueInfoProto(name="cat")] if output else [onnx.ValueInfoProto(name="y")]
    if not output:
        nodes.append(helper.make_node(reader, ["cat"], ["y"], name="after"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, shape)
                                           for i in range(count)], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


# Each case differs from the positive one (two [1, 8, 3, 3] -> [1, 8, 9], total 18, a Split reader: split)
# in the one condition its id names.
@pytest.mark.parametrize("model", [
    _concat_model(producer="Squeeze"),  # [1, 8, 9, 1] -> [1, 8, 9]: the same shapes, not from a Reshape
    _concat_model(in_shape=[1, 8, 9]),  # a Reshape that keeps the rank: merges no dims
    _concat_model([9, 8, 1]),  # a Reshape to rank 3 that does not keep the leading dims
    _concat_model(count=1),  # one input (total 9): min_count 2 (and RKNN removes a one-input Concat)
    _concat_model(count=3, in_shape=[1, 8, 4, 4], reshape_to=[1, 8, 16]),  # total 48: a multiple of 8
    _concat_model(reader="Sigmoid"),  # an elementwise reader: the flatten goes to the output adapter
    _concat_model(reader="Relu"),  # a reader the context does not name
    _concat_model(output=True),  # the Concat writes the graph output
], ids=["not-a-reshape", "not-a-flatten", "leading-dims-moved", "one-input", "total-48", "sigmoid-reader",
        "relu-reader", "graph-output"])
def test_the_concat_entrys_context_needs_every_condition(tmp_path: Path, model: onnx.ModelProto) -> None:
    result = _inspect(tmp_path, model)
    cat = next(n for n in result.nodes if n.name == "cat")
    one_input = len(model.graph.input) == 1
    assert (cat.placement, cat.split) == ("eliminated" if one_input else "npu", None)
    assert not [f for f in result.findings if f.rule == "npu-node-split"]


@pytest.mark.parametrize("reader", ["Split", "Transpose"])
def test_the_concat_entrys_context_holds_on_a_two_level_head_of_total_18(tmp_path: Path, reader: str) -> None:
    """The positive twin of the cases above: two [1, 8, 3, 3] -> [1, 8, 9] (a constant shape, no -1), 18."""
    result = _inspect(tmp_path, _concat_model(reader=reader))
    cat = next(n for n in result.nodes if n.name == "cat")
    assert cat.split is not None and cat.split["reasons"][0].startswith("output 0 dim -1 = 18 is not a multiple of 8")
