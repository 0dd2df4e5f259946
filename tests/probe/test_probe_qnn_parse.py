"""The onnxruntime-qnn plug-in without the EP: its log and assignment parsing, replayed from
tests/fixtures/qnn/ (captured from onnxruntime-qnn 2.7.0 by tests/helpers/capture_qnn_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from npu_gate.pipeline import replay_model as replay
from npu_gate.probe import get_compiler
from npu_gate.probe.base import clean_log
from npu_gate.probe.qnn import QnnCompiler, assignment_rows, execution_order, model_facts, ort_fusions, parse_log
from npu_gate.profile.spec import load_profile
from npu_gate.resources import load_schema
from npu_gate.result.probe import OpRow, Rewrite
from tests.helpers import qnn_models
from tests.helpers.common import REPO, RunCli, SaveModel

FIXTURES = REPO / "tests" / "fixtures" / "qnn"


def _replay(name: str, profile: str = "demo") -> dict[str, Any]:
    folder = FIXTURES / name
    return replay(folder / "model.onnx", QnnCompiler(), "htp", folder / "work", load_profile(profile)).to_dict()


def _log(name: str) -> list[str]:
    return clean_log((FIXTURES / name / "work" / "attempt-1" / "compiler.log").read_text(encoding="utf-8"))


def _validate(doc: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator(load_schema("probe")).iter_errors(doc))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_every_model_has_a_fixture() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted(qnn_models.MODELS)


@pytest.mark.parametrize("name", sorted(qnn_models.MODELS))
def test_replay_reproduces_the_recorded_probe(name: str) -> None:
    recorded = json.loads((FIXTURES / name / "probe.json").read_text(encoding="utf-8"))
    replayed = _replay(name)
    _validate(replayed)
    for doc in (recorded, replayed):
        doc.pop("timings")
        for attempt in doc["attempts"]:
            attempt.pop("seconds")
    # fields added after the recording (Ethos-U's, probe-1.3): what the QNN plug-in never sets
    recorded.setdefault("estimates", None)
    # probe-1.4 (#21): the quantized build's record, null for these default builds
    assert recorded.pop("schema_version") in ("probe-1.3", "probe-1.4", "probe-1.5", "probe-1.6")
    assert replayed.pop("schema_version") == "probe-1.6"
    recorded.setdefault("quantization", None)
    for node in recorded["nodes"]:
        node.setdefault("unmapped", False)
    for doc in (recorded, replayed):  # #20's, maybe after the recording: tested in test_probe.py
        doc["summary"].pop("partitions_agree", None)
    assert replayed == recorded


def test_erf_between_two_htp_segments_around_a_cpu_erf_with_the_eps_reason() -> None:
    doc = _replay("erf_between")
    assert doc["status"] == "ok"
    assert doc["evidence"] == "measured: onnxruntime-qnn 2.7.0 (QNN 2.51) htp"
    assert doc["compiler"] == {"name": "onnxruntime-qnn", "version": "2.7.0", "target": "htp", "plugin": "qnn",
                               "backend": "QNN 2.51"}
    assert [(n["name"], n["actual"], n["reason"], n["agrees"]) for n in doc["nodes"]] == [
        ("conv1", "npu", None, True),
        ("erf", "cpu", "Operators of type `Erf` are not supported by QNN EP.", True),
        ("conv2", "npu", None, True),
    ]
    # the EP's layout transposes (NCHW -> NHWC) are ops from no original node, inside the HTP segments
    assert [(s["device"], s["ops"], s["nodes"]) for s in doc["segments"]] == [
        ("npu", ["Transpose", "Conv"], ["conv1"]), ("cpu", ["Erf"], ["erf"]), ("npu", ["Conv", "Transpose"], ["conv2"])]
    s = doc["summary"]
    assert (s["npu_segments"], s["cpu_segments"], s["compiler_added_ops"], s["agreement_rate"]) == (2, 1, 2, 1.0)


@pytest.mark.parametrize(("name", "node", "reason"), [
    ("einsum_unsupported", "einsum", "Einsum unsupported equation: bchw,bcHw->bhH"),
    ("det", "det", "Operators of type `Det` are not supported by QNN EP."),
])
def test_refused_nodes_carry_the_eps_reason(name: str, node: str, reason: str) -> None:
    nodes = {n["name"]: n for n in _replay(name)["nodes"]}
    assert (nodes[node]["actual"], nodes[node]["reason"]) == ("cpu", reason)
    assert all(n["reason"] is None for n in nodes.values() if n["actual"] == "npu")


def test_qdq_graph_input_quantize_on_cpu_is_an_io_adapter_not_a_disagreement() -> None:
    doc = _replay("qdq_erf_between")
    q = next(n for n in doc["nodes"] if n["name"] == "x_QuantizeLinear")
    assert (q["actual"], q["adapter"], q["agrees"]) == ("cpu", True, None)
    assert q["reason"] == "QNN EP is configured to not take Q nodes that consume a graph input."
    s = doc["summary"]
    # the output's DQ the layout pass re-created after its Transpose is the output's adapter
    assert [(a["op_type"], a["device"], a["side"], a["tensor"]) for a in s["adapters"]["actual"]] == [
        ("QuantizeLinear", "cpu", "input", "x"), ("DequantizeLinear", "cpu", "output", "y")]
    assert doc["ops"][s["adapters"]["actual"][1]["row"]]["full_name"] == "DequantizeLinear_token_21"
    assert "x_QuantizeLinear" not in {d["node"] for d in s["disagreements"]}
    assert s["compared"] == s["nodes"] - 1
    # the Erf's QDQ unit (its DequantizeLinear, the Erf, its QuantizeLinear) goes to CPU together
    unit = {n["name"]: (n["actual"], n["reason"]) for n in doc["nodes"]
            if n["name"] in ("c1_DequantizeLinear", "erf", "e_QuantizeLinear")}
    assert set(unit.values()) == {("cpu", "Operators of type `Erf` are not supported by QNN EP.")}


def test_unnamed_nodes_come_back_under_npu_gates_names() -> None:
    doc = _replay("unnamed_nodes")
    assert [(n["name"], n["actual"]) for n in doc["nodes"]] == [("Conv#0", "npu"), ("Relu#1", "npu"),
                                                               ("conv_b", "npu")]


def test_parse_log_keeps_the_last_reason_and_drops_the_eps_trailer() -> None:
    lines = [
        "2026 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] Validation FAILED for 2 nodes in "
        "OrtNodeUnit (Erf) :",
        "\tOperator type: DequantizeLinear Node name: /a/DQ Node index: 3",
        "\tOperator type: Erf Node name: /a/Erf_token_7 Node index: 4",
        "\tREASON : first pass",
        "2026 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] Validation PASSED for 1 nodes in "
        "OrtNodeUnit (Conv) :",
        "\tOperator type: Conv Node name: conv Node index: 0",
        "2026 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] Validation FAILED for 1 nodes in "
        "OrtNodeUnit (Erf) :",
        "\tOperator type: Erf Node name: /a/Erf Node index: 9",
        "\tREASON : Operators of type `Erf` are not supported by QNN EP.Erf node `/a/Erf` will not be assigned to "
        "QNN EP.",
    ]
    assert parse_log(lines).reasons == {"/a/DQ": "first pass",
                                        "/a/Erf": "Operators of type `Erf` are not supported by QNN EP."}
    assert parse_log(_log("erf_between")).reasons == {"erf": "Operators of type `Erf` are not supported by QNN EP."}


def test_assignment_rows_put_blocks_in_execution_order_and_map_tokens_back() -> None:
    """The session lists the QNN subgraphs first and the CPU nodes last."""
    subgraphs = [
        {"ep": "QNNExecutionProvider", "nodes": [{"name": "Transpose", "op_type": "Transpose"},
                                                 {"name": "a_token_1", "op_type": "Conv"}]},
        {"ep": "QNNExecutionProvider", "nodes": [{"name": "c_token_5", "op_type": "Conv"}]},
        {"ep": "CPUExecutionProvider", "nodes": [{"name": "b", "op_type": "Erf"}, {"name": "d", "op_type": "Det"}]},
    ]
    rows = assignment_rows(subgraphs, ["a", "b", "c", "d"])
    assert [(r.id, r.full_name, r.target) for r in rows] == [
        (0, "Transpose", "npu"), (1, "a", "npu"), (2, "b", "cpu"), (3, "c", "npu"), (4, "d", "cpu")]


def test_execution_order_puts_weight_only_nodes_before_their_reader() -> None:
    model = onnx.load(str(FIXTURES / "qdq_erf_between" / "model.onnx"))
    assert execution_order(model.graph) == [
        "x_QuantizeLinear", "x_DequantizeLinear", "conv1.b_DequantizeLinear", "conv1.w_DequantizeLinear", "conv1",
        "c1_QuantizeLinear", "c1_DequantizeLinear", "erf", "e_QuantizeLinear", "e_DequantizeLinear",
        "conv2.b_DequantizeLinear", "conv2.w_DequantizeLinear", "conv2", "y_QuantizeLinear", "y_DequantizeLinear"]
    # in the file, the four weight DequantizeLinear nodes come first
    assert [n.name for n in model.graph.node][:4] == ["conv1.b_DequantizeLinear", "conv1.w_DequantizeLinear",
                                                      "conv2.b_DequantizeLinear", "conv2.w_DequantizeLinear"]


def test_request_fp16_for_a_float_model_qdq_as_is_and_the_soc_model(tmp_path: Path) -> None:
    qnn = get_compiler("qnn")
    assert qnn.setup_steps(torch=False) == [["onnxruntime-qnn==2.7.0"]]
    assert qnn.pythons == ((3, 11), (3, 12), (3, 13)) and qnn.default_target == "htp"
    float_model, qdq_model = FIXTURES / "erf_between" / "model.onnx", FIXTURES / "qdq_erf_between" / "model.onnx"
    req = qnn.request(float_model, "htp", {}, {})
    assert (req["precision"], req["soc_model"], req["graph_io"]) == ("fp16", 57, {})
    req = qnn.request(qdq_model, "htp", {}, {"soc_model": 69})
    assert (req["precision"], req["soc_model"]) == ("qdq", 69)
    assert req["graph_io"] == {"x_QuantizeLinear": [["input", "x"]], "y_DequantizeLinear": [["output", "y"]]}
    assert model_facts(qdq_model)["quantized"] is True


def test_model_facts_name_unnamed_nodes_as_graph_facts_does(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["y"], name="n")],
                              "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), str(path))
    assert model_facts(path) == {"order": ["Relu#0", "n"], "unnamed": {"Relu#0": "Relu"},
                                 "readers": {"Relu#0": ["n"]}, "graph_io": {}, "quantized": False, "qdq": {}}


def test_onnxruntimes_own_fusion_stands_for_the_node_and_its_vanished_reader() -> None:
    """MatMulAddFusion (onnxruntime, before the EP) names its Gemm ``<MatMul>/MatMulAddFusion``."""
    rows = [OpRow(id=0, op_type="Gemm", target="npu", full_name="/qkv/MatMul/MatMulAddFusion"),
            OpRow(id=1, op_type="Relu", target="npu", full_name="/relu"),
            OpRow(id=2, op_type="Reshape", target="npu", full_name="gemm_input_reshape")]
    order = ["/qkv/MatMul", "/qkv/Add", "/relu"]
    readers = {"/qkv/MatMul": ["/qkv/Add"], "/qkv/Add": ["/relu"]}
    assert ort_fusions(rows, order, readers) == [
        Rewrite(rule="MatMulAddFusion", removed=["/qkv/MatMul", "/qkv/Add"], added=["/qkv/MatMul/MatMulAddFusion"])]


def test_qnn_setup_refuses_a_python_it_has_no_wheels_for(run_cli: RunCli, tmp_path: Path) -> None:
    fake_python = tmp_path / "python3.10"
    fake_python.write_text("#!/bin/sh\necho 3.10\n")
    fake_python.chmod(0o755)
    venv = tmp_path / "venv-qnn"
    run = run_cli("probe", "setup", "qnn", venv, "--python", fake_python)
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: {fake_python} is Python 3.10; the qnn venv needs Python 3.11 or 3.12 or "
                       "3.13: pass --python python3.13\n")
    assert not venv.exists()


def test_soc_model_is_for_qnn_only(run_cli: RunCli, save_model: SaveModel) -> None:
    model = save_model(qnn_models.det(), "det.onnx")
    run = run_cli("probe", model, "--compiler", "rknn", "--soc-model", "57")
    assert (run.code, run.err) == (2, "npu-gate: error: --soc-model: only the qnn compiler takes a SoC model "
                                      "(--compiler rknn)\n")


def test_quantize_flags_are_refused_where_they_mean_nothing(run_cli: RunCli, save_model: SaveModel,
                                                            tmp_path: Path) -> None:
    model = save_model(qnn_models.det(), "det.onnx")
    run = run_cli("probe", model, "--compiler", "rknn", "--quantize", "int16")
    assert (run.code, run.err) == (2, "npu-gate: error: --quantize int16: the rknn plug-in builds int8 or fp16 or "
                                      "none only\n")
    run = run_cli("probe", model, "--compiler", "qnn", "--calibration", tmp_path / "c.npz")
    assert (run.code, run.err) == (2, f"npu-gate: error: --calibration {tmp_path / 'c.npz'}: samples are for "
                                      "--quantize int8 or int16 (given: no --quantize)\n")


def test_cli_preparation_quantizes_with_the_requests_rows(tmp_path: Path) -> None:
    import numpy as np

    from npu_gate.probe.base import QuantRequest
    from npu_gate.stages.compiler import cli_preparation

    model = tmp_path / "m.onnx"
    onnx.save(qnn_models.MODELS["erf_between"](), str(model))
    rows = [{"x": r} for r in np.random.default_rng(0).uniform(size=(3, 1, 8, 16, 16)).astype(np.float32)]
    request = QuantRequest("int8", rows, [], calibration_synthetic=False)
    built, prep = cli_preparation("qnn", model, request, tmp_path / "work")
    assert built == tmp_path / "work" / "qnn-qdq.onnx" and built.is_file()
    assert (prep or {})["calibration"] == {"samples": 3, "synthetic": False}
    assert json.loads((tmp_path / "work" / "preparation.json").read_text(encoding="utf-8")) == prep
    assert cli_preparation("rknn", model, request, tmp_path / "w2") == (model, None)
    assert cli_preparation("qnn", model, None, tmp_path / "w3")[1] == {
        "method": "fp16", "reason": "a float model, quantization mode none: enable_htp_fp16_precision"}


def test_markdown_lists_the_compilers_reasons_escaped_and_marks_io_adapters() -> None:
    from npu_gate.render.probe import markdown

    folder = FIXTURES / "qdq_erf_between"
    result = replay(folder / "model.onnx", QnnCompiler(), "htp", folder / "work", load_profile("demo"))
    erf = next(n for n in result.nodes if n.name == "erf")
    erf.reason = "<b>not</b> | supported"
    page = markdown(result)
    assert "### Why the compiler left them on CPU" in page
    reasons = page[page.index("### Why the compiler left them on CPU"):].split("###")[1]
    erf_row = next(line for line in reasons.splitlines() if "<code>erf</code>" in line)
    assert erf_row.split("|")[3].strip() == "&#60;b&#62;not&#60;/b&#62; &#124; supported"
    table = page[page.index("### Predicted vs actual"):].split("###")[1]
    q_row = next(line for line in table.splitlines() if "x&#95;QuantizeLinear" in line)
    # predicted with its Conv (a QDQ unit, issue 21), kept on CPU by the EP as an I/O adapter: not compared
    assert [cell.strip() for cell in q_row.split("|")[3:7]] == ["npu", "cpu", "", "I/O adapter"]


QDQ_ERF_ACTUAL = [  # every node of the QDQ erf_between, as the EP placed it (int8 and as-is alike)
    ("conv1.b_DequantizeLinear", "folded", []), ("conv1.w_DequantizeLinear", "folded", []),
    ("conv2.b_DequantizeLinear", "folded", []), ("conv2.w_DequantizeLinear", "folded", []),
    ("x_QuantizeLinear", "cpu", []), ("x_DequantizeLinear", "npu", ["QnnLayoutTransform"]),
    ("conv1", "npu", []), ("c1_QuantizeLinear", "npu", []), ("c1_DequantizeLinear", "cpu", []), ("erf", "cpu", []),
    ("e_QuantizeLinear", "cpu", []), ("e_DequantizeLinear", "npu", ["QnnLayoutTransform"]), ("conv2", "npu", []),
    ("y_QuantizeLinear", "npu", []), ("y_DequantizeLinear", "npu", []),
]


@pytest.mark.parametrize("name", ["qdq_erf_between", "int8_erf_between"])
def test_qdq_nodes_map_completely_recreated_dqs_and_weight_dqs_included(name: str) -> None:
    doc = _replay(name, "qnn-htp")
    assert [(n["name"], n["actual"], n["via"]) for n in doc["nodes"]] == QDQ_ERF_ACTUAL
    # the layout pass's re-created DQs stand for the model's: the node reading each names its unit's new DQ
    renamed = {r["removed"][0]: r["added"] for r in doc["rewrites"] if r["rule"] == "QnnLayoutTransform"}
    assert renamed == {"x_DequantizeLinear": ["DequantizeLinear_token_19"],
                       "e_DequantizeLinear": ["DequantizeLinear_token_5"]}
    s = doc["summary"]
    assert (s["agree"], s["compared"], s["disagreements"]) == (14, 14, [])
    assert not any(n["unmapped"] for n in doc["nodes"])


def test_int8_preparation_is_recorded_and_the_qdq_model_is_kept() -> None:
    doc = _replay("int8_erf_between")
    prep = doc["preparation"]
    assert prep == {"method": "qnn-qdq", "mode": "int8", "activations": "uint8", "weights": "int8",
                    "per_channel": True, "calibration_method": "minmax", "preprocessed": False,
                    "evidence": "onnxruntime 1.32.0: qnn_preprocess_model, get_qnn_qdq_config, quantize (QDQ)",
                    "calibration": {"samples": 32, "synthetic": True}}
    qdq = onnx.load(str(FIXTURES / "int8_erf_between" / "work" / "qnn-qdq.onnx"))
    types = {n.name: n for n in qdq.graph.node}
    assert types["x_QuantizeLinear"].op_type == "QuantizeLinear"
    assert qdq.graph.initializer and doc["model"]["path"] == "qnn-qdq.onnx"
    from npu_gate.escape import md
    from npu_gate.render.probe import markdown, text

    folder = FIXTURES / "int8_erf_between"
    result = replay(folder / "model.onnx", QnnCompiler(), "htp", folder / "work", load_profile("demo"))
    line = ("prepared: qnn-qdq int8: activations uint8, weights int8 per channel, minmax on 32 synthetic samples "
            "(onnxruntime 1.32.0: qnn_preprocess_model, get_qnn_qdq_config, quantize (QDQ))")
    assert text(result).splitlines()[1] == f"  {line}"
    assert f"Prepared: {md(line[len('prepared: '):])}." in markdown(result)  # our words, escaped all the same
    assert _replay("erf_between")["preparation"]["method"] == "fp16"
    assert _replay("qdq_erf_between")["preparation"] == {
        "method": "as-is", "reason": "the model is quantized already (DequantizeLinear, QuantizeLinear)"}


def test_int16_preparation_quantizes_activations_to_uint16_and_the_htp_takes_them() -> None:
    doc = _replay("int16_erf_between", "qnn-htp")
    assert (doc["preparation"]["activations"], doc["preparation"]["weights"]) == ("uint16", "int16")
    qdq = onnx.load(str(FIXTURES / "int16_erf_between" / "work" / "qnn-qdq.onnx"))
    zero_points = {t.name: t.data_type for t in qdq.graph.initializer if t.name.endswith("_zero_point")}
    assert zero_points["x_zero_point"] == TensorProto.UINT16
    assert [(n["name"], n["actual"], n["via"]) for n in doc["nodes"]] == QDQ_ERF_ACTUAL


def test_recreated_dqs_not_one_for_one_are_unmapped_never_guessed() -> None:
    from npu_gate.probe.qnn import Unit, map_recreated_dq

    # an Add reading two DQs, both re-created: which new DQ is which input the log does not say
    units = [Unit("Add", True, [("DequantizeLinear", "DequantizeLinear_token_3"),
                                ("DequantizeLinear", "DequantizeLinear_token_4"),
                                ("Add", "add_token_5"), ("QuantizeLinear", "s_QuantizeLinear")])]
    rows = [OpRow(id=i, op_type=op, target="npu", full_name=name) for i, (op, name) in enumerate(units[0].nodes)]
    order = ["a_DequantizeLinear", "b_DequantizeLinear", "add", "s_QuantizeLinear"]
    qdq = {"weight_dq": [], "dq_inputs": {"add": ["a_DequantizeLinear", "b_DequantizeLinear"]}}
    mapped = map_recreated_dq(units, rows, order, qdq, {})
    assert (mapped.rewrites, mapped.unmapped) == ([], ["a_DequantizeLinear", "b_DequantizeLinear"])
    # one of them kept its name: the other is determined
    units[0].nodes[0] = ("DequantizeLinear", "a_DequantizeLinear")
    rows[0].full_name = "a_DequantizeLinear"
    mapped = map_recreated_dq(units, rows, order, qdq, {})
    assert (mapped.rewrites, mapped.unmapped) == (
        [Rewrite(rule="QnnLayoutTransform", removed=["b_DequantizeLinear"], added=["DequantizeLinear_token_4"])], [])


def test_parse_units_reads_the_last_capability_pass_only() -> None:
    from npu_gate.probe.qnn import parse_units

    units = parse_units(_log("qdq_erf_between"))
    assert [(u.op_type, u.passed, [name for _, name in u.nodes]) for u in units][:3] == [
        ("QuantizeLinear", False, ["x_QuantizeLinear"]),
        ("Transpose", True, ["DequantizeLinear", "Transpose_token_10", "QuantizeLinear_token_18"]),
        ("Conv", True, ["DequantizeLinear_token_19", "conv1.w_DequantizeLinear", "conv1.b_DequantizeLinear",
                        "conv1_token_1", "c1_QuantizeLinear"]),
    ]
    assert units[-1].reason == "QNN EP is configured to not take DQ nodes that generate a graph output."


def test_a_duplicated_dq_is_the_same_dq_not_a_fusion_with_its_readers() -> None:
    """onnxruntime's EnsureUniqueDQForNodeUnit copies a shared DQ per reader as ``<dq>/duplicated``;
    the copy stands for that DQ alone (a reader missing from the assignment is not its partner),
    and a copy of a weight's DQ in an HTP subgraph is folded like the weight's DQ."""
    order = ["w_DequantizeLinear", "id_a", "conv"]
    subgraphs = [{"ep": "QNNExecutionProvider", "nodes": [
        {"name": "w_DequantizeLinear/duplicated_token_5", "op_type": "DequantizeLinear"},
        {"name": "a_DequantizeLinear/duplicated", "op_type": "DequantizeLinear"},
        {"name": "conv", "op_type": "Conv"}]}]
    rows = assignment_rows(subgraphs, [*order, "a_DequantizeLinear"], {}, {"w_DequantizeLinear"})
    assert [r.full_name for r in rows] == ["a_DequantizeLinear/duplicated", "conv"]
    found = ort_fusions(rows, [*order, "a_DequantizeLinear"], {"a_DequantizeLinear": ["id_a", "conv"]})
    assert found == [Rewrite(rule="EnsureUniqueDQForNodeUnit", removed=["a_DequantizeLinear"],
                             added=["a_DequantizeLinear/duplicated"])]


def test_a_dq_of_an_identity_of_a_weight_is_a_weights_dq(tmp_path: Path) -> None:
    """The torchscript exporter writes an Identity of a shared weight: the DQ reading it reads a
    tensor computed from weights alone, a weight's DQ (folded in an HTP subgraph)."""
    import numpy as np
    from onnx import numpy_helper

    nodes = [helper.make_node("Identity", ["w"], ["w2"], name="id_w"),
             helper.make_node("DequantizeLinear", ["w2", "s", "z"], ["wd"], name="w_dq"),
             helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="x_dq"),
             helper.make_node("Mul", ["xd", "wd"], ["y"], name="mul")]
    inits = [numpy_helper.from_array(np.ones(4, np.uint8), "w"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint8), "z")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], initializer=inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert model_facts(path)["qdq"] == {"weight_dq": ["w_dq"], "dq_inputs": {"mul": ["x_dq"]}}


