"""Fusion-aware profiles: patterns as data, matched on hand-built and exported graphs, the
placement and partitions they change, and the probe agreement they improve (replayed from
the recorded RKNN-Toolkit2 runs in tests/fixtures/rknn/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from npu_gate.errors import ProfileError
from npu_gate.pipeline import inspect_model
from npu_gate.pipeline import replay_model as replay
from npu_gate.probe.rknn import RknnCompiler
from npu_gate.profile.spec import load_profile
from npu_gate.result.types import SCHEMA_VERSION, GateResult
from tests.helpers import probe_models
from tests.helpers.common import REPO, export_net, validate_result

FIXTURES = REPO / "tests" / "fixtures" / "rknn"
HEAD = {"name": "p", "description": "d", "source": "s", "evidence": "illustrative"}
HARDSWISH = {
    "name": "hardswish", "becomes": "HardSwish",
    "nodes": [
        {"op": "Add", "inputs": [{"tensor": "x"}, {"const": 3}]},
        {"op": "Clip", "inputs": [{"node": 0}, {"const": 0}, {"const": 6}]},
        {"op": "Mul", "inputs": [{"tensor": "x"}, {"node": 1}]},
        {"op": "Div", "inputs": [{"node": 2}, {"const": 6}]},
    ],
    "inputs": ["x"],
}
FUSED = "fused into HardSwish (hardswish)"


def _profile(tmp_path: Path, **doc: Any) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(HEAD | {"extends": "demo", "ops": {}} | doc), encoding="utf-8")
    return path


def _placed(result: GateResult) -> dict[str, tuple[str, list[str]]]:
    return {n.name: (n.placement, n.reasons) for n in result.nodes if n.placement != "folded"}


def _hardswish_net(path: Path, *, clip_max: float = 6.0, add_first: bool = True, mul_x_first: bool = True,
                   extra_reader: bool = False, other_x: bool = False) -> Path:
    """Conv, then x * Clip(x + 3, 0, clip_max) / 6 with initializer constants; the orders
    of commutative inputs, the Clip bound and a second reader of the Add are variable."""
    c = helper.make_node

    def scalar(name: str, v: float) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(v, np.float32), name)

    nodes = [
        c("Conv", ["x", "w"], ["h"], name="conv", kernel_shape=[1, 1]),
        c("Add", ["h", "three"] if add_first else ["three", "h"], ["a"], name="add"),
        c("Clip", ["a", "zero", "top"], ["k"], name="clip"),
        c("Mul", (["w2" if other_x else "h", "k"]) if mul_x_first else ["k", "h"], ["m"], name="mul"),
        c("Div", ["m", "six"], ["y"], name="div"),
    ]
    outputs = [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4, 8, 8])]
    if extra_reader:
        nodes.append(c("Relu", ["a"], ["r"], name="relu"))
        outputs.append(helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, [1, 4, 8, 8]))
    inits = [numpy_helper.from_array(np.ones((4, 4, 1, 1), np.float32), "w"), scalar("three", 3.0),
             scalar("zero", 0.0), scalar("top", clip_max), scalar("six", 6.0), scalar("w2", 2.0)]
    graph = helper.make_graph(nodes, "hs", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4, 8, 8])],
                              outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


# --- matching on hand-built graphs ---

def test_lesson_net_fuses_under_the_fused_profile() -> None:
    result = inspect_model(FIXTURES / "seed_hardswish" / "model.onnx", load_profile("rknn-rk3588-fused"))
    pattern = "fused into HardSwish (hardswish-add-clip-mul-div)"
    assert _placed(result) == {"/conv/Conv": ("npu", []), "/Add": ("npu", [pattern]), "/Clip": ("npu", [pattern]),
                               "/Mul": ("npu", [pattern]), "/Div": ("npu", [pattern])}
    summary = result.summary
    assert (summary["npu_partitions"], summary["cpu_partitions"], summary["cpu_nodes"]) == (1, 0, 0)
    assert result.summary["boundary_bytes"] == 0
    doc = result.to_dict()
    validate_result(doc)
    assert doc["schema_version"] == SCHEMA_VERSION == "1.11"
    assert doc["fusions"] == [{"pattern": "hardswish-add-clip-mul-div", "op": "HardSwish",
                               "nodes": ["/Add", "/Clip", "/Mul", "/Div"], "device": "npu", "reasons": [pattern]}]
    clip = next(n for n in doc["nodes"] if n["name"] == "/Clip")
    assert clip["fused"] == {"pattern": "hardswish-add-clip-mul-div", "op": "HardSwish",
                             "nodes": ["/Add", "/Clip", "/Mul", "/Div"]}
    assert "fused" not in next(n for n in doc["nodes"] if n["name"] == "/conv/Conv")


def test_profile_without_patterns_keeps_the_json_as_it_was() -> None:
    doc = inspect_model(FIXTURES / "seed_hardswish" / "model.onnx", load_profile("demo")).to_dict()
    assert "fusions" not in doc and not any("fused" in n for n in doc["nodes"])
    assert next(n for n in doc["nodes"] if n["name"] == "/Clip")["placement"] == "cpu"


@pytest.mark.parametrize(("add_first", "mul_x_first"), [(True, True), (False, True), (True, False), (False, False)])
def test_commutative_inputs_match_in_either_order(tmp_path: Path, add_first: bool, mul_x_first: bool) -> None:
    profile = load_profile(str(_profile(tmp_path, patterns=[HARDSWISH])))
    model = _hardswish_net(tmp_path / "m.onnx", add_first=add_first, mul_x_first=mul_x_first)
    result = inspect_model(model, profile)
    assert _placed(result) == {"conv": ("npu", []), "add": ("npu", [FUSED]), "clip": ("npu", [FUSED]),
                               "mul": ("npu", [FUSED]), "div": ("npu", [FUSED])}
    assert result.summary["npu_partitions"] == 1


@pytest.mark.parametrize(("options", "why"), [
    ({"clip_max": 5.0}, "wrong constant: Clip(x + 3, 0, 5)"),
    ({"extra_reader": True}, "the Add's result is also read outside the match"),
    ({"other_x": True}, "Mul reads another tensor than the Add"),
])
def test_near_misses_do_not_match(tmp_path: Path, options: dict[str, Any], why: str) -> None:
    profile = load_profile(str(_profile(tmp_path, patterns=[HARDSWISH])))
    result = inspect_model(_hardswish_net(tmp_path / "m.onnx", **options), profile)
    assert result.fusions == [], why
    assert _placed(result)["clip"] == ("cpu", ["op Clip not in profile p"])
    assert result.summary["npu_partitions"] == 2


def test_unsupported_fused_op_puts_every_matched_node_on_cpu(tmp_path: Path) -> None:
    profile = load_profile(str(_profile(tmp_path, patterns=[HARDSWISH | {"supported": False}])))
    result = inspect_model(_hardswish_net(tmp_path / "m.onnx"), profile)
    reason = f"{FUSED}, which profile p does not run on the NPU"
    assert _placed(result) == {"conv": ("npu", []), "add": ("cpu", [reason]), "clip": ("cpu", [reason]),
                               "mul": ("cpu", [reason]), "div": ("cpu", [reason])}
    assert [(f.rule, f.node) for f in result.findings if f.rule == "unsupported-op"] == [
        ("unsupported-op", "add"), ("unsupported-op", "clip"), ("unsupported-op", "mul"), ("unsupported-op", "div")]
    assert result.fusions is not None and result.fusions[0]["device"] == "cpu"


def test_fused_op_constraints_apply_to_its_inputs(tmp_path: Path) -> None:
    rank = {"id": "hardswish-rank", "input": 0, "rank": {"max": 3}, "message": "rank {actual} > 3"}
    profile = load_profile(str(_profile(tmp_path, patterns=[HARDSWISH | {"constraints": [rank]}])))
    result = inspect_model(_hardswish_net(tmp_path / "m.onnx"), profile)
    assert _placed(result)["clip"] == ("cpu", [f"{FUSED}, which runs on CPU here: rank 4 > 3"])
    found = [(f.rule, f.node, f.constraint, f.actual) for f in result.findings if f.rule == "op-constraint"]
    assert found == [("op-constraint", n, "hardswish-rank", 4) for n in ("add", "clip", "mul", "div")]


def test_patterns_of_the_base_are_inherited_and_replaced_by_name(tmp_path: Path) -> None:
    fused = load_profile("rknn-rk3588-fused")
    assert [p["name"] for p in fused.patterns] == [
        "hardswish-add-clip-mul-div", "gelu-erf", "gelu-erf-half-first", "silu-sigmoid-mul",
        "attention-matmul-div-softmax-matmul", "l2-normalize-reducel2-clip-expand-div",
        "l1-normalize-reducel1-clip-expand-div"]
    child = tmp_path / "child.json"
    child.write_text(json.dumps(HEAD | {"extends": "rknn-rk3588-fused", "ops": {}, "patterns": [
        {"name": "gelu-erf", "becomes": "GELU", "supported": False,
         "nodes": [{"op": "Erf", "inputs": [{"tensor": "x"}]}]},
    ]}), encoding="utf-8")
    derived = load_profile(str(child))
    assert [p["name"] for p in derived.patterns] == [
        "hardswish-add-clip-mul-div", "gelu-erf-half-first", "silu-sigmoid-mul",
        "attention-matmul-div-softmax-matmul", "l2-normalize-reducel2-clip-expand-div",
        "l1-normalize-reducel1-clip-expand-div", "gelu-erf"]
    assert derived.patterns[-1]["supported"] is False
    assert derived.document()["patterns"] == derived.patterns


@pytest.mark.parametrize(("pattern", "problem"), [
    (HARDSWISH | {"name": "hs", "nodes": [{"op": "Add", "inputs": [{"node": 0}]}]},
     "patterns[0].nodes[0].inputs[0].node: 0 is not an earlier pattern node"),
    (HARDSWISH | {"name": "hs", "nodes": [{"op": "Relu"}, {"op": "Sigmoid"}]},
     "patterns[0].nodes: node(s) [0] feed no later pattern node"),
    (HARDSWISH | {"inputs": ["y"]}, "patterns[0].inputs[0]: 'y' is no {\"tensor\": ...} of the pattern"),
    (HARDSWISH | {"constraints": [{"id": "a", "attribute": "alpha", "in": [1]}]},
     "patterns[0].constraints[0]: the fused op has no attributes"),
    (HARDSWISH | {"nodes": [{"op": "Clp", "inputs": [{"tensor": "x"}]}]},
     "patterns[0].nodes[0].op: unknown op type 'Clp' (did you mean 'Clip'?)"),
])
def test_pattern_problems(tmp_path: Path, pattern: dict[str, Any], problem: str) -> None:
    with pytest.raises(ProfileError) as info:
        load_profile(str(_profile(tmp_path, patterns=[pattern])))
    assert any(problem in line for line in str(info.value).splitlines()), str(info.value)


def test_duplicate_pattern_names_and_schema_errors(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as info:
        load_profile(str(_profile(tmp_path, patterns=[HARDSWISH, HARDSWISH])))
    assert "patterns[1].name: duplicate pattern name 'hardswish'" in str(info.value)
    with pytest.raises(ProfileError) as info:
        load_profile(str(_profile(tmp_path, patterns=[HARDSWISH | {"nodes": [{"op": "Add", "inputs": [{}]}]}])))
    assert "patterns" in str(info.value)


# --- exported graphs, both exporters ---

NETS = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 4, 1)
        self.b = nn.Conv2d(4, 4, 1)
        self.c = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        h = self.a(x)
        h = h * torch.clamp(h + 3, 0, 6) / 6
        g = nn.functional.gelu(self.b(h))
        return nn.functional.silu(self.c(g))
'''


@pytest.mark.torch
@pytest.mark.parametrize(("dynamo", "opset", "gelu"), [(False, 17, "gelu-erf"), (True, 18, "gelu-erf-half-first")])
@pytest.mark.slow
def test_exported_hardswish_gelu_and_silu_match(tmp_path: Path, dynamo: bool, opset: int, gelu: str) -> None:
    path = export_net(NETS, tmp_path / "net.onnx", dynamo=dynamo, opset=opset)
    result = inspect_model(path, load_profile("rknn-rk3588-fused"))
    assert result.fusions is not None
    assert [(f["pattern"], len(f["nodes"]), f["device"]) for f in result.fusions] == [
        ("hardswish-add-clip-mul-div", 4, "npu"), (gelu, 5, "npu"), ("silu-sigmoid-mul", 2, "npu")]
    assert (result.summary["cpu_nodes"], result.summary["npu_partitions"]) == (0, 1)
    erf = next(n for n in result.nodes if n.op_type == "Erf")
    assert erf.placement == "npu" and erf.fused is not None and erf.fused["op"] == "GELU"


# --- predicted vs actual, replayed from the recorded compiler runs ---

def _agreement(name: str, profile: str) -> tuple[int, int, int, int]:
    folder = FIXTURES / name
    probed = replay(folder / "model.onnx", RknnCompiler(), "rk3588", folder / "work", load_profile(profile))
    s = probed.to_dict()["summary"]
    return s["agree"], s["compared"], s["predicted_npu_partitions"], s["npu_segments"]


def test_fused_profile_agrees_with_the_compiler_on_the_lesson_net() -> None:
    assert _agreement("seed_hardswish", "demo") == (8, 9, 2, 1)
    assert _agreement("seed_hardswish", "rknn-rk3588-fused") == (9, 9, 1, 1)


@pytest.mark.parametrize(("name", "base", "fused"), [
    ("erf_between", (2, 3, 1, 2), (3, 3, 2, 2)),  # a lone Erf: CPU, measured
    ("gelu_half_first", (6, 6, 1, 1), (6, 6, 1, 1)),
    ("attention", (5, 5, 1, 1), (5, 5, 1, 1)),
])
def test_fused_profile_against_its_base(name: str, base: tuple[Any, ...], fused: tuple[Any, ...]) -> None:
    assert _agreement(name, "rknn-toolkit2-v2.1") == base
    assert _agreement(name, "rknn-rk3588-fused") == fused


def test_every_fixture_agrees_at_least_as_well_as_the_demo_profile() -> None:
    totals: dict[str, list[int]] = {"demo": [0, 0], "rknn-rk3588-fused": [0, 0]}
    for name in sorted(probe_models.MODELS):
        if not _built(name):
            continue  # refused or crashed: nothing to compare
        for profile, total in totals.items():
            agree, compared, _, _ = _agreement(name, profile)
            total[0] += agree
            total[1] += compared
    assert totals == {"demo": [35, 60], "rknn-rk3588-fused": [57, 60]}  # 57: a node the clean-up eliminates (#20)


def _built(name: str) -> bool:
    status: str = json.loads((FIXTURES / name / "probe.json").read_text(encoding="utf-8"))["status"]
    return status == "ok"


def test_fused_patterns_match_the_probe_models() -> None:
    profile = load_profile("rknn-rk3588-fused")
    matched: dict[str, list[str]] = {}
    for name, build in sorted(probe_models.MODELS.items()):
        if name in ("opset20",):
            continue
        model = build()
        path = FIXTURES / name / "model.onnx"
        assert path.read_bytes() == model.SerializeToString()
        matched[name] = [f["pattern"] for f in inspect_model(path, profile).fusions or []]
    assert {k: v for k, v in matched.items() if v} == {
        "attention": ["attention-matmul-div-softmax-matmul"],
        "gelu_half_first": ["gelu-erf-half-first"],
        "gelu_head": ["gelu-erf"],
        "seed_hardswish": ["hardswish-add-clip-mul-div"],
        "silu": ["silu-sigmoid-mul"],
    }


def test_reports_name_the_fused_patterns() -> None:
    from npu_gate.escape import md_code
    from npu_gate.render import markdown, text

    result = inspect_model(FIXTURES / "gelu_head" / "model.onnx", load_profile("rknn-rk3588-fused"))
    assert ("  fused GELU (gelu-erf) on npu: gelu_div, gelu_erf, gelu_add, gelu_mul, gelu_mul2\n"
            in text.render(result))
    report = markdown.render(result)
    assert "### Fused patterns" in report
    row = next(line for line in report.splitlines() if "<code>gelu-erf</code>" in line)
    assert [cell.strip() for cell in row.strip("|").split("|")] == [
        "<code>gelu-erf</code>", "<code>GELU</code>", "npu",
        ", ".join(md_code(n) for n in ("gelu_div", "gelu_erf", "gelu_add", "gelu_mul", "gelu_mul2"))]
    assert "Fused patterns" not in markdown.render(inspect_model(FIXTURES / "gelu_head" / "model.onnx",
                                                                  load_profile("demo")))


# --- rank adapters ---

@pytest.mark.parametrize(("name", "devices"), [
    ("rank2_odd_dims", [("x", "input", "cpu"), ("y", "output", "cpu")]),
    ("matmul_rank2", [("x", "input", "npu"), ("y", "output", "npu")]),
    ("gelu_head", [("y", "output", "npu")]),
    ("seed_hardswish", []),
])
def test_rank_adapters_predict_the_compilers_reshapes(name: str, devices: list[Any]) -> None:
    result = inspect_model(FIXTURES / name / "model.onnx", load_profile("rknn-rk3588-fused"))
    assert result.rank_adapters is not None
    assert [(a["tensor"], a["at"], a["device"]) for a in result.rank_adapters] == devices
    warnings = [f.message for f in result.findings if f.rule == "rank-adapter"]
    assert warnings == [a["reason"] for a in result.rank_adapters if a["device"] == "cpu"]
    validate_result(result.to_dict())
    # What the compiler did: its Reshape rows are these adapters, on the same devices.
    recorded = json.loads((FIXTURES / name / "probe.json").read_text(encoding="utf-8"))
    reshapes = [o["target"] for o in recorded["ops"] if o["op_type"] == "Reshape"]
    assert reshapes == [device for _, _, device in devices]


def test_rank_adapter_messages_and_removal(tmp_path: Path) -> None:
    result = inspect_model(FIXTURES / "rank2_odd_dims" / "model.onnx", load_profile("rknn-rk3588-fused"))
    assert [f.message for f in result.findings if f.rule == "rank-adapter"] == [
        "graph input x has rank 2: rknn-rk3588-fused adds a Reshape to rank 4 on CPU "
        "(dim -1 = 12 is not a multiple of 8)",
        "graph output y has rank 2: rknn-rk3588-fused adds a Reshape to rank 4 on CPU "
        "(dim -1 = 10 is not a multiple of 8)"]
    child = tmp_path / "child.json"
    child.write_text(json.dumps(HEAD | {"extends": "rknn-rk3588-fused", "ops": {}, "rank_adapters": None}),
                     encoding="utf-8")
    profile = load_profile(str(child))
    assert profile.rank_adapters is None and profile.patterns == load_profile("rknn-rk3588-fused").patterns
    doc = inspect_model(FIXTURES / "rank2_odd_dims" / "model.onnx", profile).to_dict()
    assert "rank_adapters" not in doc and not [f for f in doc["findings"] if f["rule"] == "rank-adapter"]
    always_cpu = tmp_path / "cpu.json"
    always_cpu.write_text(json.dumps(HEAD | {"extends": "demo", "ops": {}, "rank_adapters": {"rank": 4}}),
                          encoding="utf-8")
    adapters = inspect_model(FIXTURES / "matmul_rank2" / "model.onnx", load_profile(str(always_cpu))).rank_adapters
    assert adapters is not None
    assert [a["reason"] for a in adapters] == [
        "graph input x has rank 2: p adds a Reshape to rank 4 on CPU (the profile runs rank adapters on CPU)",
        "graph output y has rank 2: p adds a Reshape to rank 4 on CPU (the profile runs rank adapters on CPU)"]
