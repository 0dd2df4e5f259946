"""Verdicts are derived, never read (issue 43 item 2): ``derive_verdict`` is the one definition
the verdict stage decides with, and ``merge``, ``--baseline`` and ``diff`` refuse a result whose
stated verdict contradicts its findings and gates (exit 2, one line naming the file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate.result.read import document_verdict
from npu_gate.result.types import Finding, GateCheck
from npu_gate.result.verdict import combine_verdicts, derive_verdict
from tests.helpers import model_zoo
from tests.helpers.common import CliRun
from tests.helpers.gate_models import add_contract, conv_only

Run = Callable[..., CliRun]


def _error(rule: str = "unsupported-op", waived: bool = False, **where: Any) -> Finding:
    return Finding(rule=rule, severity="error", message="m", waived=waived, **where)


def test_an_active_error_fails_and_nothing_else_does() -> None:
    assert derive_verdict([], []) == "pass"
    assert derive_verdict([_error()], []) == "fail"
    assert derive_verdict([_error(waived=True)], []) == "pass"
    assert derive_verdict([Finding("dynamic-shape", "warning", "m"), Finding("x", "info", "m")], []) == "pass"
    assert derive_verdict([], [GateCheck("max_cpu_nodes", 0, 0, True)]) == "pass"


def test_a_failed_gate_fails_unless_the_finding_naming_it_was_waived() -> None:
    gate = GateCheck("max_cpu_nodes", 0, 3, False)
    # its finding deleted from the document: the gate's own record still fails it
    assert derive_verdict([], [gate]) == "fail"
    assert derive_verdict([_error("gate-exceeded", waived=True, subject="max_cpu_nodes")], [gate]) == "pass"
    assert derive_verdict([_error("gate-exceeded", waived=True, subject="max_npu_partitions")], [gate]) == "fail"
    sqnr = GateCheck("min_output_sqnr_db", 30.0, 12.5, False)  # a quantization gate: named by constraint
    assert derive_verdict([_error("quantization-error", waived=True, subject="output y",
                                  constraint="min_output_sqnr_db")], [sqnr]) == "pass"
    assert derive_verdict([_error("quantization-error", waived=True, subject="output y")], [sqnr]) == "fail"


def test_combined_verdicts() -> None:
    assert combine_verdicts([]) == "pass"
    assert combine_verdicts(["pass", "fail", "pass"]) == "fail"
    assert combine_verdicts(["fail", "error"]) == "error"


def _with_gates(contract: Path, **gates: object) -> Path:
    doc = json.loads(contract.read_text())
    contract.write_text(json.dumps(doc | {"gates": gates}))
    return contract


@pytest.fixture
def results(tmp_path: Path, run_cli: Run) -> tuple[Path, Path]:
    """A passing result, and a failing one with a failed gate (max_cpu_nodes 0, Relu on CPU)."""
    ok = add_contract(tmp_path, "conv", conv_only(), [1, 3, 8, 8])
    bad = _with_gates(add_contract(tmp_path, "relu", model_zoo.conv_relu(), [1, 3, 8, 8]), max_cpu_nodes=0)
    assert run_cli("check", ok, "--json", tmp_path / "conv.json", "-q").code == 0
    assert run_cli("check", bad, "--json", tmp_path / "relu.json", "-q").code == 1
    return tmp_path / "conv.json", tmp_path / "relu.json"


def test_the_verdict_stage_decides_as_readers_derive(tmp_path: Path, results: tuple[Path, Path],
                                                     run_cli: Run) -> None:
    """Every genuine result states the verdict its findings and gates give, also one whose
    failed gate is waived (the gate's record says failed, the verdict says pass)."""
    for path in results:
        doc = json.loads(path.read_text())
        assert document_verdict(doc) == doc["verdict"]
    relu = tmp_path / "models" / "relu" / "npu-gate.json"
    doc = json.loads(relu.read_text())
    doc["waivers"] = [{"rule": "gate-exceeded", "reason": "accepted for now"},
                      {"rule": "unsupported-op", "reason": "accepted for now"}]
    relu.write_text(json.dumps(doc))
    assert run_cli("check", relu, "--json", tmp_path / "waived.json", "-q").code == 0
    waived = json.loads((tmp_path / "waived.json").read_text())
    assert [g["passed"] for g in waived["gates"] if g["name"] == "max_cpu_nodes"] == [False]
    assert (waived["verdict"], document_verdict(waived)) == ("pass", "pass")
    assert run_cli("merge", tmp_path / "waived.json", "-q").code == 0


def _forge(path: Path, out: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    doc = json.loads(path.read_text())
    edit(doc)
    out.write_text(json.dumps(doc))
    return out


def _refused(path: Path, what: str = "findings and gates", derived: str = "fail") -> str:
    return f"npu-gate: error: {path}: verdict 'pass' contradicts its {what}, which give '{derived}': refused\n"


def test_merge_refuses_a_failing_result_edited_to_pass(tmp_path: Path, results: tuple[Path, Path],
                                                       run_cli: Run) -> None:
    """The issue's attack: only ``"verdict": "pass"`` edited in a failing result."""
    forged = _forge(results[1], tmp_path / "forged.json", lambda d: d.update(verdict="pass"))
    run = run_cli("merge", results[0], forged, "--json", tmp_path / "all.json", "--markdown", tmp_path / "all.md")
    assert (run.code, run.out, run.err) == (2, "", _refused(forged))
    assert not (tmp_path / "all.json").exists() and not (tmp_path / "all.md").exists()


def test_a_result_with_its_errors_deleted_still_fails_by_its_gates(tmp_path: Path, results: tuple[Path, Path],
                                                                   run_cli: Run) -> None:
    forged = _forge(results[1], tmp_path / "forged.json", lambda d: d.update(verdict="pass", findings=[]))
    run = run_cli("merge", forged)
    assert (run.code, run.err) == (2, _refused(forged))


def test_a_forged_baseline_is_refused(tmp_path: Path, results: tuple[Path, Path], run_cli: Run) -> None:
    forged = _forge(results[1], tmp_path / "forged.json", lambda d: d.update(verdict="pass"))
    relu = tmp_path / "models" / "relu" / "npu-gate.json"
    for run in (run_cli("check", relu, "--baseline", forged, "--fail-on", "regressions", "-q"),
                run_cli("merge", results[1], "--baseline", forged, "--fail-on", "regressions", "-q")):
        assert (run.code, run.err) == (2, _refused(forged))


def test_diff_refuses_a_forged_result(tmp_path: Path, results: tuple[Path, Path], run_cli: Run) -> None:
    forged = _forge(results[1], tmp_path / "forged.json", lambda d: d.update(verdict="pass"))
    run = run_cli("diff", results[1], forged)
    assert (run.code, run.err) == (2, _refused(forged))


def test_a_merged_document_is_checked_entry_by_entry_and_as_a_whole(tmp_path: Path, results: tuple[Path, Path],
                                                                    run_cli: Run) -> None:
    assert run_cli("merge", *results, "--json", tmp_path / "all.json", "-q").code == 1
    merged = tmp_path / "all.json"
    assert run_cli("merge", merged, "-q").code == 1  # as written, it reads back

    def entry(doc: dict[str, Any]) -> None:
        doc["results"][1]["verdict"] = "pass"
        doc["verdict"] = "pass"

    one = _forge(merged, tmp_path / "one.json", entry)
    assert run_cli("merge", one).err == _refused(Path(f"{one}: results[1]"))
    whole = _forge(merged, tmp_path / "whole.json", lambda d: d.update(verdict="pass"))
    assert run_cli("merge", whole).err == _refused(whole, "results and errors")
    # an errors entry makes the document's verdict error: "fail" contradicts it too
    errors = _forge(merged, tmp_path / "errors.json",
                    lambda d: d.update(errors=[{"contract": "c/npu-gate.json", "problems": ["c: broken"]}]))
    run = run_cli("merge", errors)
    assert (run.code, run.err) == (2, f"npu-gate: error: {errors}: verdict 'fail' contradicts its results "
                                      "and errors, which give 'error': refused\n")
