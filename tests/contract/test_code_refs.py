"""A contract may not name a callable of the standard library or of a known process/shell
package (issue 17, item 10): a JSON-only change must not run a command through one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate.contract.code_refs import refused
from npu_gate.errors import ModelError
from npu_gate.model.user_code import import_callable
from tests.helpers.hook_fixtures import contract_doc, write_onnx_contract

Run = Callable[..., Any]


def test_a_stdlib_factory_is_refused_before_it_runs(tmp_path: Path, run_cli: Run) -> None:
    pwned = tmp_path / "PWNED"
    doc = contract_doc()
    doc["model"] = {"torch": {"factory": "subprocess:run", "kwargs": {"args": ["touch", str(pwned)]}}}
    contract = tmp_path / "npu-gate.json"
    contract.write_text(json.dumps(doc), encoding="utf-8")
    done = run_cli("check", contract, "-q")
    assert done.code == 2
    assert done.err == (f"npu-gate: error: {contract}: model.torch.factory: 'subprocess:run': refused: "
                        "'subprocess' is a module of the Python standard library (a contract names the "
                        "project's own code or a model library's; README: Security)\n")
    assert not pwned.exists()
    assert run_cli("validate", contract).code == 2


@pytest.mark.parametrize(("key", "ref", "why"), [
    ("metric", "os:system", "'os' is a module of the Python standard library"),
    ("metric", "builtins:exec", "'builtins' is a module of the Python standard library"),
    ("metric", "sh:bash", "'sh' runs commands"),
    ("replacement", "npu_gate.cli:main", "'npu_gate' runs commands"),
    ("replacement", "torch.hub:load", "'torch.hub' runs commands"),
])
def test_metric_and_replacement_are_refused_too(tmp_path: Path, run_cli: Run, key: str, ref: str, why: str) -> None:
    extra: dict[str, Any] = ({"metric": {"callable": ref}} if key == "metric"
                             else {"replacement": {"torch": {"factory": ref}}})
    contract = write_onnx_contract(tmp_path, **extra)
    done = run_cli("check", contract, "-q")
    assert done.code == 2
    where = "metric.callable" if key == "metric" else "replacement.torch.factory"
    assert done.err.startswith(f"npu-gate: error: {contract}: {where}: {ref!r}: refused: {why}")
    assert len(done.err.splitlines()) == 1


def test_the_rule() -> None:
    for module in ("subprocess", "os.path", "shutil", "pty", "importlib", "runpy", "ctypes", "plumbum.cmd",
                   "pexpect", "invoke", "fabric", "sarge", "torch.utils.cpp_extension"):
        assert refused(module), module
    for module in ("net", "seed_net", "torchvision.models", "timm", "torch.nn", "shx", "osmodel", "my.os"):
        assert refused(module) is None, module


def test_import_callable_refuses_them_as_well(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="'subprocess' is a module of the Python standard library"):
        import_callable("subprocess:run", [tmp_path], "model.torch.factory")
