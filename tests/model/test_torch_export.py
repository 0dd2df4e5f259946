"""The torch path end to end: export (both exporters), numerics, export failures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.helpers.common import REPO, RunCli, validate_result

pytestmark = pytest.mark.torch

SEED = REPO / "examples" / "seed-hardswish"


@pytest.mark.slow
def test_seed_example_fails_on_clip(tmp_path: Path, run_cli: RunCli) -> None:
    run = run_cli("check", SEED, "--json", tmp_path / "r.json", "--markdown", tmp_path / "r.md",
                  "--log", tmp_path / "log.txt")
    assert run.code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    assert doc["verdict"] == "fail"
    s = doc["summary"]
    assert (s["cpu_nodes"], s["npu_partitions"], s["boundary_bytes"]) == (1, 2, 12288)
    assert [n["name"] for n in doc["nodes"] if n["placement"] == "cpu"] == ["/Clip"]
    assert [(f["rule"], f.get("node")) for f in doc["findings"]] == [
        ("unsupported-op", "/Clip"), ("gate-exceeded", None), ("gate-exceeded", None)]
    assert doc["model"]["exporter"] == "torchscript" and doc["model"]["opset"] == 17
    assert doc["stages"]["numerics"]["status"] == "ok"
    assert [(c["passed"], c["samples"]) for c in doc["numerics"]] == [(True, 4)]
    assert doc["numerics"][0]["max_abs_err"] < 1e-5
    # The exporter's deprecation chatter went into the log, not onto the terminal.
    assert "TorchScript" in (tmp_path / "log.txt").read_text()
    assert "Warning" not in run.out and run.err == ""
    assert "Static prediction against profile `demo` (illustrative)" in (tmp_path / "r.md").read_text()


@pytest.mark.slow
def test_dynamo_exporter_gives_the_same_placement(tmp_path: Path, run_cli: RunCli) -> None:
    shutil.copy(SEED / "seed_net.py", tmp_path)
    contract = json.loads((SEED / "npu-gate.json").read_text())
    contract["model"]["torch"]["exporter"] = "dynamo"
    contract["model"]["torch"]["opset"] = 18
    (tmp_path / "npu-gate.json").write_text(json.dumps(contract))
    run = run_cli("check", tmp_path, "--json", tmp_path / "r.json", "-q")
    assert run.code == 1 and run.err == ""
    doc = json.loads((tmp_path / "r.json").read_text())
    s = doc["summary"]
    assert (s["cpu_nodes"], s["npu_partitions"], s["boundary_bytes"]) == (1, 2, 12288)
    assert [n["op_type"] for n in doc["nodes"] if n["placement"] == "cpu"] == ["Clip"]
    assert doc["model"]["exporter"] == "dynamo"
    assert doc["numerics"][0]["passed"] is True
    # the dynamo export keeps its weights in model.onnx.data: suggestions read them from there
    assert doc["stages"]["suggestions"]["status"] == "ok"


def _write_factory(folder: Path, body: str, **contract_extra: Any) -> Path:
    (folder / "net.py").write_text("import torch\nfrom torch import nn\n\n" + body, encoding="utf-8")
    doc = {"model": {"torch": {"factory": "net:build", "exporter": "torchscript", "opset": 17}},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32", "range": [-1, 1]}],
           "target": {"profile": "demo"}}
    doc.update(contract_extra)
    (folder / "npu-gate.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.slow
def test_export_failure_is_a_finding(tmp_path: Path, run_cli: RunCli) -> None:
    _write_factory(tmp_path, (
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        raise RuntimeError('unsupported thing in forward')\n\n"
        "def build():\n    return Net()\n"))
    run = run_cli("check", tmp_path, "--json", tmp_path / "r.json", "--log", tmp_path / "log.txt")
    assert run.code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    assert [(f["rule"], f["severity"]) for f in doc["findings"]] == [("export-failed", "error")]
    assert "RuntimeError: unsupported thing in forward" in doc["findings"][0]["message"]
    assert doc["stages"]["export"]["status"] == "failed"
    assert doc["stages"]["numerics"] == {"status": "skipped", "reason": "export failed"}
    assert "Traceback" in (tmp_path / "log.txt").read_text()


@pytest.mark.slow
def test_dynamo_export_failure_names_the_cause(tmp_path: Path, run_cli: RunCli) -> None:
    """The dynamo exporter wraps the model's own error in a TorchExportError whose first line is
    boilerplate ending in "Next steps:" (with colour codes): the finding leads with the cause."""
    _write_factory(tmp_path, (
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        raise RuntimeError('unsupported thing in forward')\n\n"
        "def build():\n    return Net()\n"),
        model={"torch": {"factory": "net:build", "exporter": "dynamo", "opset": 18}})
    run = run_cli("check", tmp_path, "--json", tmp_path / "r.json", "-q")
    assert run.code == 1
    [finding] = json.loads((tmp_path / "r.json").read_text())["findings"]
    assert finding["rule"] == "export-failed"
    assert finding["message"].startswith(
        "dynamo export failed: RuntimeError: unsupported thing in forward (from TorchExportError: ")
    assert finding["message"].endswith(")") and "\x1b" not in finding["message"]


def test_export_error_text() -> None:
    from npu_gate.model.export import export_error

    wrapper = RuntimeError("Failed. \x1b[96mThis is step 1/3\x1b[0m of it. Next steps:\n- a")
    wrapper.__cause__ = ValueError("the real problem\nmore lines")  # as `raise wrapper from cause` sets it
    assert export_error(wrapper) == "ValueError: the real problem (from RuntimeError: Failed. This is step 1/3 of it.)"
    assert export_error(KeyError("k")) == "KeyError: 'k'"  # no cause: the error itself, as before


@pytest.mark.slow
def test_what_the_factory_module_prints_at_import_goes_to_the_log(tmp_path: Path) -> None:
    """A factory's module (or torchvision, timm under it) may print or warn when imported: that
    is conversion output too, for the log and never for the terminal (stdout stays the summary)."""
    _write_factory(tmp_path, (
        "import os, sys, warnings\n"
        "print('printed at import')\n"
        "print('stderr at import', file=sys.stderr)\n"
        "os.write(2, b'fd 2 at import\\n')\n"
        "warnings.warn('warned at import')\n\n"
        "def build():\n    print('printed by the factory')\n    return nn.Identity()\n"))
    run = subprocess.run([sys.executable, "-m", "npu_gate", "check", str(tmp_path), "--no-cache", "-q",
                          "--log", str(tmp_path / "log.txt")],
                         capture_output=True, text=True, cwd=REPO, check=False)
    assert (run.returncode, run.stdout, run.stderr) == (1, "", "")  # Identity: not in the demo profile
    log = (tmp_path / "log.txt").read_text().splitlines()
    assert log[:5] == ["fd 2 at import", "printed at import", "stderr at import",
                       f"UserWarning: warned at import ({tmp_path / 'net.py'}:8)", "printed by the factory"]


SYS_EXIT_CASES = [
    # sys.exit(0) in user code ended npu-gate with exit 0, a "pass" with no report.
    ("import sys\nsys.exit(0)\n\ndef build():\n    return nn.Identity()\n", 2,
     "model.torch.factory: importing 'net' raised SystemExit: 0"),
    ("import sys\n\ndef build():\n    sys.exit(0)\n", 2, "model.torch.factory: net:build() raised SystemExit: 0"),
    ("import sys\n\nclass Net(nn.Module):\n    def forward(self, x):\n        sys.exit(0)\n\n"
     "def build():\n    return Net()\n", 1, "export-failed: torchscript export failed: SystemExit: 0"),
    ("import sys\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
     "        if not torch.onnx.is_in_onnx_export():\n            sys.exit(0)\n        return x + 1\n\n"
     "def build():\n    return Net()\n", 1, "numerics-failed: PyTorch module: SystemExit: 0"),
]


@pytest.mark.parametrize(("body", "code", "says"), SYS_EXIT_CASES, ids=["import", "factory", "export", "numerics"])
@pytest.mark.slow
def test_sys_exit_in_user_code_does_not_end_the_gate(tmp_path: Path, run_cli: RunCli, body: str, code: int,
                                                     says: str) -> None:
    _write_factory(tmp_path, body)
    run = run_cli("check", tmp_path, "--no-cache", "-q", "--json", tmp_path / "r.json")
    assert run.code == code
    if code == 2:
        assert run.err == f"npu-gate: error: {tmp_path / 'npu-gate.json'}: {says}\n"
    else:
        doc = json.loads((tmp_path / "r.json").read_text())
        assert [f"{f['rule']}: {f['message']}" for f in doc["findings"] if f["severity"] == "error"] == [says]


def test_sys_exit_escaping_elsewhere_is_exit_2(monkeypatch: pytest.MonkeyPatch, run_cli: RunCli,
                                               tmp_path: Path) -> None:
    """The CLI's safety net: npu-gate raises no SystemExit while it runs a command."""
    _write_factory(tmp_path, "def build():\n    return nn.Identity()\n")

    def leaves(*args: object, **kwargs: object) -> NoReturn:
        raise SystemExit(0)

    monkeypatch.setattr("npu_gate.pipeline.check_contract", leaves)
    run = run_cli("check", tmp_path, "--no-cache")
    assert (run.code, run.out) == (2, "")
    assert run.err == "npu-gate: error: user code called sys.exit(0); the gate could not run\n"


