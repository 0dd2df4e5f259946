"""One runner for every case file in tests/profile_cases/: one file per constraint kind.

A case names a model builder (tests/helpers/profile_builders.py) and its arguments, a profile
snippet (``ops``, optional ``limits``/``extends``), optional contract input layouts,
and the expected placement of ``node0`` with every failure (rule, constraint id,
actual, allowed) in order. The model goes through the real contract path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from npu_gate.contract.spec import load_contract
from npu_gate.graph.facts import dtype_name
from npu_gate.pipeline import check_contract, inspect_model
from npu_gate.profile.spec import load_profile
from tests.helpers.common import REPO
from tests.helpers.profile_builders import BUILDERS

CASES_DIR = REPO / "tests" / "profile_cases"
CONSTRAINT_RULES = ("op-constraint", "profile-limit", "unsupported-op", "unchecked-condition")


def _cases() -> list[Any]:
    out = []
    for path in sorted(CASES_DIR.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            out.append(pytest.param(case, id=f"{path.stem}: {case['name']}"))
    return out


def _contract(tmp_path: Path, case: dict[str, Any]) -> Path:
    model = BUILDERS[case["builder"]](**case.get("args", {}))
    (tmp_path / "model.onnx").write_bytes(model.SerializeToString())
    profile = {
        "name": "case",
        "description": "test case",
        "source": "tests",
        "evidence": "illustrative",
    }
    profile |= {k: case[k] for k in ("extends", "limits", "refuses") if k in case}
    profile["ops"] = case.get("ops", {})
    (tmp_path / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
    layouts = case.get("layouts", {})
    inputs = []
    for value in model.graph.input:
        tt = value.type.tensor_type
        spec = {
            "name": value.name,
            "shape": [d.dim_value or 1 for d in tt.shape.dim],
            "dtype": dtype_name(tt.elem_type),
        }
        if value.name in layouts:
            spec["layout"] = layouts[value.name]
        inputs.append(spec)
    contract = {
        "model": {"onnx": "model.onnx"},
        "inputs": inputs,
        "target": {"profile": "profile.json"},
    }
    path = tmp_path / "npu-gate.json"
    path.write_text(json.dumps(contract), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", _cases())
def test_profile_case(tmp_path: Path, case: dict[str, Any]) -> None:
    contract = _contract(tmp_path, case)
    if case.get("inspect"):  # dynamic shapes: no contract can declare them
        result = inspect_model(
            tmp_path / "model.onnx", load_profile(str(tmp_path / "profile.json"))
        )
    else:
        result = check_contract(load_contract(contract))
    node = case.get("node", "node0")
    placed = {n.name: n.placement for n in result.nodes}
    assert placed[node] == case["placement"]
    findings = [
        f
        for f in result.findings
        if f.rule in CONSTRAINT_RULES and f.node in (node, None) and f.constraint is not None
    ]
    got = [
        {
            "rule": f.rule,
            "constraint": f.constraint,
            "actual": f.actual,
            "allowed": f.allowed,
            "message": f.message,
            "fix": f.fix,
        }
        for f in findings
    ]
    want = [{"rule": "op-constraint"} | e for e in case["failures"]]
    for g, w in zip(got, want, strict=False):
        if "fix" not in w:
            del g["fix"]  # a case pins the fix only where it is what the case is about
        if "message" not in w:
            del g["message"]  # a case pins the message only where the wording matters
        elif w["rule"] == "op-constraint":  # the finding names the constraint, then what failed
            w["message"] = f"{w['constraint']}: {w['message']}"
    assert got == want


def test_case_files_cover_every_test_kind() -> None:
    """Every test key of the constraint vocabulary appears in some case file."""
    from npu_gate.profile.constraints import TESTS

    text = " ".join(p.read_text(encoding="utf-8") for p in CASES_DIR.glob("*.json"))
    missing = [t for t in TESTS if f'"{t}"' not in text]
    assert not missing
