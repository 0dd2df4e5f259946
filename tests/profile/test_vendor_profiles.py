"""The transcribed vendor profiles ascend-atc and mediatek-mdla2 (issue 25): the vendor-op
mapping, what each constraint carries, and the `when` condition and `unknown_ops` they use."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate.graph.facts import NodeFacts, TensorInfo
from npu_gate.profile.constraints import evaluate, unchecked
from npu_gate.profile.spec import load_profile
from tests.helpers.common import REPO, CliRun

Run = Callable[..., CliRun]
HEAD = {"name": "p", "description": "d", "source": "s", "evidence": "illustrative"}

# ONNX op type -> the vendor op it is judged as: the mapping the transcriptions rest on.
VENDOR_OPS = {
    "ascend-atc": {
        "Add": "Add (ONNX operator list)",
        "AveragePool": "AveragePool (ONNX operator list); Ascend IR AvgPoolV2 (quantization table)",
        "Conv": "Conv (ONNX operator list); Ascend IR Conv2D, Conv3D (quantization table)",
        "ConvTranspose": "ConvTranspose (ONNX operator list); Ascend IR Conv2DTranspose (quantization table)",
        "Gemm": "Gemm (ONNX operator list); Ascend IR MatMulV2 (quantization table)",
        "LayerNormalization": "LayerNormalization (ONNX operator list)",
        "MatMul": "MatMul (ONNX operator list); Ascend IR BatchMatMulV2 (quantization table)",
        "MaxPool": "MaxPool (ONNX operator list); Ascend IR MaxPool, MaxPoolV3 (quantization table)",
        "Resize": "Resize (ONNX operator list)",
        "Sigmoid": "Sigmoid (ONNX operator list)",
        "Softmax": "Softmax (ONNX operator list)",
    },
    "mediatek-mdla2": {
        "Abs": "ABS (Abs)",
        "AveragePool": "AVERAGE_POOL_2D (AvgPooling)",
        "Concat": "CONCATENATION (Concat)",
        "Conv": "CONV_2D (Conv2D) when group = 1; DEPTHWISE_CONV_2D (DepthwiseConv2D) when group = input channels",
        "GlobalAveragePool": "AVERAGE_POOL_2D, global pooling (AvgPooling)",
    },
}
DOC_HOSTS = {"ascend-atc": "https://www.hiascend.com/", "mediatek-mdla2": "https://mediatek.gitlab.io/"}


@pytest.mark.parametrize("name", sorted(VENDOR_OPS))
def test_vendor_op_mapping(name: str) -> None:
    p = load_profile(name)
    assert {op: spec["vendor_op"] for op, spec in p.ops.items()} == VENDOR_OPS[name]


@pytest.mark.parametrize("name", sorted(VENDOR_OPS))
def test_every_constraint_quotes_and_links_its_document(name: str) -> None:
    p = load_profile(name)
    assert p.evidence == "vendor-documentation"
    assert "not a compiler's answer" in p.description and "before shipping" in p.description
    assert "2026-12-03" in p.source
    for op, spec in p.ops.items():
        for c in spec["constraints"]:
            assert "“" in c["message"] and "”" in c["message"], (op, c["id"])
            assert c["doc"].startswith(DOC_HOSTS[name].removesuffix("/")) or c["doc"].startswith(
                "https://hiascend.com/"), (op, c["id"])
    assert p.unknown_ops and not set(p.unknown_ops) & set(p.ops)


@pytest.mark.parametrize("name", sorted(VENDOR_OPS))
def test_every_checked_constraint_has_a_passing_and_a_failing_case(name: str) -> None:
    cases = json.loads((REPO / "tests" / "profile_cases" / f"{name.replace('-', '_')}.json").read_text("utf-8"))
    failed = {f["constraint"] for case in cases["cases"] for f in case["failures"]}
    passed_ops = {case["args"].get("op", "Conv") for case in cases["cases"] if case["placement"] == "npu"}
    p = load_profile(name)
    checked = {c["id"] for spec in p.ops.values() for c in spec["constraints"] if not c.get("unchecked")}
    assert checked <= failed
    assert set(p.ops) - {"Concat", "Gemm", "LayerNormalization", "Resize"} <= passed_ops | {"Conv"}


def _node(dtype: str | None, group: int = 1) -> tuple[NodeFacts, dict[str, TensorInfo]]:
    node = NodeFacts(index=0, name="n", op_type="Conv", domain="", inputs=["x"], outputs=["y"],
                     attributes={"group": group}, defaulted=[])
    return node, {"x": TensorInfo("x", dtype, [1, 4096, 8, 8])}


WHEN_8 = {"id": "c8", "when": {"input": 0, "dtype": ["int8", "uint8"]}, "input": 0, "dim": {"axis": 1, "max": 8194}}
WHEN_16 = {"id": "c16", "when": {"input": 0, "dtype": ["float16", "float32"]},
           "input": 0, "dim": {"axis": 1, "max": 4095}}


@pytest.mark.parametrize(
    ("dtype", "failed"),
    [("int8", []), ("float16", ["c16"]), ("float32", ["c16"]), (None, ["c16"])],
)
def test_when_keys_a_constraint_on_the_input_dtype(dtype: str | None, failed: list[str]) -> None:
    """int8 is judged by the 8-bit limit, float16/float32 by the 16-bit one; an unknown dtype
    by both (a condition never lets a node skip a limit)."""
    node, tensors = _node(dtype)
    assert [f.constraint for f in evaluate([WHEN_8, WHEN_16], node, tensors, frozenset())] == failed


def test_when_on_an_attribute_and_on_unchecked_conditions() -> None:
    c = {"id": "dw", "when": {"attribute": "group", "not_in": [1]}, "attribute": "group", "in": [2]}
    u = {"id": "u", "when": {"attribute": "group", "not_in": [1]}, "unchecked": True, "message": "m"}
    plain, tensors = _node("float16", group=1)
    grouped, _ = _node("float16", group=8)
    assert evaluate([c], plain, tensors, frozenset()) == []
    assert [f.message for f in evaluate([c], grouped, tensors, frozenset())] == ["attribute group 8 not in {2}"]
    assert unchecked([u], plain, tensors) == []
    assert [f.constraint for f in unchecked([u], grouped, tensors)] == ["u"]


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(HEAD | doc), encoding="utf-8")
    return path


def test_when_and_unknown_ops_problems(tmp_path: Path, run_cli: Run) -> None:
    path = _write(tmp_path, {
        "ops": {"Conv": {"constraints": [
            {"id": "a", "when": {"attribute": "gruop", "in": [1]}, "input": 0, "rank": {"max": 4}},
            {"id": "b", "when": {"attribute": "group", "dtype": ["int8"]}, "input": 0, "rank": {"max": 4}},
            {"id": "c", "when": {"input": 0, "dtype": ["int8"], "in": [1]}, "input": 0, "rank": {"max": 4}},
            {"id": "d", "when": {"attribute": "group"}, "input": 0, "rank": {"max": 4}},
        ]}},
        "unknown_ops": {"Conv": "silent", "Cnov": "typo"},
    })
    r = run_cli("profile", "check", path)
    where = f"npu-gate: error: {path}: ops.Conv.constraints"
    assert r.err.splitlines() == [
        f"{where}[1].when: dtype is a tensor test; an attribute condition takes in/not_in",
        f"{where}[2].when: a tensor condition tests dtype only; remove in",
        f"{where}[3].when: an attribute condition needs in or not_in",
        f"npu-gate: error: {path}: unknown_ops.Conv: the op is also in ops; an op is either claimed or unknown",
        f"{where}[0].when.attribute: Conv has no attribute 'gruop' (did you mean 'group'?); its attributes: "
        "auto_pad, dilations, group, kernel_shape, pads, strides",
        f"npu-gate: error: {path}: unknown_ops.Cnov: unknown op type 'Cnov' in domain ai.onnx (did you mean 'Conv'?)",
    ]
    assert r.code == 1


def test_pages_show_vendor_ops_conditions_and_unclaimed_ops() -> None:
    page = (REPO / "docs" / "profiles" / "mediatek-mdla2.md").read_text(encoding="utf-8")
    assert "*Vendor op:* CONV_2D (Conv2D) when group = 1" in page
    assert ("`conv-input-channels-8bit`: when input 0 dtype in {uint8, int8} (or not known): "
            "input 0: dim 1 ≤ 8194") in page
    assert "## Not claimed (25)" in page
    assert "not a compiler's answer" in page