@pytest.mark.slow
def test_exporter_cpp_output_goes_to_the_log_not_to_a_buffered_stdout(tmp_path: Path) -> None:
    # torchscript prints "Torch IR graph at exception" from C++ when a symbolic fails. With
    # stdout a pipe and no PYTHONUNBUFFERED that text sat in C's buffer past the capture and
    # reached the terminal at exit, even with -q.
    _write_factory(tmp_path, (
        "def build():\n    return nn.AdaptiveAvgPool2d(3)\n"),
        inputs=[{"name": "x", "shape": [1, 2, 4, 4], "dtype": "float32"}])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    run = subprocess.run([sys.executable, "-m", "npu_gate", "check", str(tmp_path), "--no-cache", "-q",
                          "--json", str(tmp_path / "r.json"), "--log", str(tmp_path / "log.txt")],
                         capture_output=True, text=True, cwd=REPO, env=env, check=False)
    assert (run.returncode, run.stdout, run.stderr) == (1, "", "")
    doc = json.loads((tmp_path / "r.json").read_text())
    [finding] = doc["findings"]
    assert finding["rule"] == "export-failed"
    assert "output size that are not factor of input size" in finding["message"]
    assert "Torch IR graph at exception" in (tmp_path / "log.txt").read_text()


@pytest.mark.slow
def test_multihead_attention_exports_with_torchscript(tmp_path: Path, run_cli: RunCli) -> None:
    # Exported under no_grad, eval-mode MultiheadAttention took PyTorch's fast path
    # (aten::_native_multi_head_attention), which torchscript cannot export: export-failed.
    _write_factory(tmp_path, (
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)\n\n"
        "    def forward(self, x):\n"
        "        return self.attn(x, x, x, need_weights=False)[0]\n\n"
        "def build():\n    return Net()\n"),
        inputs=[{"name": "x", "shape": [1, 5, 8], "dtype": "float32"}], target={"profile": "rknn-rk3588"})
    run = run_cli("check", tmp_path, "--json", tmp_path / "r.json", "-q")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert (run.code, doc["stages"]["export"]["status"], doc["findings"]) == (0, "ok", [])
    assert doc["numerics"][0]["passed"] is True
    assert doc["ops"]["MatMul"] >= 2


