"""The Ethos-U profiles transcribed from Vela 5.2.0's SUPPORTED_OPS.md (issue 23): every vendor op
is a row of the document's TFLite summary table, every constraint quotes and links it, every checked
constraint has a failing case and every op a passing one, and ethos-u65 is ethos-u55."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from npu_gate.profile.spec import load_profile
from tests.helpers.common import REPO

DOC = "https://review.mlplatform.org/plugins/gitiles/ml/ethos-u/ethos-u-vela/+/refs/tags/5.2.0/SUPPORTED_OPS.md"

# The rows of the two TFLite summary tables of SUPPORTED_OPS.md, Vela 5.2.0 (`vela --supported-ops-report`).
U55_TABLE = {
    "ABS", "ADD", "ARG_MAX", "AVERAGE_POOL_2D", "BATCH_MATMUL", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D",
    "ELU", "EXP", "EXPAND_DIMS", "FULLY_CONNECTED", "GELU", "HARD_SWISH", "LEAKY_RELU", "LOG", "LOGISTIC",
    "MAXIMUM", "MAX_POOL_2D", "MEAN", "MINIMUM", "MIRROR_PAD", "MUL", "NEG", "PACK", "PAD", "PADV2", "PRELU",
    "QUANTIZE", "REDUCE_MAX", "REDUCE_MIN", "RELU", "RELU6", "RELU_0_TO_1", "RELU_N1_TO_1", "RESHAPE",
    "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "REVERSE_V2", "RSQRT", "SLICE", "SOFTMAX", "SPLIT", "SPLIT_V",
    "SQUARED_DIFFERENCE", "SQUEEZE", "STRIDED_SLICE", "SUB", "SUM", "TANH", "TILE", "TRANSPOSE", "TRANSPOSE_CONV",
    "UNIDIRECTIONAL_SEQUENCE_LSTM", "UNPACK",
}
U85_TABLE = U55_TABLE | {
    "ASSIGN_VARIABLE", "CAST", "DIV", "EQUAL", "GATHER", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL",
    "LOGICAL_AND", "LOGICAL_NOT", "LOGICAL_OR", "NOT_EQUAL", "READ_VARIABLE", "REDUCE_ALL", "REDUCE_ANY",
    "SCATTER_ND", "SELECT", "SELECT_V2",
}
# Table rows no ONNX op is judged as, each named in the profile's description.
UNMAPPED = {
    "ethos-u55": {"PACK", "UNPACK", "REVERSE_V2", "RSQRT", "SQUARED_DIFFERENCE", "QUANTIZE",
                  "UNIDIRECTIONAL_SEQUENCE_LSTM"},
    "ethos-u85": {"PACK", "UNPACK", "REVERSE_V2", "RSQRT", "SQUARED_DIFFERENCE", "QUANTIZE",
                  "UNIDIRECTIONAL_SEQUENCE_LSTM", "NOT_EQUAL", "REDUCE_ALL", "REDUCE_ANY", "ASSIGN_VARIABLE",
                  "READ_VARIABLE", "SELECT"},
}
TABLES = {"ethos-u55": U55_TABLE, "ethos-u85": U85_TABLE}
ANCHOR = {"ethos-u55": "ethos-u55-and-ethos-u65-tflite", "ethos-u85": "ethos-u85-tflite"}


def _tflite_names(text: str) -> set[str]:
    """The upper-case words of a vendor_op (TFLite op names), not dims (H, W) or shapes (2-D)."""
    return {w for w in re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b", text) if len(w) > 2} - {"ONNX"}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_vendor_op_is_a_row_of_the_table(name: str) -> None:
    p = load_profile(name)
    used: set[str] = set()
    for op, spec in p.ops.items():
        names = _tflite_names(spec["vendor_op"])
        assert names and names <= TABLES[name], (op, names - TABLES[name])
        used |= names
    assert TABLES[name] - used == UNMAPPED[name]
    for row in UNMAPPED[name]:
        assert row in p.description
    assert {"Conv": "CONV_2D when group = 1; DEPTHWISE_CONV_2D when group = input channels",
            "ConvTranspose": "TRANSPOSE_CONV", "Sigmoid": "LOGISTIC", "Gemm": "FULLY_CONNECTED",
            "Unsqueeze": "EXPAND_DIMS", "ReduceSum": "SUM"}.items() <= {
        op: spec["vendor_op"] for op, spec in p.ops.items()}.items()


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_constraint_quotes_and_links_the_document(name: str) -> None:
    p = load_profile(name)
    assert p.evidence == "vendor-documentation"
    assert "not a compiler's answer" in p.description and "before shipping" in p.description
    assert "2026-12-03" in p.source and "5.2.0" in p.source and DOC in p.source
    assert p.limits["doc"] == f"{DOC}#{ANCHOR[name]}-generic-constraints"
    for op, spec in p.ops.items():
        for c in spec["constraints"]:
            assert c["message"].startswith("Vela 5.2.0 SUPPORTED_OPS, "), (op, c["id"])
            assert "“" in c["message"] and "”" in c["message"], (op, c["id"])
            anchor = c["doc"].removeprefix(f"{DOC}#{ANCHOR[name]}-").removesuffix("-constraints")
            assert anchor.upper() in TABLES[name] | {"GENERIC"}, (op, c["id"], c["doc"])
    assert p.unknown_ops and not set(p.unknown_ops) & set(p.ops)
    assert p.memory is None  # the document states no budget


def _case_op(case: dict[str, Any]) -> str:
    return str(case["args"].get("op", {"conv": "Conv", "resize": "Resize"}.get(case["builder"], "")))


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_checked_constraint_fails_once_and_every_op_passes_once(name: str) -> None:
    path = REPO / "tests" / "profile_cases" / f"{name.replace('-', '_')}.json"
    cases = json.loads(path.read_text("utf-8"))["cases"]
    assert {c["extends"] for c in cases} == {name}
    failed = {f["constraint"] for c in cases for f in c["failures"] if f.get("rule") != "unchecked-condition"}
    passed = {_case_op(c) for c in cases if c["placement"] == "npu"}
    p = load_profile(name)
    checked = {c["id"] for spec in p.ops.values() for c in spec["constraints"] if not c.get("unchecked")}
    assert checked | {"limit-dtypes", "limit-static-shapes"} == failed
    assert set(p.ops) <= passed


def test_ethos_u65_is_ethos_u55() -> None:
    """One document section covers both cores: the U65 profile only renames the U55 one."""
    u55, u65 = load_profile("ethos-u55"), load_profile("ethos-u65")
    assert u65.evidence == "vendor-documentation" and u65.source == u55.source
    assert (u65.ops, u65.limits, u65.unknown_ops, u65.memory) == (u55.ops, u55.limits, u55.unknown_ops, None)


def test_u85_drops_the_u55_stride_and_32_bit_rules() -> None:
    """What Vela 5.2.0's document changes from U55/U65 to U85, on the ops the issue's constraint net uses."""
    def ids(name: str, op: str) -> set[str]:
        return {c["id"] for c in load_profile(name).ops[op]["constraints"]}

    assert {"conv-stride-above-3-padding", "conv-depthwise-stride", "conv-no-32bit"} <= ids("ethos-u55", "Conv")
    assert not {"conv-stride-above-3-padding", "conv-depthwise-stride", "conv-no-32bit"} & ids("ethos-u85", "Conv")
    assert "convtranspose-stride" in ids("ethos-u55", "ConvTranspose")
    assert "convtranspose-stride" not in ids("ethos-u85", "ConvTranspose")
    assert "maxpool-stride-above-3-padding" in ids("ethos-u55", "MaxPool")
    assert "maxpool-stride-above-3-padding" not in ids("ethos-u85", "MaxPool")
    assert "Div" in load_profile("ethos-u55").unknown_ops and "Div" in load_profile("ethos-u85").ops
