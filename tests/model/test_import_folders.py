"""Issue 18: the contract's code imports like the user's own code, from the contract folder, the
repository root, then model.torch.path; the same whatever the working folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import REPO, RunCli

pytestmark = pytest.mark.torch

NET = "import torch.nn as nn\n\n\ndef build():\n    return nn.Conv2d(3, 4, 3, padding=1)\n"


def _contract(folder: Path, factory: str, path: list[str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    torch = {"factory": factory, "exporter": "torchscript", "opset": 17}
    if path is not None:
        torch["path"] = path
    doc = {"model": {"torch": torch}, "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
           "target": {"profile": "demo"}, "numerics": {"samples": 1}}
    (folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder


def _console_script(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`npu-gate ...` as the console script runs it: sys.path[0] is the script's folder, not the
    working folder (this checkout's npu_gate on PYTHONPATH)."""
    code = "import sys; sys.path.pop(0); from npu_gate.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(REPO), "NPU_GATE_CACHE_DIR": str(cwd / ".cache")}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.mark.slow
def test_a_module_at_the_repository_root_imports_from_a_contract_in_a_subfolder(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "zoo.py").write_text(NET)
    _contract(tmp_path / "contracts" / "unet", "models.zoo:build")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd in (tmp_path, elsewhere):  # from the root and from another folder alike
        run = _console_script(["check", str(tmp_path / "contracts" / "unet"), "-q", "--no-cache"], cwd)
        assert run.returncode == 0, run.stderr


@pytest.mark.slow
def test_model_torch_path_and_the_error_naming_the_folders(tmp_path: Path, run_cli: RunCli,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # without .git, the working folder holding the contract bounds its paths
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "nets.py").write_text(NET)
    contract = _contract(tmp_path / "contracts" / "a", "nets:build")  # no .git: the root is not known
    run = run_cli("check", contract, "-q", "--no-cache")
    assert run.code == 2
    assert ("npu-gate.json: model.torch.factory: cannot import 'nets': No module named 'nets' (searched the "
            "contract folder, the repository root and model.torch.path: ., then the installed packages; add the "
            "folder that holds it to model.torch.path, relative to the contract)") in run.err
    _contract(tmp_path / "contracts" / "a", "nets:build", path=["../../lib"])
    run = run_cli("check", contract, "-q", "--no-cache")
    assert run.code == 0, run.err
    _contract(tmp_path / "contracts" / "a", "nets:build", path=["../../nowhere"])
    run = run_cli("check", contract, "-q", "--no-cache")
    assert run.code == 2 and "model.torch.path[0]: folder '../../nowhere' not found" in run.err
