"""The static memory estimate (placement/memory.py): exact bytes on graphs built in code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_gate.contract.spec import Gates
from npu_gate.errors import ProfileError
from npu_gate.pipeline import inspect_model
from npu_gate.profile.spec import load_profile
from npu_gate.result.types import GateResult
from npu_gate.stages import verdict
from npu_gate.stages.context import Settings
from tests.helpers.common import validate_result

OPS = ["Relu", "Neg", "Abs", "Add", "Mul", "If", "Reshape", "Conv"]


def profile_file(tmp_path: Path, **extra: Any) -> Path:
    doc = {"name": "mem-npu", "description": "test profile", "source": "tests", "evidence": "illustrative",
           **extra, "ops": {op: {"constraints": []} for op in OPS}}
    path = tmp_path / "mem-npu.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def inspect(tmp_path: Path, model: onnx.ModelProto, **profile: Any) -> GateResult:
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    result = inspect_model(path, load_profile(str(profile_file(tmp_path, **profile))))
    validate_result(result.to_dict())
    return result


def f32(name: str, shape: list[Any]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
          initializer: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "m", inputs, outputs, initializer=initializer or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def diamond() -> onnx.ModelProto:
    """x -> a -> (b, c) -> y, every tensor [1, 4] float32 (16 bytes)."""
    return model([helper.make_node("Relu", ["x"], ["a"], name="A"),
                  helper.make_node("Neg", ["a"], ["b"], name="B"),
                  helper.make_node("Abs", ["a"], ["c"], name="C"),
                  helper.make_node("Add", ["b", "c"], ["y"], name="D")],
                 [f32("x", [1, 4])], [f32("y", [1, 4])])


def memory(result: GateResult) -> list[tuple[int | None, int | None, list[tuple[str, int, str | None]]]]:
    return [(p.weight_bytes, p.peak_activation_bytes,
             [(t["tensor"], t["bytes"], t["producer"]) for t in p.at_peak or []])
            for p in result.partitions if p.estimated]


def test_diamond_peak_is_both_branches_and_their_source(tmp_path: Path) -> None:
    # steps: A {x, a} 32; B {a, b} 32; C {a, b, c} 48; D {b, c, y} 48: the first 48 is the peak
    result = inspect(tmp_path, diamond())
    assert memory(result) == [(0, 48, [("a", 16, "A"), ("b", 16, "B"), ("c", 16, "C")])]
    s = result.summary
    assert (s["peak_activation_bytes"], s["weight_bytes"]) == (48, 0)
    assert s["memory"] | {"estimate": ""} == {
        "estimate": "", "runtime_dtype": None, "peak_partition": 0, "peak_tensor": "a", "peak_producer": "A",
        "unknown": None}
    assert s["memory"]["estimate"].startswith("estimated upper bound")


def test_long_skip_connection_keeps_its_tensor_live(tmp_path: Path) -> None:
    # s is read by the first and the last node: live through every step
    # steps: {x, s} 64; {s, t1} 64; {s, t1, t2} 96; {s, t2, t3} 96; {s, t3, y} 96
    m = model([helper.make_node("Relu", ["x"], ["s"], name="n0"),
               helper.make_node("Neg", ["s"], ["t1"], name="n1"),
               helper.make_node("Neg", ["t1"], ["t2"], name="n2"),
               helper.make_node("Neg", ["t2"], ["t3"], name="n3"),
               helper.make_node("Add", ["t3", "s"], ["y"], name="n4")],
              [f32("x", [1, 8])], [f32("y", [1, 8])])
    assert memory(inspect(tmp_path, m)) == [(0, 96, [("s", 32, "n0"), ("t1", 32, "n1"), ("t2", 32, "n2")])]
    # without the skip (n4 reads t3 twice) s dies at n1: the peak is two tensors
    m.graph.node[4].input[1] = "t3"
    assert memory(inspect(tmp_path, m))[0][1] == 64


def if_model() -> onnx.ModelProto:
    """If(cond): then adds w and negates (two [1, 4] tensors live: 32 bytes), else multiplies by
    v (one: 16 bytes); each branch has a 16-byte weight."""
    then = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["t1"], name="then_add"),
         helper.make_node("Neg", ["t1"], ["t_out"], name="then_neg")],
        "then", [], [f32("t_out", [1, 4])],
        initializer=[numpy_helper.from_array(np.ones(4, np.float32), "w")])
    other = helper.make_graph(
        [helper.make_node("Mul", ["x", "v"], ["e_out"], name="else_mul")],
        "else", [], [f32("e_out", [1, 4])],
        initializer=[numpy_helper.from_array(np.ones(4, np.float32), "v")])
    node = helper.make_node("If", ["cond"], ["y"], name="if0", then_branch=then, else_branch=other)
    return model([node], [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), f32("x", [1, 4])],
                 [f32("y", [1, 4])])


def test_if_counts_its_largest_branch_and_every_branch_weights(tmp_path: Path) -> None:
    # outside: cond 1 + x 16 + y 16 = 33; inside the larger branch: t1 + t_out = 32
    result = inspect(tmp_path, if_model())
    assert memory(result) == [(32, 65, [("x", 16, None), ("y", 16, "if0"), ("cond", 1, None)])]
    # float16: every float tensor halves, the bool does not
    assert memory(inspect(tmp_path, if_model(), runtime_dtype="float16"))[0][:2] == (16, 1 + 8 + 8 + 16)


def test_float16_profile_sizes_float_weights_in_float16(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    shape = numpy_helper.from_array(np.array([4, 1], np.int64), "shape")  # int64: stays 8 bytes each
    m = model([helper.make_node("Mul", ["x", "w"], ["m"], name="mul"),
               helper.make_node("Reshape", ["m", "shape"], ["y"], name="reshape")],
              [f32("x", [1, 4])], [f32("y", [4, 1])], [w, shape])
    assert memory(inspect(tmp_path, m)) == [(16 + 16, 32, [("m", 16, "mul"), ("x", 16, None)])]
    assert memory(inspect(tmp_path, m, runtime_dtype="float16")) == [(8 + 16, 16, [("m", 8, "mul"), ("x", 8, None)])]


def test_a_dynamic_dim_makes_the_figures_unknown_with_the_reason(tmp_path: Path) -> None:
    m = diamond()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    result = inspect(tmp_path, m, memory={"sram_bytes": 1000, "evidence": "test budget"})
    part = result.partitions[0]
    assert (part.weight_bytes, part.peak_activation_bytes) == (0, None)
    assert part.memory_unknown == "activation tensor x has no static shape ([batch, 4])"
    assert result.summary["peak_activation_bytes"] is None
    budget = [f for f in result.findings if f.rule == "memory-budget"]
    assert [(f.severity, f.partition, f.actual, f.allowed) for f in budget] == [("error", 0, None, 1000)]
    assert "cannot be checked" in budget[0].message


@pytest.mark.parametrize(("sram", "found"), [(47, True), (48, False)])
def test_budget_exceeded_by_one_byte_and_met_exactly(tmp_path: Path, sram: int, found: bool) -> None:
    result = inspect(tmp_path, diamond(), memory={"sram_bytes": sram, "evidence": "test budget"})
    budget = [f for f in result.findings if f.rule == "memory-budget"]
    if not found:
        assert budget == []
        assert result.verdict == "pass"
        return
    f, = budget
    assert (f.severity, f.partition, f.constraint, f.actual, f.allowed, f.node, f.subject) == (
        "error", 0, "memory.sram_bytes", 48, 47, "A", "a")
    assert f.message == ("partition 0: peak live activations 48 bytes (estimated upper bound) exceed "
                         "memory.sram_bytes 47; largest live at the peak: a (16 B, from A), b (16 B, from B), "
                         "c (16 B, from C) (the profile's budget: test budget)")
    assert result.verdict == "fail"


@pytest.mark.parametrize(("budget", "key", "actual"), [
    ({"weight_bytes": 31}, "weight_bytes", 32), ({"dram_bytes": 96}, "dram_bytes", 97)])
def test_weight_and_dram_budgets(tmp_path: Path, budget: dict[str, int], key: str, actual: int) -> None:
    result = inspect(tmp_path, if_model(), memory={**budget, "evidence": "test budget"})
    f, = [f for f in result.findings if f.rule == "memory-budget"]
    assert (f.constraint, f.actual, f.allowed, f.partition) == (f"memory.{key}", actual, actual - 1, 0)
    # weights name no tensor at the peak; the peak and weights together do
    assert (f.node, f.subject) == (None, None if key == "weight_bytes" else "x")  # x: a graph input
    met = inspect(tmp_path, if_model(), memory={key: actual, "evidence": "test budget"})
    assert [f for f in met.findings if f.rule == "memory-budget"] == []


def _one_gate(gate: str, limit: int) -> Gates:
    """Gates with one of the two memory limits set."""
    if gate == "max_peak_activation_bytes":
        return Gates(max_peak_activation_bytes=limit)
    assert gate == "max_weight_bytes", gate
    return Gates(max_weight_bytes=limit)


@pytest.mark.parametrize(("gate", "limit", "passed"), [
    ("max_peak_activation_bytes", 47, False), ("max_peak_activation_bytes", 48, True),
    ("max_weight_bytes", 31, False), ("max_weight_bytes", 32, True)])
def test_memory_gates(tmp_path: Path, gate: str, limit: int, passed: bool) -> None:
    result = inspect(tmp_path, diamond() if gate == "max_peak_activation_bytes" else if_model())
    result.gates, result.findings = [], []
    verdict.decide(result, Settings(profile=load_profile("demo"), gates=_one_gate(gate, limit)))
    check, = [g for g in result.gates if g.name == gate]
    assert (check.limit, check.passed) == (limit, passed)
    findings = [f for f in result.findings if f.rule == "gate-exceeded"]
    if passed:
        assert findings == []
        return
    f, = findings
    assert (f.subject, f.partition) == (gate, 0)
    if gate == "max_peak_activation_bytes":
        assert f.node == "A"
        assert f.message == ("max_peak_activation_bytes: 48 exceeds the limit 47 (estimated upper bound; "
                             "partition 0, largest live at its peak: a (16 B, from A))")
    else:
        assert f.message.startswith("max_weight_bytes: 32 exceeds the limit 31 (estimated upper bound; partition 0")


def test_cpu_partitions_are_not_estimated(tmp_path: Path) -> None:
    m = diamond()
    m.graph.node[1].op_type = "Sigmoid"  # not in the profile: B on CPU splits the diamond
    result = inspect(tmp_path, m)
    assert [(p.device, p.estimated) for p in result.partitions] == [("npu", True), ("cpu", False), ("npu", True)]
    doc = result.to_dict()
    assert "peak_activation_bytes" not in doc["partitions"][1]
    # partition 0 ({A, C}): a leaves for B, so it stays live to the end: {x, a} 32, {a, c} 32
    # partition 2 ({D}): b and c arrive from outside: {b, c, y} 48
    assert [p[1] for p in memory(result)] == [32, 48]
    assert result.summary["peak_activation_bytes"] == 48


def test_profile_memory_needs_evidence(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="evidence"):
        load_profile(str(profile_file(tmp_path, memory={"sram_bytes": 10})))
    with pytest.raises(ProfileError, match="memory: states no budget"):
        load_profile(str(profile_file(tmp_path, memory={"evidence": "a datasheet"})))
    with pytest.raises(ProfileError, match="runtime_dtype"):
        load_profile(str(profile_file(tmp_path, runtime_dtype="int3")))


def test_builtin_profiles_state_no_budget_and_rknn_runs_float16() -> None:
    from npu_gate.resources import builtin_profile_names

    for name in builtin_profile_names():
        memory = load_profile(name).memory or {}
        assert {key: memory.get(key) for key in ("sram_bytes", "dram_bytes", "weight_bytes")} == dict.fromkeys(
            ("sram_bytes", "dram_bytes", "weight_bytes")), name  # none of their sources states a budget
        # the RKNN profiles state the layout measured on rknn-toolkit2 2.5.0 (inherited from the base)
        assert bool(memory.get("layout")) == name.startswith("rknn-"), name
    assert load_profile("rknn-rk3588").runtime_dtype == "float16"  # inherited from rknn-toolkit2-v2.1
    assert load_profile("demo").runtime_dtype is None


def test_a_tensor_arriving_from_another_partition_dies_at_its_last_reader(tmp_path: Path) -> None:
    # A | S (cpu) | C D E F: a and s arrive in the last partition and are read by C only
    # steps there: C {a, s, c} 48; D {c, d} 32; E {d, e} 32; F {d, e, y} 48
    m = model([helper.make_node("Relu", ["x"], ["a"], name="A"),
               helper.make_node("Sigmoid", ["a"], ["s"], name="S"),
               helper.make_node("Add", ["a", "s"], ["c"], name="C"),
               helper.make_node("Neg", ["c"], ["d"], name="D"),
               helper.make_node("Relu", ["d"], ["e"], name="E"),
               helper.make_node("Add", ["d", "e"], ["y"], name="F")],
              [f32("x", [1, 4])], [f32("y", [1, 4])])
    result = inspect(tmp_path, m)
    assert [(p.device, p.nodes) for p in result.partitions] == [
        ("npu", ["A"]), ("cpu", ["S"]), ("npu", ["C", "D", "E", "F"])]
    # partition 0: a leaves (read by S and C): {x, a} 32
    assert memory(result) == [(0, 32, [("a", 16, "A"), ("x", 16, None)]),
                              (0, 48, [("a", 16, "A"), ("c", 16, "C"), ("s", 16, "S")])]


RKNN_LAYOUT = {"channel_align": 16, "weight_channel_align": 8, "buffer_align": 64, "bias_dtype": "float32",
               "weight_overhead_bytes": 2048}


def two_convs() -> onnx.ModelProto:
    """x [1,3,4,4] -> dense Conv (w1 [4,3,1,1], b1 [4]) -> t [1,4,4,4] -> depthwise Conv (w2 [4,1,1,1]) -> y."""
    w1 = numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "w1")
    b1 = numpy_helper.from_array(np.ones(4, np.float32), "b1")
    w2 = numpy_helper.from_array(np.ones((4, 1, 1, 1), np.float32), "w2")
    return model([helper.make_node("Conv", ["x", "w1", "b1"], ["t"], name="conv1"),
                  helper.make_node("Conv", ["t", "w2"], ["y"], name="conv2", group=4)],
                 [f32("x", [1, 3, 4, 4])], [f32("y", [1, 4, 4, 4])], [w1, b1, w2])


def test_a_layout_pads_channels_aligns_buffers_and_keeps_biases_wide(tmp_path: Path) -> None:
    # unpadded float16: x 96, t 128, y 128 bytes; steps {x, t} 224, {t, y} 256; weights 24 + 8 + 8
    assert memory(inspect(tmp_path, two_convs(), runtime_dtype="float16")) == [
        (40, 256, [("t", 128, "conv1"), ("y", 128, "conv2")])]
    # the layout: every map's channels to 16 (16 * 16 px * 2 B = 512 each), so {x, t} = {t, y} = 1024
    # (the first is the peak); w1's input channels 3 -> 8 (64 B), b1 float32 (16 -> 64 B), w2 depthwise
    # unpadded (8 -> 64 B), every buffer to 64 bytes, then the partition's 2048-byte overhead
    memory_doc = {"layout": RKNN_LAYOUT, "evidence": "measured: test"}
    result = inspect(tmp_path, two_convs(), runtime_dtype="float16", memory=memory_doc)
    assert memory(result) == [(64 + 64 + 64 + 2048, 1024, [("t", 512, "conv1"), ("x", 512, None)])]
    assert result.summary["memory"]["estimate"].startswith("estimated upper bound on tensor bytes in the profile's")
    assert not any(f.rule == "memory-budget" for f in result.findings)  # a layout is no budget


def test_a_layout_needs_no_budget_but_memory_needs_one_or_the_other(tmp_path: Path) -> None:
    load_profile(str(profile_file(tmp_path, memory={"layout": {"buffer_align": 64}, "evidence": "measured"})))
    with pytest.raises(ProfileError, match=r"no budget .* and no layout"):
        load_profile(str(profile_file(tmp_path, memory={"evidence": "a datasheet"})))
    with pytest.raises(ProfileError, match="layout"):
        load_profile(str(profile_file(tmp_path, memory={"layout": {"channel_align": 0}, "evidence": "measured"})))
