"""The probe: the plug-in machinery on the fake compiler (real child processes), the RKNN
log parsing and node mapping on logs captured from real RKNN-Toolkit2 runs (fixtures)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest

from npu_gate.errors import GateError
from npu_gate.pipeline import probe_model as probe
from npu_gate.pipeline import replay_model as replay
from npu_gate.probe import get_compiler
from npu_gate.probe.base import ChildRun, clean_log
from npu_gate.probe.fake import FakeCompiler
from npu_gate.probe.rknn import RknnCompiler, final_graph, parse_log
from npu_gate.profile.spec import load_profile
from npu_gate.render.probe import markdown, text
from npu_gate.resources import load_schema
from tests.helpers import model_zoo, probe_models
from tests.helpers.common import REPO, Golden, RunCli, SaveModel

FIXTURES = REPO / "tests" / "fixtures" / "rknn"
FAKE = FakeCompiler()
PROBE_1_1_SUMMARY_KEYS = ("adapters", "predicted_npu_partitions_with_adapters",
                          "predicted_cpu_partitions_with_adapters")
PROBE_1_1_FIXTURES = ("resize_odd_dims", "unnamed_nodes", "groupnorm")  # captured after probe-1.1


def _raw(name: str, attempt: int = 1) -> str:
    return (FIXTURES / name / "work" / f"attempt-{attempt}" / "compiler.log").read_bytes().decode("utf-8")


def _replay(name: str, profile: str = "demo") -> dict[str, Any]:
    folder = FIXTURES / name
    result = replay(folder / "model.onnx", RknnCompiler(), "rk3588", folder / "work", load_profile(profile))
    return result.to_dict()


def _actuals(doc: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {n["name"]: (n["predicted"], n["actual"], n["became"]) for n in doc["nodes"]}


def _validate(doc: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator(load_schema("probe")).iter_errors(doc))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


# --- log cleaning and parsing, on real RKNN-Toolkit2 2.5.0 logs ---

def test_clean_log_strips_colour_codes_and_progress_frames() -> None:
    raw = _raw("seed_hardswish")
    assert "\x1b[" in raw and "\r" in raw  # the real log has both
    lines = clean_log(raw)
    assert not any("\x1b" in line or "\r" in line for line in lines)
    assert lines[0] == "I rknn-toolkit2 version: 2.5.0"
    assert lines[1].startswith("I Loading : 100%|") and lines[1].endswith("it/s]")  # only the last frame
    assert "W load_onnx: The config.mean_values is None, zeros will be set for input 0!" in lines


def test_parse_log_reads_rewrites_and_the_op_table() -> None:
    out = parse_log(clean_log(_raw("seed_hardswish")))
    assert out.version == "2.5.0"
    assert out.error is None and out.retry_rule is None
    assert [(r.rule, r.removed, r.added) for r in out.rewrites] == [
        ("eliminate_add_redundancy_const_dim", ["/Add"], ["/Add"]),
        ("eliminate_div_redundancy_const_dim", ["/Div"], ["/Div"]),
        ("convert_div_to_mul", ["/Div"], ["/Div_2mul"]),
        ("replace_torch_hardswish2", ["/Add", "/Clip", "/Mul", "/Div_2mul"], ["/Add_2hs"]),
    ]
    assert [(r.id, r.op_type, r.target, r.full_name, r.io) for r in out.rows] == [
        (0, "InputOperator", "cpu", "images", True),
        (1, "ConvHardSwish", "npu", "/conv/Conv", False),
        (2, "OutputOperator", "cpu", "out", True),
    ]
    assert out.rows[1].input_shapes == "(1,3,16,16),(4,3,3,3),(4)"
    assert out.rows[1].output_shapes == "(1,4,16,16)"
    assert out.rows[0].input_shapes is None  # "\" in the table


def test_parse_log_rewrites_that_only_remove_and_lowerings() -> None:
    out = parse_log(clean_log(_raw("gelu_head")))
    rewrites = {r.rule: (r.removed, r.added) for r in out.rewrites}
    assert rewrites["replace_torch_gelu"] == (["gelu_div", "gelu_erf", "gelu_add", "gelu_mul", "gelu_mul2"],
                                              ["gelu_mul2_2gelu"])
    assert rewrites["fuse_transpose_reshape"] == (["f_tp", "g_mm_tp"], [])
    assert [(r.op_type, r.target, r.full_name) for r in out.rows if not r.io] == [
        ("Conv", "npu", "conv1"), ("Conv", "npu", "gap_2conv0"), ("Conv", "npu", "gap_2conv1"),
        ("ConvExGelu", "npu", "fc#2"), ("Reshape", "npu", "y-rs"),
    ]


def test_parse_log_errors_and_the_rule_to_disable() -> None:
    failed = parse_log(clean_log(_raw("layernorm_no_epsilon", 1)))
    assert failed.retry_rule == "convert_layernorm_to_exnorm"
    assert failed.rows == []
    refused = parse_log(clean_log(_raw("opset20")))
    assert refused.error == "load_onnx: Unsupport onnx opset 20, need <= 19!"


def test_an_op_row_without_a_full_name_is_parsed_and_the_rows_after_it_kept() -> None:
    """RKNN-Toolkit2 inserts a Conv before a linear Resize of a 33x33 input; its row has no
    FullName. The table went on after it: the Resize's row was lost and the Resize came out
    "fused" into nothing."""
    out = parse_log(clean_log(_raw("resize_odd_dims")))
    assert [(r.id, r.op_type, r.target, r.full_name, r.io) for r in out.rows] == [
        (0, "InputOperator", "cpu", "x", True),
        (1, "Conv", "npu", "", False),
        (2, "Resize", "npu", "resize", False),
        (3, "OutputOperator", "cpu", "y", True),
    ]
    assert (out.rows[1].input_shapes, out.rows[1].output_shapes) == ("(1,16,33,33),(1,16,1,1)", "(1,16,33,33)")


def test_an_op_row_missing_a_cell_before_the_full_name_ends_the_table() -> None:
    """Only an empty last cell is read as "no name"; a row short of another cell is not guessed at."""
    from npu_gate.probe.rknn import parse_table

    header = "ID   OpType   DataType Target InputShape   OutputShape  Cycles(DDR/NPU/Total)    RW(KB)       FullName"
    lines = [header,
             "1    Relu     FLOAT16  NPU    (1,8)        (1,8)        1/2/3                    1            Relu:a",
             "2    Relu     FLOAT16  NPU    (1,8)        (1,8)                                 1            Relu:b",
             "3    Relu     FLOAT16  NPU    (1,8)        (1,8)        1/2/3                    1            Relu:c"]
    assert [(r.id, r.full_name) for r in parse_table(lines)] == [(1, "a")]
    no_name = "2    Conv     FLOAT16  NPU    (1,8)        (1,8)        1/2/3                    1"
    unnamed = [*lines[:2], no_name, lines[3]]
    assert [(r.id, r.op_type, r.full_name) for r in parse_table(unnamed)] == [
        (1, "Relu", "a"), (2, "Conv", ""), (3, "Relu", "c")]


def test_final_graph_is_the_last_dump() -> None:
    producers, consumers, ops, io, tensors = final_graph(FIXTURES / "seed_hardswish" / "work" / "attempt-1")
    assert producers == {"/conv/Conv": [], "/Add_2hs": ["/conv/Conv"]}
    assert consumers == {"/conv/Conv": ["/Add_2hs"], "/Add_2hs": []}
    assert ops == {"/conv/Conv": "Conv", "/Add_2hs": "HardSwish"}
    assert io == {"/conv/Conv": [("input", "images")], "/Add_2hs": [("output", "out")]}
    assert tensors == {"/conv/Conv": (["images"], ["/conv/Conv_output_0"]),
                       "/Add_2hs": (["/conv/Conv_output_0"], ["out"])}
    assert final_graph(FIXTURES / "opset20" / "work" / "attempt-1") == (None, None, None, None, None)


# --- mapping back to the original nodes, replayed from the kept work folders ---

@pytest.mark.parametrize("name", sorted(probe_models.MODELS))
def test_replay_reproduces_the_recorded_probe(name: str) -> None:
    recorded = json.loads((FIXTURES / name / "probe.json").read_text(encoding="utf-8"))
    replayed = _replay(name)
    _validate(replayed)
    _validate(recorded)  # a probe-1.0 document is still valid
    # Most fixtures were recorded by probe-1.0. probe-1.1 adds the summary's adapter keys, a summary
    # for a build that failed (every placed node disagrees by "compiler failure") and the cause
    # "rank adaptation" (1.0 said "fusion/lowering" for a node that ended up in an adapter).
    recorded_version = recorded.pop("schema_version")
    assert replayed.pop("schema_version") == "probe-1.6"
    assert replayed.pop("preparation") is None  # probe-1.4: RKNN's plug-in prepares nothing
    replayed.pop("memory")  # probe-1.2: tested by test_probe_memory_*
    assert replayed.pop("estimates") is None  # probe-1.3: RKNN prints no estimates
    assert replayed.pop("quantization") is None  # probe-1.4: these are float builds
    for node in replayed["nodes"]:  # probe-1.3: the RKNN log gives no reasons, names no I/O adapters, maps every node
        assert (node.pop("reason"), node.pop("adapter"), node.pop("unmapped")) == (None, False, False)
    replayed["summary"].pop("partitions_agree", None)  # probe-1.3: tested by test_partitions_agree_*
    assert recorded_version == ("probe-1.1" if name in PROBE_1_1_FIXTURES else "probe-1.0")
    summary = replayed["summary"]
    if recorded_version == "probe-1.0":
        for key in PROBE_1_1_SUMMARY_KEYS:
            summary.pop(key)
        if replayed["status"] != "ok":
            assert {d["cause"] for d in summary["disagreements"]} == {"compiler failure"}
            replayed["summary"] = {}
        else:
            for d in summary["disagreements"]:
                d["cause"] = "fusion/lowering" if d["cause"] == "rank adaptation" else d["cause"]
            summary["disagreements_by_cause"] = dict(sorted(Counter(d["cause"] for d in summary["disagreements"])
                                                            .items()))
    for doc in (recorded, replayed):
        doc.pop("timings")
        for attempt in doc["attempts"]:
            attempt.pop("seconds")
    assert replayed == recorded


def test_lesson_net_one_npu_op_clip_fused_away() -> None:
    doc = _replay("seed_hardswish")
    assert doc["status"] == "ok" and doc["evidence"] == "measured: rknn-toolkit2 2.5.0 rk3588"
    assert _actuals(doc) == {
        "/conv/Conv": ("npu", "npu", "ConvHardSwish"),
        "/Constant": ("folded", "folded", None),
        "/Add": ("npu", "fused", "ConvHardSwish"),
        "/Constant_1": ("folded", "folded", None),
        "/Constant_2": ("folded", "folded", None),
        "/Clip": ("cpu", "fused", "ConvHardSwish"),
        "/Mul": ("npu", "fused", "ConvHardSwish"),
        "/Constant_3": ("folded", "folded", None),
        "/Div": ("npu", "fused", "ConvHardSwish"),
    }
    clip = next(n for n in doc["nodes"] if n["name"] == "/Clip")
    assert clip["runs_on"] == "npu" and clip["rows"] == [1] and clip["agrees"] is False
    assert clip["via"] == ["replace_torch_hardswish2"]
    assert doc["segments"] == [{"index": 0, "device": "npu", "rows": [1], "ops": ["ConvHardSwish"],
                                "nodes": ["/conv/Conv", "/Add", "/Clip", "/Mul", "/Div"]}]
    s = doc["summary"]
    assert (s["agree"], s["compared"], s["agreement_rate"]) == (8, 9, 0.8889)
    assert (s["predicted_npu_partitions"], s["npu_segments"], s["cpu_segments"]) == (2, 1, 0)
    assert s["disagreements"] == [{"node": "/Clip", "op_type": "Clip", "predicted": "cpu", "actual": "fused",
                                   "became": "ConvHardSwish", "runs_on": "npu", "cause": "fusion/lowering"}]
    assert doc["findings"] == []


def test_cpu_op_between_npu_ops_gives_two_npu_segments() -> None:
    doc = _replay("erf_between")
    assert [(s["device"], s["nodes"]) for s in doc["segments"]] == [
        ("npu", ["conv1"]), ("cpu", ["erf"]), ("npu", ["conv2"])]
    assert _actuals(doc)["erf"] == ("cpu", "cpu", None)
    assert doc["summary"]["agreement_rate"] == 1.0


def test_lowering_fusion_and_an_added_adapter() -> None:
    doc = _replay("gelu_head")
    actual = _actuals(doc)
    assert actual["gap"] == ("cpu", "npu", "Conv")  # GlobalAveragePool lowered to two Convs
    assert actual["fc"] == ("cpu", "npu", "ConvExGelu")  # Gemm lowered to Conv, GELU fused in
    assert actual["flat"] == ("cpu", "folded", None)
    assert {actual[n] for n in ("gelu_div", "gelu_erf", "gelu_add", "gelu_mul", "gelu_mul2")} == {
        (p, "fused", "ConvExGelu") for p in ("npu", "cpu")}
    assert next(n for n in doc["nodes"] if n["name"] == "gap")["rows"] == [2, 3]
    reshape = next(r for r in doc["ops"] if r["full_name"] == "y-rs")
    assert reshape["sources"] == []  # added by the compiler for the 2-D output
    assert doc["summary"]["compiler_added_ops"] == 1
    causes = {d["node"]: d["cause"] for d in doc["summary"]["disagreements"]}
    assert causes == {"gap": "fusion/lowering", "flat": "folded by the compiler", "fc": "fusion/lowering",
                      "gelu_erf": "fusion/lowering"}


def test_resize_behind_an_inserted_conv_runs_on_the_npu() -> None:
    doc = _replay("resize_odd_dims", "rknn-rk3588")
    assert _actuals(doc) == {"resize": ("npu", "npu", None)}
    resize = doc["nodes"][0]
    assert (resize["runs_on"], resize["rows"], resize["agrees"]) == ("npu", [2], True)
    assert [(r["id"], r["op_type"], r["sources"]) for r in doc["ops"] if not r["io"]] == [
        (1, "Conv", []), (2, "Resize", ["resize"])]
    assert doc["summary"]["compiler_added_ops"] == 1
    assert doc["segments"] == [{"index": 0, "device": "npu", "rows": [1, 2], "ops": ["Conv", "Resize"],
                                "nodes": ["resize"]}]


def test_unnamed_nodes_map_to_the_rows_named_after_their_outputs() -> None:
    """The toolkit names an unnamed node after its first output: the row "a" is the unnamed Conv
    (npu_gate's Conv#0) with the unnamed Relu fused in, not an op the compiler added from no node."""
    doc = _replay("unnamed_nodes")
    assert _actuals(doc) == {"Conv#0": ("npu", "npu", "ConvRelu"), "Relu#1": ("cpu", "fused", "ConvRelu"),
                             "conv_b": ("npu", "npu", None)}
    assert [(r["id"], r["full_name"], r["sources"]) for r in doc["ops"] if not r["io"]] == [
        (1, "a", ["Conv#0", "Relu#1"]), (2, "conv_b", ["conv_b"])]
    assert doc["summary"]["compiler_added_ops"] == 0
    assert [(s["device"], s["nodes"]) for s in doc["segments"]] == [("npu", ["Conv#0", "Relu#1", "conv_b"])]


def test_an_unnamed_nodes_output_name_is_not_used_when_another_node_has_that_name() -> None:
    from npu_gate.probe.runner import compiler_graph_names as graph_names
    from npu_gate.result.types import GateResult, NodeResult

    def node(name: str, original_name: str | None, output: str) -> NodeResult:
        return NodeResult(name, "Relu", "", [], [{"name": output, "shape": None, "dtype": None}], {}, [], "npu", [],
                          None, original_name=original_name)

    result = GateResult("m", "pass", {}, {}, {},
                        nodes=[node("Relu#0", "", "r"), node("Conv#1", "", "conv"), node("conv", None, "y")])
    assert graph_names(RknnCompiler(), result) == {"Relu#0": "r"}
    assert graph_names(FAKE, result) == {}


def test_a_node_a_fuse_rule_merged_without_naming_the_result_is_fused() -> None:
    """`fuse_two_reshape: remove node = ['to_groups']` merges the model's Reshape into the rank
    adapter the toolkit put after it; the log names no result. It used to be read as folded away,
    and the adapter row holding its work as an op the compiler added from no node."""
    doc = _replay("groupnorm")
    assert _actuals(doc)["to_groups"] == ("cpu", "fused", "Reshape")
    node = next(n for n in doc["nodes"] if n["name"] == "to_groups")
    assert (node["runs_on"], node["rows"], node["via"]) == ("npu", [2], ["fuse_two_reshape"])
    assert [(r["id"], r["op_type"], r["full_name"], r["sources"]) for r in doc["ops"] if not r["io"]][:2] == [
        (1, "Conv", "conv", ["conv"]), (2, "Reshape", "g_rs", ["to_groups"])]
    assert doc["summary"]["compiler_added_ops"] == 0
    assert _actuals(doc)["shape"] == ("folded", "folded", None)  # fold_constant: really folded
    assert doc["summary"]["actual"] == {"npu": 5, "cpu": 0, "split": 0, "folded": 1, "fused": 1}


def test_late_fused_op_named_after_its_conv() -> None:
    doc = _replay("residual_block")
    assert [(r["op_type"], r["full_name"], r["sources"]) for r in doc["ops"] if not r["io"]] == [
        ("ConvRelu", "conv_a", ["conv_a", "relu_a"]),
        ("ConvRelu", "conv_b", ["conv_b", "relu_b"]),
        ("ConvAddRelu", "conv_c_ConvAddRelu", ["conv_c", "add", "relu_out"]),
    ]
    assert _actuals(doc)["add"] == ("npu", "fused", "ConvAddRelu")


def test_fused_node_prefers_the_op_named_after_it() -> None:
    from npu_gate.probe.base import CompilerOutput
    from npu_gate.probe.mapping import map_nodes
    from npu_gate.result.probe import OpRow

    # a residual Add with no row between a Transpose and a Conv the compiler calls ConvAdd
    out = CompilerOutput(
        rows=[OpRow(0, "Transpose", "npu", "tp"), OpRow(1, "ConvAdd", "npu", "conv_ConvAdd")],
        final_graph={"tp": [], "conv": [], "add": ["tp", "conv"]},
        final_consumers={"tp": ["add"], "conv": ["add"], "add": []},
        final_ops={"tp": "Transpose", "conv": "Conv", "add": "Add"},
    )
    nodes, segs = map_nodes([("tp", "Transpose"), ("conv", "Conv"), ("add", "Add")], {}, out)
    assert [(n.name, n.actual, n.became, n.rows) for n in nodes] == [
        ("tp", "npu", None, [0]), ("conv", "npu", "ConvAdd", [1]), ("add", "fused", "ConvAdd", [1])]
    assert [s.nodes for s in segs] == [["tp", "conv", "add"]]


def test_renamed_swap_keeps_origins_and_adapters_have_none() -> None:
    doc = _replay("matmul_rank2")
    assert _actuals(doc) == {"mm": ("cpu", "npu", "Transpose+ConvRelu"), "relu": ("cpu", "fused", "ConvRelu")}
    rows = [(r["op_type"], r["target"], r["full_name"], r["sources"]) for r in doc["ops"] if not r["io"]]
    assert rows == [
        ("Reshape", "npu", "x_rs", []),
        ("Transpose", "npu", "x_tp", ["mm"]),
        ("ConvRelu", "npu", "mm#2", ["mm", "relu"]),
        ("Transpose", "npu", "m_mm_tp", ["mm"]),  # swap_transpose_relu re-added it: still only mm's
        ("Reshape", "npu", "y-rs", []),
    ]
    assert doc["summary"]["compiler_added_ops"] == 2


# --- predicted vs actual rank adapters (profile rank_adapters; rknn-rk3588-fused has the rule) ---

def _adapters(doc: dict[str, Any]) -> tuple[Any, ...]:
    s = doc["summary"]
    a = s["adapters"]
    return ([(p["tensor"], p["side"], p["device"]) for p in a["predicted"]] if a["predicted"] is not None else None,
            [(r["row"], r["op_type"], r["tensor"], r["side"], r["device"]) for r in a["actual"]], a["agree"],
            (s["predicted_npu_partitions"], s["predicted_cpu_partitions"]),
            (s["predicted_npu_partitions_with_adapters"], s["predicted_cpu_partitions_with_adapters"]),
            (s["npu_segments"], s["cpu_segments"]), s["compiler_added_ops"])


@pytest.mark.parametrize(("name", "expected"), [
    # CPU adapters at both ends (last dims 12 and 10): the plain 1/0 partitions became 1/2 with them,
    # as the compiler's segments. The output Reshape comes from mm2's lowering (sources ["mm2"]), so
    # compiler_added_ops counts only the input one; at the graph edge both are adapters.
    ("rank2_odd_dims", ([("x", "input", "cpu"), ("y", "output", "cpu")],
                        [(1, "Reshape", "x", "input", "cpu"), (6, "Reshape", "y", "output", "cpu")], True,
                        (1, 0), (1, 2), (1, 2), 1)),
    ("matmul_rank2", ([("x", "input", "npu"), ("y", "output", "npu")],
                      [(1, "Reshape", "x", "input", "npu"), (5, "Reshape", "y", "output", "npu")], True,
                      (1, 0), (1, 0), (1, 0), 2)),
    ("gelu_head", ([("y", "output", "npu")], [(5, "Reshape", "y", "output", "npu")], True,
                   (1, 0), (1, 0), (1, 0), 1)),
    # 4-D in and out: no adapter predicted, none added
    ("erf_between", ([], [], True, (2, 1), (2, 1), (2, 1), 0)),
    # 3-D LayerNormalization the compiler ran on CPU alone: the rule predicts NPU adapters, the
    # compiler added none (the whole graph is one CPU op)
    ("layernorm_no_epsilon", ([("x", "input", "npu"), ("y", "output", "npu")], [], False,
                              (1, 0), (1, 0), (0, 1), 0)),
])
def test_predicted_adapters_against_the_compiler_added_ones(name: str, expected: tuple[Any, ...]) -> None:
    doc = _replay(name, "rknn-rk3588-fused")
    _validate(doc)
    assert _adapters(doc) == expected


@pytest.mark.parametrize("profile", ["rknn-rk3588", "demo"])
def test_profile_without_an_adapter_rule_is_not_compared(profile: str) -> None:
    doc = _replay("rank2_odd_dims", profile)
    _validate(doc)
    plain = {"rknn-rk3588": (1, 0), "demo": (0, 1)}[profile]
    assert _adapters(doc) == (None, [(1, "Reshape", "x", "input", "cpu"), (6, "Reshape", "y", "output", "cpu")],
                              None, plain, (None, None), (1, 2), 1)


def test_adapter_lines_in_the_probe_reports() -> None:
    from npu_gate.render.probe import text

    folder = FIXTURES / "rank2_odd_dims"
    fused = replay(folder / "model.onnx", RknnCompiler(), "rk3588", folder / "work", load_profile("rknn-rk3588-fused"))
    lines = text(fused).splitlines()
    assert lines[3:5] == [
        "  segments vs predicted partitions with the rank adapters: 1 npu / 2 cpu vs 1 npu / 2 cpu (match)",
        "  rank adapters: predicted x (input, cpu), y (output, cpu); compiler added Reshape x (input, cpu), "
        "Reshape y (output, cpu): agree",
    ]
    md_text = markdown(fused)
    assert "| NPU / CPU partitions with the predicted rank adapters | 1 / 2 " in md_text
    assert "\n\nRank adapters: predicted x (input, cpu), y (output, cpu); compiler added Reshape x (input, cpu), " \
           "Reshape y (output, cpu): agree.\n\n" in md_text
    demo = replay(folder / "model.onnx", RknnCompiler(), "rk3588", folder / "work", load_profile("demo"))
    assert text(demo).splitlines()[3:5] == [
        "  segments vs predicted partitions of the model's nodes (the profile has no rank_adapters rule): "
        "1 npu / 2 cpu vs 0 npu / 1 cpu (differ)",
        "  rank adapters: no rank_adapters rule in the profile; compiler added Reshape x (input, cpu), "
        "Reshape y (output, cpu): not compared",
    ]


def test_edge_ops_need_the_last_graph_and_skip_original_nodes() -> None:
    from npu_gate.probe.base import CompilerOutput
    from npu_gate.probe.mapping import edge_ops, map_nodes
    from npu_gate.result.probe import OpRow

    rows = [OpRow(0, "InputOperator", "cpu", "x", io=True), OpRow(1, "Reshape", "cpu", "x_rs", None, "(2,12)",
                                                                  "(1,2,1,12)"),
            OpRow(2, "Relu", "npu", "relu", None, "(1,2,1,12)", "(1,2,1,12)"),
            OpRow(3, "Reshape", "npu", "flat", None, "(1,2,1,12)", "(2,12)"),
            OpRow(4, "OutputOperator", "cpu", "y", io=True)]
    originals = [("relu", "Relu"), ("flat", "Reshape")]
    out = CompilerOutput(rows=rows, final_ops={"x_rs": "Reshape", "relu": "Relu", "flat": "Reshape"},
                         final_io={"x_rs": [("input", "x")], "flat": [("output", "y")]})
    map_nodes(originals, {}, out)
    # flat is the model's own Reshape at the output: not an adapter
    assert edge_ops(originals, out) == [{"row": 1, "op_type": "Reshape", "device": "cpu", "side": "input",
                                         "tensor": "x"}]
    out.final_io = None
    assert edge_ops(originals, out) is None


def test_a_node_that_ends_up_in_a_rank_adapter_disagrees_by_rank_adaptation() -> None:
    summary = _replay("rank2_odd_dims")["summary"]
    assert [(d["node"], d["runs_on"], d["cause"]) for d in summary["disagreements"]] == [
        ("mm1", "npu", "fusion/lowering"), ("relu", "npu", "fusion/lowering"), ("mm2", "split", "rank adaptation")]
    assert summary["disagreements_by_cause"] == {"fusion/lowering": 2, "rank adaptation": 1}


def test_one_node_split_over_both_devices() -> None:
    doc = _replay("convtranspose_stride3")
    node = doc["nodes"][0]
    assert (node["actual"], node["runs_on"], node["became"], node["rows"]) == (
        "split", "split", "exConvTransposePad+Conv", [1, 2])
    assert [(s["device"], s["ops"], s["nodes"]) for s in doc["segments"]] == [
        ("cpu", ["exConvTransposePad"], ["deconv"]), ("npu", ["Conv"], ["deconv"])]
    assert node["agrees"] is False


def test_crash_is_a_compiler_failed_verdict() -> None:
    doc = _replay("resize_cubic")
    assert doc["status"] == "crashed" and doc["verdict"] == "fail"
    assert doc["error"] == "the compiler process was killed by SIGSEGV (stage: build)"
    assert doc["attempts"][0]["returncode"] == -11
    assert doc["findings"] == [{"rule": "compiler-failed", "severity": "error", "message":
                                "rknn-toolkit2 2.5.0 (rk3588) crashed: the compiler process was killed by SIGSEGV "
                                "(stage: build)"}]
    assert [n["actual"] for n in doc["nodes"]] == [None, None]
    assert doc["segments"] == []
    summary = doc["summary"]
    assert (summary["compared"], summary["agree"], summary["agreement_rate"]) == (2, 0, 0.0)
    assert summary["disagreements_by_cause"] == {"compiler failure": 2}
    assert [(d["node"], d["predicted"], d["actual"]) for d in summary["disagreements"]] == [
        ("conv1", "npu", None), ("resize", "cpu", None)]
    # the prediction does not depend on the compiler: its partition counts stand (they were None)
    assert (summary["predicted_npu_partitions"], summary["predicted_cpu_partitions"]) == (1, 1)


def test_a_crashed_probe_reports_the_predicted_partitions_in_numbers() -> None:
    folder = FIXTURES / "resize_cubic"
    result = replay(folder / "model.onnx", RknnCompiler(), "rk3588", folder / "work", load_profile("demo"))
    assert "  vs profile demo: 0/2 nodes agree (0%); predicted 1 npu / 1 cpu partitions\n" in text(result)
    assert "| NPU / CPU partitions (profile demo)       | 1 / 1 " in markdown(result)
    # nothing was built: no "0 npu / 0 cpu segments ... (differ)" comparison
    no_segments = ("no segments to compare: the compiler built nothing (predicted partitions of the model's "
                   "nodes (the profile has no rank_adapters rule): 1 npu / 1 cpu)")
    assert f"  {no_segments}\n" in text(result)
    assert "differ" not in text(result) + markdown(result)
    assert "  2 nodes: 0 npu, 0 cpu" in text(result)


def test_refused_model_and_the_retry_with_a_rule_disabled() -> None:
    refused = _replay("opset20")
    assert refused["status"] == "failed"
    assert refused["error"] == "load: ValueError: Unsupport onnx opset 20, need <= 19!"
    retried = _replay("layernorm_no_epsilon")
    assert retried["status"] == "ok"
    assert [(a["options"], a["status"], a["error"]) for a in retried["attempts"]] == [
        ({}, "failed", "build: KeyError: 'LayerNormalization'"),
        ({"disable_rules": ["convert_layernorm_to_exnorm"]}, "ok", None),
    ]
    headers = [line for line in retried["log"] if line.startswith("=== npu-gate probe: attempt")]
    assert headers == ["=== npu-gate probe: attempt 1 (default options): failed ===",
                       "=== npu-gate probe: attempt 2 (disable_rules=['convert_layernorm_to_exnorm']): ok ==="]
    assert retried["findings"][0]["severity"] == "warning"
    assert retried["findings"][0]["message"] == (
        "built only with disable_rules=['convert_layernorm_to_exnorm']; the default build failed: "
        "build: KeyError: 'LayerNormalization'")


# --- the plug-in machinery on the fake compiler: real child processes ---

def _fake_probe(save_model: Callable[..., Any], model: onnx.ModelProto, tmp_path: Path,
                **options: Any) -> dict[str, Any]:
    path = save_model(model)
    result = probe(path, FAKE, "fake1", FAKE.python(tmp_path), profile=load_profile("demo"),
                   options=options, keep=tmp_path / "work", timeout=options.pop("timeout", None))
    return result.to_dict()


def test_fake_compiler_fusion_and_segments_through_the_cli(run_cli: RunCli, save_model: SaveModel,
                                                           tmp_path: Path) -> None:
    path = save_model(model_zoo.conv_relu())
    out = tmp_path / "probe.json"
    run = run_cli("probe", path, "--compiler", "fake", "--target", "fake1", "--json", out,
                  "--markdown", tmp_path / "probe.md")
    assert run.code == 0, run.err
    assert run.out.splitlines()[0] == "npu-gate probe: model.onnx: fake-compiler 0.1 fake1: OK"
    doc = json.loads(out.read_text())
    _validate(doc)
    assert _actuals(doc) == {"conv0": ("npu", "npu", "ConvRelu"), "relu0": ("cpu", "fused", "ConvRelu")}
    assert doc["compiler"] == {"name": "fake-compiler", "version": "0.1", "target": "fake1", "plugin": "fake"}
    assert doc["segments"] == [{"index": 0, "device": "npu", "rows": [0], "ops": ["ConvRelu"],
                                "nodes": ["conv0", "relu0"]}]
    assert "| <code>relu0</code> | Relu" in (tmp_path / "probe.md").read_text()


def test_fake_child_runs_in_its_work_folder_with_our_pythonpath_removed(save_model: SaveModel, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/nowhere")
    _fake_probe(save_model, probe_models.erf_between(), tmp_path)
    attempt = tmp_path / "work" / "attempt-1"
    response = json.loads((attempt / "response.json").read_text())
    assert response["tmpdir"] == str(attempt / "tmp")
    assert response["cwd"] == str(attempt)
    assert response["pythonpath"] is None
    log = (attempt / "compiler.log").read_text()
    assert "ROW 1 Erf CPU erf" in log  # written to fd 1 by os.write, below Python's buffers


def test_fake_erf_between_gives_two_npu_segments(save_model: SaveModel, tmp_path: Path) -> None:
    doc = _fake_probe(save_model, probe_models.erf_between(), tmp_path)
    assert [s["device"] for s in doc["segments"]] == ["npu", "cpu", "npu"]
    assert doc["summary"]["npu_segments"] == 2


def test_fake_crash_is_isolated(save_model: SaveModel, tmp_path: Path) -> None:
    doc = _fake_probe(save_model, model_zoo.conv_relu(), tmp_path, crash=True)
    assert doc["status"] == "crashed"
    assert doc["error"] == "the compiler process was killed by SIGSEGV (stage: build)"
    assert doc["log"][-1] == "fatal: about to crash"
    assert doc["findings"][0]["rule"] == "compiler-failed"


def test_fake_hang_is_killed_at_the_timeout(save_model: SaveModel, tmp_path: Path) -> None:
    doc = _fake_probe(save_model, model_zoo.conv_relu(), tmp_path, hang=True, timeout=1.0)
    _validate(doc)
    assert doc["status"] == "crashed"
    assert doc["error"] == "timed out after 1 s (stage: load)"
    assert doc["attempts"][0]["returncode"] is None


def test_fake_failure_and_retry(save_model: SaveModel, tmp_path: Path) -> None:
    failed = _fake_probe(save_model, model_zoo.conv_relu(), tmp_path, fail="unsupported thing")
    assert (failed["status"], failed["error"]) == ("failed", "build: unsupported thing")
    retried = _fake_probe(save_model, model_zoo.conv_relu(), tmp_path, fail_rule="fuse_x")
    assert retried["status"] == "ok"
    assert [a["options"] for a in retried["attempts"]] == [{"fail_rule": "fuse_x"},
                                                           {"fail_rule": "fuse_x", "disable_rules": ["fuse_x"]}]


def test_a_kept_work_folder_holds_only_the_last_probes_attempts(save_model: SaveModel, tmp_path: Path) -> None:
    """A second probe into the same --keep-work folder used to leave the first probe's attempt-2
    beside its own attempt-1, and a replay of the folder then read that stale attempt as the last."""
    _fake_probe(save_model, model_zoo.conv_relu(), tmp_path, fail_rule="fuse_x")
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["attempt-1", "attempt-2"]
    failed = _fake_probe(save_model, model_zoo.conv_relu(), tmp_path, fail="unsupported thing")
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["attempt-1"]
    replayed = replay(tmp_path / "model.onnx", FAKE, "fake1", tmp_path / "work", load_profile("demo")).to_dict()
    assert (failed["status"], replayed["status"], len(replayed["attempts"])) == ("failed", "failed", 1)


def test_cli_exit_1_for_compiler_failed(run_cli: RunCli, save_model: SaveModel,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    original = FakeCompiler.request
    monkeypatch.setattr(FakeCompiler, "request", lambda self, *a: {**original(self, *a), "crash": True})
    run = run_cli("probe", save_model(model_zoo.conv_relu()), "--compiler", "fake", "--target", "fake1")
    assert run.code == 1
    assert "error compiler-failed: the compiler process was killed by SIGSEGV" in run.out


@pytest.mark.parametrize(("args", "message"), [
    # the test stand-in is not offered
    (["--compiler", "nope"], "--compiler nope: unknown compiler (known: ethos-u, qnn, rknn)"),
    (["--inputs", "x:1,0,3"], "--inputs x:1,0,3: expected NAME:DIMS with positive dims"),
    (["--compiler", "fake", "--target", "rk1"],
     "--target rk1: fake-compiler refused the configuration: config: unknown target rk1"),
    (["--compiler", "rknn", "--venv", "/nonexistent/venv"],
     "/nonexistent/venv/bin/python: no rknn-toolkit2 environment there; create one with "
     "`npu-gate probe setup rknn VENV` and pass --venv VENV"),
])
def test_cli_exit_2_when_the_probe_cannot_run(run_cli: RunCli, save_model: SaveModel, args: list[str],
                                              message: str) -> None:
    run = run_cli("probe", save_model(model_zoo.conv_relu()), *args)
    assert run.code == 2
    assert run.err.startswith(f"npu-gate: error: {message}")


def test_cli_exit_2_for_inputs_the_model_does_not_fix(run_cli: RunCli, save_model: SaveModel) -> None:
    model = probe_models.erf_between()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    path = save_model(model)
    run = run_cli("probe", path, "--compiler", "fake", "--target", "fake1", "--inputs", "y:1,8,16,16")
    assert run.code == 2
    assert run.err.splitlines() == [
        "npu-gate: error: --inputs y: model.onnx has no input y (inputs: x)",
        "npu-gate: error: model.onnx: input x has dynamic shape [?, 8, 16, 16]: give a static one with "
        "--inputs x:DIMS",
    ]
    fixed = run_cli("probe", path, "--compiler", "fake", "--target", "fake1", "--inputs", "x:1x8x16x16")
    assert fixed.code == 0, fixed.err


def test_the_prediction_uses_the_shapes_given_to_the_compiler(run_cli: RunCli, save_model: SaveModel,
                                                              tmp_path: Path) -> None:
    """The prediction used to analyse the model with its own dynamic batch while the compiler
    built it with --inputs: a constraint on that dim failed (unknown), both Convs were predicted
    on CPU and disagreed with the build (1/3 nodes, 0 npu / 1 cpu partitions)."""
    model = probe_models.erf_between()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    path = save_model(model)
    profile = tmp_path / "batch1.json"
    profile.write_text(json.dumps({
        "name": "batch1", "description": "d", "source": "s", "evidence": "illustrative",
        "ops": {"Conv": {"constraints": [{"id": "conv-batch-1", "input": 0, "dim": {"axis": 0, "max": 1}}]}}}))
    run = run_cli("probe", path, "--compiler", "fake", "--target", "fake1", "--inputs", "x:1,8,16,16",
                  "--profile", profile, "--json", tmp_path / "p.json", "--keep-work", tmp_path / "work")
    assert run.code == 0, run.err
    doc = json.loads((tmp_path / "p.json").read_text())
    replayed = replay(path, FAKE, "fake1", tmp_path / "work", load_profile(str(profile))).to_dict()
    for d in (doc, replayed):  # a replay reads the shapes from the kept request
        assert [(n["name"], n["predicted"], n["actual"]) for n in d["nodes"]] == [
            ("conv1", "npu", "npu"), ("erf", "cpu", "cpu"), ("conv2", "npu", "npu")]
        assert (d["summary"]["agree"], d["summary"]["predicted_npu_partitions"],
                d["summary"]["predicted_cpu_partitions"]) == (3, 2, 1)


def test_cli_exit_2_for_a_missing_model(run_cli: RunCli, tmp_path: Path) -> None:
    run = run_cli("probe", tmp_path / "absent.onnx", "--compiler", "fake")
    assert run.code == 2 and "absent.onnx: no such model file" in run.err


def test_setup_creates_then_reuses_a_venv(run_cli: RunCli, tmp_path: Path) -> None:
    venv = tmp_path / "venv-fake"
    first = run_cli("probe", "setup", "fake", venv)
    assert first.code == 0, first.err
    assert "created in" in first.out
    manifest = json.loads((venv / "npu-gate-probe.json").read_text())
    assert (manifest["compiler"], manifest["steps"], manifest["torch"]) == ("fake", [], "none")
    second = run_cli("probe", "setup", "fake", venv)
    assert second.code == 0 and second.out.rstrip().endswith("reused")


def test_setup_refuses_a_folder_that_is_not_its_venv(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    run = run_cli("probe", "setup", "fake", tmp_path)
    assert run.code == 2
    assert "exists and is not an npu-gate probe venv" in run.err
    assert (tmp_path / "precious.txt").exists()


def test_rknn_setup_refuses_a_python_its_pins_have_no_wheels_for(run_cli: RunCli, tmp_path: Path) -> None:
    """npu-gate runs on 3.10 to 3.13; the rknn venv only works on 3.11:
    one line naming --python, before any venv is made (not pip's wall of Requires-Python)."""
    fake_python = tmp_path / "python3.10"
    fake_python.write_text("#!/bin/sh\necho 3.10\n")
    fake_python.chmod(0o755)
    venv = tmp_path / "venv-rknn"
    run = run_cli("probe", "setup", "rknn", venv, "--python", fake_python)
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: {fake_python} is Python 3.10; the rknn venv needs Python 3.11: "
                       "pass --python python3.11\n")
    assert not venv.exists()


def test_rknn_setup_steps_are_the_documented_pins() -> None:
    rknn = get_compiler("rknn")
    assert rknn.setup_steps(torch=False) == [
        ["--no-deps", "rknn-toolkit2==2.5.0"],
        ["numpy==1.26.4", "onnx==1.18.0", "protobuf==4.25.4", "onnxruntime==1.26.0",
         "opencv-python-headless==4.11.0.86", "scipy==1.13.1", "psutil", "ruamel.yaml", "tqdm", "fast-histogram"],
    ]
    assert rknn.setup_steps(torch=True)[-1] == ["torch==2.13.0", "setuptools==80.9.0"]
    assert rknn.stub_torch(torch=False) and not rknn.stub_torch(torch=True)


def test_markdown_escapes_node_names(save_model: SaveModel, tmp_path: Path) -> None:
    model = model_zoo.conv_relu()
    model.graph.node[1].name = "<img src=x>@team"
    path = save_model(model)
    result = probe(path, FAKE, "fake1", FAKE.python(tmp_path), profile=load_profile("demo"))
    text = markdown(result)
    assert "<img" not in text and "@team" not in text
    assert "&#60;img src=x&#62;&#64;team" in text


def test_child_run_signal() -> None:
    assert ChildRun(returncode=-11, log=[], response={}, seconds=0).signal == 11
    assert ChildRun(returncode=1, log=[], response={}, seconds=0).signal is None


def test_replay_needs_attempts(tmp_path: Path) -> None:
    with pytest.raises(GateError, match="no attempt-N folders"):
        replay(FIXTURES / "opset20" / "model.onnx", RknnCompiler(), "rk3588", tmp_path)


def test_lineage_rules() -> None:
    from npu_gate.probe.base import CompilerOutput
    from npu_gate.probe.mapping import lineage
    from npu_gate.result.probe import Rewrite

    out = CompilerOutput(rewrites=[
        Rewrite("absorb", ["a", "b"], ["a"]),  # a keeps its name and absorbs b
        Rewrite("lower", ["c"], ["c1", "c2"]),
        Rewrite("drop", ["d"], []),
        Rewrite("adapter", [], ["r"]),
    ])
    alive, via = lineage(["a", "b", "c", "d"], out)
    assert alive == {"a": {"a", "b"}, "c1": {"c"}, "c2": {"c"}, "r": set()}
    assert via == {"a": ["absorb"], "b": ["absorb"], "c": ["lower"], "d": ["drop"]}


def test_markdown_and_text_reports_golden(golden: Golden) -> None:
    from npu_gate.render.probe import text

    folder = FIXTURES / "gelu_head"
    result = replay(folder / "model.onnx", RknnCompiler(), "rk3588", folder / "work", load_profile("demo"))
    golden("probe-gelu_head.md", markdown(result))
    golden("probe-gelu_head.txt", text(result))


def test_torch_stub_satisfies_imports_and_refuses_real_use(tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    from npu_gate.probe.setup_env import STUB

    (tmp_path / "torch").mkdir()
    shutil.copyfile(STUB, tmp_path / "torch" / "__init__.py")
    script = (
        "import torch, torch.nn.functional as F\n"
        "from torch.utils.data import Dataset\n"
        "class Net(torch.nn.Module): pass\n"
        "@torch.no_grad()\n"
        "def f(): return 7\n"
        "assert f() == 7 and torch.__version__.endswith('npu-gate-stub')\n"
        "try:\n    torch.arange(3)\nexcept RuntimeError as e:\n    print(e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30,
                          env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("npu-gate torch stub: torch.arange was called; recreate the venv with "
                                   "`npu-gate probe setup ... --torch`")


def test_probe_schema_checks_the_adapter_comparison() -> None:
    from jsonschema import Draft202012Validator

    doc = _replay("rank2_odd_dims", "rknn-rk3588-fused")
    doc["summary"]["adapters"]["actual"][0]["side"] = "edge"
    del doc["summary"]["adapters"]["agree"]
    doc["summary"]["predicted_cpu_partitions_with_adapters"] = "2"
    errors = sorted(e.message for e in Draft202012Validator(load_schema("probe")).iter_errors(doc))
    assert errors == ["'2' is not of type 'integer', 'null'", "'agree' is a required property",
                      "'edge' is not one of ['input', 'output']"]


def test_a_timeout_under_a_second_is_printed_as_it_was() -> None:
    """`--timeout 0.3` used to say `timed out after 0 s`."""
    from npu_gate.probe.base import CompilerOutput
    from npu_gate.probe.runner import status_of

    def timed_out(seconds: float) -> tuple[str, str | None]:
        return status_of(ChildRun(returncode=None, log=[], response={"stage": "import"}, seconds=seconds,
                                  timed_out=True), CompilerOutput())

    assert timed_out(0.31) == ("crashed", "timed out after 0.3 s (stage: import)")
    assert timed_out(600.04) == ("crashed", "timed out after 600 s (stage: import)")
    # the limit it was killed at, not the time the kill took on a busy machine (was "2.9 s" for 2)
    late = ChildRun(returncode=None, log=[], response={"stage": "load"}, seconds=2.9, timed_out=True, timeout=2)
    assert status_of(late, CompilerOutput()) == ("crashed", "timed out after 2 s (stage: load)")


def test_a_compiler_that_stops_before_saying_its_version_gets_the_venvs(save_model: SaveModel, tmp_path: Path) -> None:
    """It showed as `rknn-toolkit2 ? rk3588`: the version is read from the venv's .dist-info instead."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)  # a Python without the toolkit: the import fails
    (venv / "lib" / "python3.11" / "site-packages" / "rknn_toolkit2-2.5.0.dist-info").mkdir(parents=True)
    compiler = RknnCompiler()
    assert compiler.installed_version(venv) == "2.5.0"
    result = probe(save_model(model_zoo.conv_relu()), compiler, "rk3588", compiler.python(venv),
                   profile=load_profile("demo"))
    assert (result.status, result.error) == ("failed", "import: No module named 'rknn'")
    assert result.compiler["version"] == "2.5.0"
    assert text(result).splitlines()[0] == "npu-gate probe: model.onnx: rknn-toolkit2 2.5.0 rk3588: FAILED"


def _two_input_model(ir_version: int = 8) -> onnx.ModelProto:
    """x [N, 4] (dynamic batch) and a recurrent state h [1, 4] (static): y = x + h."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "h"], ["y"], name="add")], "state",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=ir_version)


@pytest.mark.parametrize("with_prediction", [True, False])
def test_given_inputs_are_completed_with_the_static_ones(save_model: SaveModel, tmp_path: Path,
                                                         with_prediction: bool) -> None:
    """Issue 20: a compiler told only some inputs ignores the others (RKNN: no value info for 'h');
    every model input is passed, the static ones with the model's own shape."""
    path = save_model(_two_input_model())
    probe(path, FAKE, "fake1", FAKE.python(tmp_path), profile=load_profile("demo") if with_prediction else None,
          inputs={"x": [2, 4]}, keep=tmp_path / "work")
    request = json.loads((tmp_path / "work" / "attempt-1" / "request.json").read_text(encoding="utf-8"))
    assert request["inputs"] == [{"name": "x", "shape": [2, 4]}, {"name": "h", "shape": [1, 4]}]


def test_no_given_inputs_leaves_the_compiler_the_model_s_own(save_model: SaveModel, tmp_path: Path) -> None:
    path = save_model(_two_input_model())
    probe(path, FAKE, "fake1", FAKE.python(tmp_path), inputs=None, keep=tmp_path / "work")
    request = json.loads((tmp_path / "work" / "attempt-1" / "request.json").read_text(encoding="utf-8"))
    assert request["inputs"] == []


def test_a_multi_line_compiler_error_is_kept_whole(save_model: SaveModel, tmp_path: Path) -> None:
    """Issue 20: the error was cut to its last fragment ("build: is not output of any previous nodes.")."""
    wrapped = ("Traceback (most recent call last):\n  File \"rknn/api/build.py\", line 9, in build\n"
               "    self._fold(graph)\nRuntimeError: Node (If_3) input 'h'\n  is not output of any previous nodes.")
    doc = _fake_probe(save_model, model_zoo.conv_relu(), tmp_path, **{"raise": wrapped})
    assert doc["status"] == "failed"
    assert doc["attempts"][0]["error"] == (
        "build: RuntimeError: Node (If_3) input 'h' is not output of any previous nodes.")


def test_a_compiler_error_drops_python_s_position_markers(save_model: SaveModel, tmp_path: Path) -> None:
    """Silero VAD's build failed inside onnxruntime with a 3.11 traceback: the ^^^ line under the
    frame's code came first in the error ("build: ^^^^ onnxruntime.capi...")."""
    wrapped = ("Traceback (most recent call last):\n  File \"rknn/api/build.py\", line 9, in build\n"
               "    sess = InferenceSession(model)\n           ^^^^^^^^^^^^^^^^^^^^^^^^\n"
               "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH :"
               " input 'c' of node: Gather is not output of any previous nodes.")
    doc = _fake_probe(save_model, model_zoo.conv_relu(), tmp_path, **{"raise": wrapped})
    assert doc["attempts"][0]["error"] == (
        "build: onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : "
        "input 'c' of node: Gather is not output of any previous nodes.")


# --- memory: the compiler's totals beside the static estimate (probe-1.2) ---

def test_probe_memory_totals_parsed_from_the_real_log() -> None:
    # the captured rknn-toolkit2 2.5.0 log of the lesson's net prints 25.5KB and 2.625KB;
    # its memory plan ends at 0x6600 = 26112 = 25.5 * 1024: KB is 1024 bytes
    assert parse_log(clean_log(_raw("seed_hardswish"))).memory == {"internal_bytes": 26112, "weight_bytes": 2688}
    assert parse_log(["D RKNN: [1] Total Weight Memory Size: 0KB"]).memory == {"weight_bytes": 0}
    assert parse_log(["I rknn building done."]).memory is None


def test_probe_memory_puts_the_estimate_beside_the_compiler() -> None:
    doc = _replay("seed_hardswish", "rknn-rk3588")
    _validate(doc)
    assert doc["schema_version"] == "probe-1.6"
    assert doc["memory"]["compiler"] == {"internal_bytes": 26112, "weight_bytes": 2688,
                                         "evidence": "measured: rknn-toolkit2 2.5.0 rk3588"}
    estimate = doc["memory"]["estimate"]
    # float16 in the RKNN layout: three live [1, 4, 16, 16] tensors at the peak, channels padded to
    # 16 (8192 bytes each); weights: [4, 3, 3, 3] with input channels to 8 (576), the bias and four
    # folded scalars float32 in 64-byte buffers (5 * 64), the partition's 2048-byte overhead
    assert (estimate["peak_activation_bytes"], estimate["weight_bytes"], estimate["runtime_dtype"]) == (
        3 * 8192, 576 + 5 * 64 + 2048, "float16")
    assert estimate["evidence"].startswith("estimated upper bound on tensor bytes in the profile's memory layout")
    assert text(replay(FIXTURES / "seed_hardswish" / "model.onnx", RknnCompiler(), "rk3588",
                       FIXTURES / "seed_hardswish" / "work", load_profile("rknn-rk3588"))).splitlines()[-2] == (
        "  memory: compiler: internal 26,112 bytes, weights 2,688 bytes; estimate (upper bound on the model's "
        "tensors): peak activations 24,576 bytes, weights 2,944 bytes")


def test_a_reshape_the_compiler_adds_after_a_concat_is_part_of_the_concat() -> None:
    """head_split_2100 (tests/helpers/cleanup_models.py, probed with real torch in the toolkit's venv): the
    toolkit adds `cat-rs` after the Concat (reduce_reshape_op_around_concat), adds `cat_rs` for the Split
    (unsqueeze_to_4d_split) and merges the first into the second (fuse_two_reshape); lineage reaches
    neither. Named after the Concat's output, the CPU `cat_rs` is the Concat's second piece: the Concat
    ran split, as `concat-of-flattened-levels-reshape-after` predicts. The Reshapes at the graph
    outputs (`boxes-rs`, `scores-rs`) stay the compiler's rank adapters."""
    folder = FIXTURES / "head_split_2100"
    doc = replay(folder / "model.onnx", RknnCompiler(), "rk3588", folder / "work",
                 load_profile("rknn-rk3588")).to_dict()
    _validate(doc)
    assert [(n["name"], n["predicted"], n["actual"], n["rows"]) for n in doc["nodes"]] == [
        ("relu", "npu", "npu", [1]), ("pool20", "npu", "npu", [2]), ("pool10", "npu", "npu", [3]),
        ("flat40", "npu", "npu", [4]), ("flat20", "npu", "fused", [6]), ("flat10", "cpu", "cpu", [5]),
        ("cat", "split", "split", [6, 7]), ("split", "npu", "npu", [8]), ("scores", "npu", "npu", [9])]
    assert doc["summary"]["agree"] == 9 and doc["summary"]["partitions_agree"] is True
    assert [(a["row"], a["device"], a["tensor"]) for a in doc["summary"]["adapters"]["actual"]] == [
        (10, "cpu", "boxes"), (12, "cpu", "scores")]
