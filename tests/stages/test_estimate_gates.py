"""gates.max_sram_bytes / gates.max_estimated_ms gate the compiler's own estimate (Vela's, in
stages.probe.estimates), name its source, and fail closed when there is no figure."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from npu_gate.contract.spec import load_contract
from npu_gate.pipeline import check_contract
from npu_gate.result.types import GateResult
from npu_gate.stages.verdict import estimate_gates
from tests.helpers.common import SaveModel, WriteContract, validate_result
from tests.helpers.gate_models import seed_onnx

TODAY = dt.date(2026, 12, 3)
EVIDENCE = "estimated by Vela 5.2.0 for Ethos_U55_128, Ethos_U55_High_End_Embedded, Shared_Sram"


SeedResult = Callable[..., GateResult]
"""The ``seed_result`` fixture: the seed net checked under these gates."""


@pytest.fixture
def seed_result(save_model: SaveModel, write_contract: WriteContract) -> SeedResult:
    save_model(seed_onnx())

    def make(**gates: Any) -> GateResult:
        doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
               "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}], "gates": gates}
        return check_contract(load_contract(write_contract(doc)), today=TODAY)

    return make


def _probe(status: str = "ok", estimates: dict[str, Any] | None = None, reason: str | None = None) -> dict[str, Any]:
    return {"status": status, "reason": reason, "compiler": {"name": "ethos-u-vela"}, "estimates": estimates}


def _checks(result: GateResult, probe: dict[str, Any], sram: int | None,
            ms: float | None) -> tuple[list[tuple[str, Any, Any, bool]], list[str]]:
    result.stages["probe"] = probe
    result.findings = []
    checks = estimate_gates(result, sram, ms)
    return [(c.name, c.limit, c.actual, c.passed) for c in checks], [f.message for f in result.findings]


def test_without_a_probe_both_gates_fail_as_not_checked(seed_result: SeedResult) -> None:
    result = seed_result(max_sram_bytes=1024, max_estimated_ms=0.5)
    gates = {g.name: (g.limit, g.actual, g.passed) for g in result.gates}
    assert gates["max_sram_bytes"] == (1024, None, False) and gates["max_estimated_ms"] == (0.5, None, False)
    why = "no compiler estimate: the contract has no target.probe (a compiler that estimates it: ethos-u)"
    assert [f.message for f in result.findings if f.rule == "gate-exceeded"] == [
        f"max_sram_bytes: could not be checked ({why}), limit 1024 bytes",
        f"max_estimated_ms: could not be checked ({why}), limit 0.5 ms"]
    assert result.verdict == "fail"
    validate_result(result.to_dict())


def test_unset_gates_add_no_check(seed_result: SeedResult) -> None:
    result = seed_result()
    assert not {"max_sram_bytes", "max_estimated_ms"} & {g.name for g in result.gates}


def test_the_estimate_met_exactly_passes_and_one_over_fails_naming_vela(seed_result: SeedResult) -> None:
    result = seed_result()
    estimates = {"evidence": EVIDENCE, "sram_bytes": 24576, "estimated_ms": 0.3095}
    assert _checks(result, _probe(estimates=estimates), 24576, 0.3095) == (
        [("max_sram_bytes", 24576, 24576, True), ("max_estimated_ms", 0.3095, 0.3095, True)], [])
    assert _checks(result, _probe(estimates=estimates), 24575, 0.3) == (
        [("max_sram_bytes", 24575, 24576, False), ("max_estimated_ms", 0.3, 0.3095, False)],
        [f"max_sram_bytes: 24,576 bytes exceeds the limit 24,575 bytes ({EVIDENCE})",
         f"max_estimated_ms: 0.3095 ms exceeds the limit 0.3 ms ({EVIDENCE})"])


def test_a_failed_build_or_a_compiler_without_estimates_fails_closed(seed_result: SeedResult) -> None:
    result = seed_result()
    failed = _probe("failed", {"evidence": EVIDENCE, "sram_bytes": 1}, reason="lower: Vela exited with status 2")
    assert _checks(result, failed, 10, None) == (
        [("max_sram_bytes", 10, None, False)],
        ["max_sram_bytes: could not be checked (the compiler did not build the model: lower: Vela exited with "
         "status 2), limit 10 bytes"])
    assert _checks(result, _probe(), None, 1.0) == (
        [("max_estimated_ms", 1.0, None, False)],
        ["max_estimated_ms: could not be checked (ethos-u-vela gives no such estimate), limit 1 ms"])
    no_clock = {"evidence": EVIDENCE, "sram_bytes": 5, "estimated_ms": None}
    assert _checks(result, _probe(estimates=no_clock), None, 1.0)[1] == [
        f"max_estimated_ms: could not be checked ({EVIDENCE} gives no estimated_ms), limit 1 ms"]
    skipped = {"status": "skipped", "reason": "the run reached its --timeout"}
    assert _checks(result, skipped, 10, None)[1] == [
        "max_sram_bytes: could not be checked (the probe did not run: the run reached its --timeout), limit 10 bytes"]
