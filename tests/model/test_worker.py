"""The child process that runs a contract's own code (model.worker): its failures are
findings with one line, never an exception in the gate and never a pass; what it does to
its own interpreter does not reach the gate's."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from npu_gate.contract.spec import load_contract
from npu_gate.model import worker
from npu_gate.model.worker import WorkerFailed, read_status
from npu_gate.process.isolation import child_environment

pytestmark = pytest.mark.torch

NET = '''\
import os, sys, time
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        if not torch.is_grad_enabled():  # the eager reference (numerics), not the export
            {reference}
        return torch.relu(self.conv(x))


def build():
    {build}
    return Net()
'''


def _contract(tmp_path: Path, reference: str = "pass", build: str = "pass", **extra: object) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "hostile_net.py").write_text(NET.format(reference=reference, build=build), encoding="utf-8")
    doc = {"name": "net", "model": {"torch": {"factory": "hostile_net:build", "exporter": "torchscript",
                                               "opset": 17}},
           "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
           "target": {"profile": "demo"}, "numerics": {"samples": 2}, **extra}
    (folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder / "npu-gate.json"


def _check(path: Path) -> dict[str, Any]:
    from npu_gate.pipeline import check_contract

    return check_contract(load_contract(path)).to_dict()


def _numerics_failure(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["rule"], f["message"]) for f in doc["findings"] if f["rule"] == "numerics-failed"]


@pytest.mark.slow
def test_an_honest_model_passes_numerics_through_the_child(tmp_path: Path) -> None:
    doc = _check(_contract(tmp_path))
    assert doc["stages"]["numerics"] == {"status": "ok", "samples": 2}
    assert [c["passed"] for c in doc["numerics"]] == [True]


@pytest.mark.slow
def test_a_crash_in_the_reference_is_a_numerics_failure(tmp_path: Path) -> None:
    doc = _check(_contract(tmp_path, reference="os._exit(3)"))
    assert doc["verdict"] == "fail"
    assert _numerics_failure(doc) == [(
        "numerics-failed", "PyTorch module: the model code's process ended (exit code 3) before answering")]


@pytest.mark.slow
def test_a_crash_during_the_export_is_an_export_failure(tmp_path: Path) -> None:
    path = _contract(tmp_path, reference="pass")
    source = path.with_name("hostile_net.py")
    source.write_text(source.read_text().replace("        return torch.relu", "        os._exit(0)\n"
                                                 "        return torch.relu"), encoding="utf-8")
    doc = _check(path)
    assert doc["verdict"] == "fail"
    assert doc["stages"]["export"] == {
        "status": "failed", "reason": "the model code's process ended (exit code 0) before answering"}
    assert [f["rule"] for f in doc["findings"]] == ["export-failed"]


@pytest.mark.slow
def test_a_child_that_forks_and_exits_is_seen_at_once_and_its_session_stopped(tmp_path: Path) -> None:
    """A forked process holding the answer pipe open does not make the gate wait for the limit;
    stopping the child stops every process of its session."""
    pid_file = tmp_path / "grandchild.pid"
    fork = (f"pid = os.fork()\n            if pid:\n                os._exit(5)\n"
            f"            open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n            time.sleep(600)")
    doc = _check(_contract(tmp_path, reference=fork))
    assert _numerics_failure(doc) == [
        ("numerics-failed", "PyTorch module: the model code's process ended (exit code 5) before answering")]
    pid = int(pid_file.read_text())
    status = Path(f"/proc/{pid}/status")
    for _ in range(50):  # killed with the session: gone, or a zombie nobody reaped yet
        if not status.exists() or "State:\tZ" in status.read_text():
            break
        time.sleep(0.1)
    assert not status.exists() or "State:\tZ" in status.read_text()


def test_a_status_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "status-1.json"
    os.mkfifo(path)  # opening it for reading would block until someone writes
    with pytest.raises(WorkerFailed, match="not a regular file"):
        read_status(path)


@pytest.mark.slow
def test_sys_exit_0_in_the_reference_is_not_a_pass(tmp_path: Path) -> None:
    doc = _check(_contract(tmp_path, reference="sys.exit(0)"))
    assert doc["verdict"] == "fail"
    assert _numerics_failure(doc) == [("numerics-failed", "PyTorch module: SystemExit: 0")]


@pytest.mark.slow
def test_a_hang_is_stopped_at_the_time_limit(tmp_path: Path) -> None:
    from npu_gate.model.samples import make_samples

    contract = load_contract(_contract(tmp_path, reference="time.sleep(3600)"))
    with worker.UserCode(contract) as user:
        assert user.build("model.torch").error is None  # within the default limit (it imports torch)
        user.limit = 2.0
        samples = make_samples(contract.inputs, 1, 0)
        with pytest.raises(WorkerFailed, match=r"^the model code did not answer within 2 s \(stopped\)$"):
            user.reference("model.torch", samples)
        with pytest.raises(WorkerFailed, match=r"within 2 s"):  # stopped: later requests fail the same way
            user.export("model.torch", "torchscript", tmp_path)


@pytest.mark.slow
def test_a_garbage_status_is_a_failure_not_data(tmp_path: Path) -> None:
    # The model's code replaces what the child writes its status with.
    doc = _check(_contract(tmp_path, reference="import json; json.dumps = lambda *a, **k: '{\"error\": ['"))
    assert doc["verdict"] == "fail"
    assert _numerics_failure(doc) == [
        ("numerics-failed", "PyTorch module: the model code's process wrote an unreadable status")]


@pytest.mark.slow
def test_what_the_factory_patches_stays_in_the_child(tmp_path: Path) -> None:
    """A factory that forces a pass in the gate's own modules patches only the child's copies."""
    forge = ("import npu_gate.pipeline as p, npu_gate.stages.verdict as v\n"
             "    def forged(result, *a, **k):\n"
             "        result.verdict = 'pass'\n"
             "    v.decide = forged\n"
             "    p.verdict.decide = forged\n"
             "    os.environ['NPU_GATE_FORGED'] = '1'")
    doc = _check(_contract(tmp_path, build=forge, gates={"max_cpu_nodes": 0}, target={"profile": "demo"}))
    assert doc["verdict"] == "fail"
    assert "NPU_GATE_FORGED" not in os.environ


def test_the_child_gets_no_token_or_workflow_files() -> None:
    env = {"PATH": "/bin", "GITHUB_TOKEN": "t", "GH_TOKEN": "t", "ACTIONS_RUNTIME_TOKEN": "t",
           "ACTIONS_ID_TOKEN_REQUEST_URL": "u", "GITHUB_ENV": "e", "GITHUB_PATH": "p", "GITHUB_OUTPUT": "o",
           "GITHUB_STEP_SUMMARY": "s", "GITHUB_WORKSPACE": "w"}
    assert child_environment(env) == {"PATH": "/bin", "GITHUB_WORKSPACE": "w"}


@pytest.mark.parametrize("text", ["", "[", "[1, 2]", '{"error": 3}', '{"log": [1]}', '{"seconds": true}',
                                  '{"bad_input": "yes"}', '{"data": []}', "\udcff"])
def test_read_status_refuses_garbage(tmp_path: Path, text: str) -> None:
    path = tmp_path / "status-1.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(WorkerFailed, match=r"^the model code's process wrote an unreadable status$"):
        read_status(path)


def test_read_status_keeps_errors_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "status-1.json"
    path.write_text(json.dumps({"error": "a\nb", "log": ["x"], "seconds": 1}), encoding="utf-8")
    reply = read_status(path)
    assert (reply.error, reply.log, reply.seconds) == ("a b", ["x"], 1.0)


def test_arrays_that_need_pickle_are_refused(tmp_path: Path) -> None:
    import numpy as np

    path = tmp_path / "outputs.npz"
    np.savez(path, s0o0=np.array([object()], dtype=object))
    with pytest.raises(WorkerFailed, match="unreadable arrays"):
        worker.load_arrays(path)