@pytest.mark.slow
def test_numeric_mismatch_is_caught(tmp_path: Path, run_cli: RunCli) -> None:
    # Tracing bakes in the branch taken for the export sample; other samples take the other one.
    _write_factory(tmp_path, (
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.sum() > 0:\n"
        "            return x * 2\n"
        "        return x * 3\n\n"
        "def build():\n    return Net()\n"), numerics={"samples": 8, "seed": 0})
    run = run_cli("check", tmp_path, "--json", tmp_path / "r.json", "-q")
    assert run.code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    mismatches = [f for f in doc["findings"] if f["rule"] == "numeric-mismatch"]
    assert len(mismatches) == 1
    assert doc["numerics"][0]["passed"] is False
    assert doc["numerics"][0]["max_abs_err"] > 0.01


@pytest.mark.slow
def test_samples_zero_skips_numerics(tmp_path: Path, run_cli: RunCli) -> None:
    _write_factory(tmp_path, (
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * 2\n\n"
        "def build():\n    return Net()\n"), numerics={"samples": 0})
    run = run_cli("check", tmp_path, "--json", tmp_path / "r.json", "-q")
    assert run.code == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["numerics"] == []
    assert doc["stages"]["numerics"] == {"status": "skipped", "reason": "numerics.samples is 0"}


@pytest.mark.slow
def test_one_tensor_returned_twice_gets_two_named_rows(tmp_path: Path, run_cli: RunCli) -> None:
    # torchscript lists the tensor of `return y, y` as two graph outputs of one name ("2"):
    # the numerics table showed two identical rows.
    _write_factory(tmp_path, (
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        y = x * 2\n"
        "        return y, y\n\n"
        "def build():\n    return Net()\n"))
    run = run_cli("check", tmp_path, "--json", tmp_path / "r.json", "-q")
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    assert run.code == 0
    assert [(n["output"], n["passed"]) for n in doc["numerics"]] == [("2 (output 1)", True), ("2 (output 2)", True)]


@pytest.mark.slow
def test_a_factory_that_cannot_be_imported_leaves_its_traceback_in_the_log(tmp_path: Path, run_cli: RunCli) -> None:
    # Exit 2 with one line on the terminal; the details (what the module printed, the
    # traceback down to the user's line) belong in --log.
    _write_factory(tmp_path, "print('hello at import')\nimport nonexistent_pkg_xyz  # noqa\n\n"
                             "def build():\n    return nn.ReLU()\n")
    log = tmp_path / "log.txt"
    run = run_cli("check", tmp_path, "--log", log)
    assert run.code == 2
    assert run.err.splitlines() == [
        f"npu-gate: error: {tmp_path / 'npu-gate.json'}: model.torch.factory: cannot import 'net': "
        "No module named 'nonexistent_pkg_xyz'",
        f"npu-gate: details in {log}"]
    lines = log.read_text().splitlines()
    assert lines[0] == "hello at import"
    assert 'net.py", line 5, in <module>' in "\n".join(lines)
    assert lines[-1] == "ModuleNotFoundError: No module named 'nonexistent_pkg_xyz'"