def test_standalone_per_channel_dqs_replayed_against_qnn_htp_qdq() -> None:
    """qdq_shared_bias: the EP's refused standalone per-channel DQs are on CPU with its reason, the
    per-tensor bias DQs alone in their units are QNN Dequantize ops (npu, not folded), the DQs the
    layout pass re-created for the unit-less Convs unmapped; qnn-htp-qdq agrees on every compared node."""
    doc = _replay("qdq_shared_bias", "qnn-htp-qdq")
    actual = {n["name"]: n["actual"] for n in doc["nodes"]}
    assert (actual["conv1.w_DequantizeLinear"], actual["conv2.w_DequantizeLinear"]) == ("cpu", "cpu")
    assert (actual["conv2.b_DequantizeLinear"], actual["shared.b_DequantizeLinear"]) == ("npu", "npu")
    assert [n["name"] for n in doc["nodes"] if n["unmapped"]] == ["x_DequantizeLinear", "r_DequantizeLinear"]
    reasons = {n["name"]: n["reason"] for n in doc["nodes"] if n["actual"] == "cpu" and not n["adapter"]}
    assert reasons == dict.fromkeys(["conv1.w_DequantizeLinear", "conv2.w_DequantizeLinear"],
                                    "QNN EP does not support a standalone DQ op with per-channel quantization")
    assert (doc["summary"]["agree"], doc["summary"]["compared"]) == (16, 16)
    assert [n["name"] for n in doc["nodes"] if n["agrees"] is False] == []
    assert (doc["summary"]["predicted_npu_partitions"], doc["summary"]["npu_segments"]) == (1, 1)
    assert doc["summary"]["partitions_agree"] is True
    # demo knows nothing of standalone DQs: it folds the weight DQs the EP ran or refused
    demo = _replay("qdq_shared_bias", "demo")
    assert {n["name"] for n in demo["nodes"] if n["agrees"] is False} >= {
        "conv1.w_DequantizeLinear", "conv2.w_DequantizeLinear", "conv2.b_DequantizeLinear"}
