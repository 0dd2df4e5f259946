"""The cache's replay derives the verdict again (issue 43 item 3): an entry's digest is a plain
hash anyone who can write the cache folder can recompute, so an entry whose stored verdict or
exit code is not what its findings and gates give is refused, said on stderr, and gated afresh."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate import cache
from tests.helpers.common import CliRun
from tests.helpers.hook_fixtures import tiny_model, write_onnx_contract

CACHED = "result from cache (key "
Run = Callable[..., CliRun]


def _forge(entry: Path, json_verdict: str | None, exit_code: int | None) -> None:
    """Rewrite the entry as a writer of the cache folder can: its JSON's verdict, its terminal text
    and Markdown, its exit code; then its digest, recomputed."""
    doc: dict[str, Any] = json.loads(entry.read_text())
    if json_verdict is not None:
        result = json.loads(doc["json"])
        result["verdict"] = json_verdict
        doc["json"] = json.dumps(result, indent=2) + "\n"
        doc["text"] = doc["text"].replace("FAIL", "PASS")
        doc["markdown"] = doc["markdown"].replace("FAIL", "PASS")
    if exit_code is not None:
        doc["exit_code"] = exit_code
    doc["digest"] = cache._digest(doc)
    entry.write_text(json.dumps(doc))


@pytest.mark.parametrize(("command", "json_verdict", "exit_code"), [
    ("check", "pass", 0), ("check", None, 0), ("check", "pass", None), ("check-onnx", "pass", 0)],
    ids=["flipped", "exit-code-only", "verdict-only", "check-onnx"])
def test_a_cached_fail_flipped_to_pass_still_fails(run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  command: str, json_verdict: str | None,
                                                  exit_code: int | None) -> None:
    monkeypatch.chdir(tmp_path)
    contract = write_onnx_contract(tmp_path, tiny_model(cpu_op="Relu"))
    target = contract if command == "check" else tmp_path / "model.onnx"
    assert run_cli(command, target, "-q").code == 1  # fills the cache
    [entry] = sorted(Path(os.environ[cache.ENV_VAR]).rglob("*.json"))
    _forge(entry, json_verdict, exit_code)
    assert cache.Store(entry.parents[2]).get(entry.stem) is not None  # its digest matches: not a damaged entry

    run = run_cli(command, target, *(["--json", tmp_path / "r.json"] if command == "check" else []))
    assert run.code == 1
    assert CACHED not in run.out and "FAIL" in run.out
    if command == "check":
        assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "fail"
    stated = f"its verdict {json_verdict!r} contradicts its findings and gates ('fail')" if json_verdict \
        else "its exit code 0 contradicts its verdict 'fail'"
    assert run.err == (f"npu-gate: note: {contract}: cache entry {entry.stem[:12]} refused: {stated}; "
                       "gating afresh\n")
    # the fresh run replaced the entry: the next run is a hit again, with the true verdict
    again = run_cli(command, target)
    assert (again.code, CACHED in again.out, again.err) == (1, True, "")


def test_an_entry_whose_json_is_no_result_is_refused(run_cli: Run, tmp_path: Path) -> None:
    contract = write_onnx_contract(tmp_path)
    assert run_cli("check", contract, "-q").code == 0
    [entry] = sorted(Path(os.environ[cache.ENV_VAR]).rglob("*.json"))
    doc = json.loads(entry.read_text())
    doc["json"] = json.dumps({"verdict": "pass"})
    doc["digest"] = cache._digest(doc)
    entry.write_text(json.dumps(doc))
    run = run_cli("check", contract)
    assert (run.code, CACHED in run.out) == (0, False)
    assert run.err.endswith("refused: its JSON is not a result; gating afresh\n")
