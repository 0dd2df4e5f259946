"""The static memory estimate beside the compiler's own figures (RKNN's totals, Vela's SRAM/flash/
time estimates), each with its evidence, and the ratio estimate ÷ compiler (issues 23, 24)."""

from __future__ import annotations

from npu_gate.render.probe import memory_rows

VELA = {"evidence": "estimated by Vela 5.2.0 for Ethos_U55_128, Ethos_U55_High_End_Embedded, Shared_Sram",
        "sram_bytes": 24576, "flash_bytes": 1658, "cycles": 154771, "estimated_ms": 0.3095}
ESTIMATE = {"peak_activation_bytes": 45056, "weight_bytes": 5168, "runtime_dtype": None}
VELA_EVIDENCE = "estimated by Vela 5.2.0 for Ethos&#95;U55&#95;128, Ethos&#95;U55&#95;High&#95;End&#95;Embedded, " \
    "Shared&#95;Sram"
STATIC = "estimated upper bound on unpadded tensor bytes (docs/memory.md)"


def test_vela_figures_beside_the_static_estimate_with_ratios() -> None:
    assert memory_rows({"compiler": None, "estimate": ESTIMATE}, VELA) == [
        ["compiler: SRAM used (largest partition)", "24,576 B (estimated peak ÷ this: 1.83)", VELA_EVIDENCE],
        ["compiler: flash used (all partitions)", "1,658 B (estimated weights ÷ this: 3.12)", VELA_EVIDENCE],
        ["compiler: time", "0.3095 ms (154,771 cycles)", VELA_EVIDENCE],
        ["static estimate: peak activations", "45,056 B", STATIC],
        ["static estimate: weights", "5,168 B", STATIC]]


def test_rknn_totals_and_unknown_figures() -> None:
    rknn = {"internal_bytes": 26112, "weight_bytes": None, "evidence": "measured: rknn-toolkit2 2.5.0 rk3588"}
    estimate = {"peak_activation_bytes": 6144, "weight_bytes": 236, "runtime_dtype": "float16"}
    words = "estimated upper bound on unpadded tensor bytes, float tensors in float16 (docs/memory.md)"
    assert memory_rows({"compiler": rknn, "estimate": estimate}, None) == [
        ["compiler: internal memory", "26,112 B (estimated peak ÷ this: 0.24)", "measured: rknn-toolkit2 2.5.0 rk3588"],
        ["compiler: weight memory", "unknown", "measured: rknn-toolkit2 2.5.0 rk3588"],
        ["static estimate: peak activations", "6,144 B", words],
        ["static estimate: weights", "236 B", words]]


def test_an_estimate_in_the_profiles_layout_says_so() -> None:
    from npu_gate.result.types import ESTIMATE_LAID_OUT

    rknn = {"internal_bytes": 26112, "weight_bytes": 2688, "evidence": "measured: rknn-toolkit2 2.5.0 rk3588"}
    estimate = {"peak_activation_bytes": 24576, "weight_bytes": 2944, "runtime_dtype": "float16",
                "evidence": ESTIMATE_LAID_OUT}
    rows = memory_rows({"compiler": rknn, "estimate": estimate}, None)
    words = ("estimated upper bound on tensor bytes in the profile's memory layout &#40;padded channels, aligned "
             "buffers&#41;, float tensors in float16 (docs/memory.md)")
    assert rows[2:] == [
        ["static estimate: peak activations", "24,576 B", words],
        ["static estimate: weights", "2,944 B", words]]


def test_nothing_from_the_compiler_means_no_rows() -> None:
    assert memory_rows({"compiler": None, "estimate": ESTIMATE}, None) == []
    assert memory_rows({}, None) == []


def test_compiler_text_in_the_evidence_is_escaped() -> None:
    hostile = dict(VELA, evidence="estimated by Vela 5.2.0 for <img src=x>|x")
    rows = memory_rows({"compiler": None, "estimate": None}, hostile)
    assert len(rows) == 3 and all("<img" not in row[2] and "|x" not in row[2] for row in rows)
