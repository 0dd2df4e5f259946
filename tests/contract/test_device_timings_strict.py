"""Device timings (.json) are read as contracts and profiles are (issue 17, items 5 and 6): NaN,
Infinity, a number too big to be finite, a 5,000-digit integer, nesting 100,000 deep and a lone
surrogate are each one error line naming the file (and the JSON path), exit 2, no traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.hook_fixtures import write_onnx_contract

Run = Callable[..., Any]
ROW = '{"scope": "node", "key": "add0", "ms": %s}'
CASES = {
    "nan": ('{"timings": [%s]}' % (ROW % "NaN"), "timings[0].ms: NaN is not allowed: numbers must be finite"),
    "infinity": ('{"timings": [%s]}' % (ROW % "1e999"),
                 "timings[0].ms: Infinity is not allowed: numbers must be finite"),
    "huge-int": ('{"timings": [%s]}' % (ROW % ("9" * 5000)), "invalid JSON: an integer of more than 4300 digits"),
    "deep": ("[" * 100_000 + "]" * 100_000, "invalid JSON: nested too deep to read (at most 64 levels)"),
    "deep-enough": ('{"timings": [], "source": %s}' % ("[" * 70 + "]" * 70),
                    "source" + "[0]" * 63 + ": nested more than 64 levels deep"),
    "surrogate": ('{"source": "\\ud800", "timings": []}',
                  "source: invalid text: a lone surrogate (\\ud800) is not a character"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_device_timings_json_is_read_strictly(case: str, tmp_path: Path, run_cli: Run) -> None:
    text, problem = CASES[case]
    (tmp_path / ".git").mkdir()  # one repository: a contract reads only files of its own
    board = tmp_path / "board.json"
    board.write_text(text, encoding="utf-8")
    contract = write_onnx_contract(tmp_path / "m")
    for command in (["check", contract, "--device-timings", board],
                    ["check", write_onnx_contract(tmp_path / "n", device_timings=str(board))]):
        run = run_cli(*command)
        assert run.code == 2, command
        assert run.err == f"npu-gate: error: {board}: {problem}\n", command


def test_a_finite_timing_still_reads(tmp_path: Path, run_cli: Run) -> None:
    board = tmp_path / "board.json"
    board.write_text(json.dumps({"timings": [{"scope": "model", "key": "m", "ms": 2.5}]}), encoding="utf-8")
    run = run_cli("check", write_onnx_contract(tmp_path / "m"), "--device-timings", board, "-q")
    assert run.code == 0, run.err
