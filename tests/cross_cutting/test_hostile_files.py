"""Hostile paths and failing writes (issue 43, item 9): what a path names is read only when it
is a regular file (never /dev/zero to the end, never a FIFO waited on), contracts and profiles
have a size limit, outputs are replaced whole (a failed write leaves the old file), a write
that fails names its path, `reduce --timeout` ends the check command's children, and `--debug`
is accepted where the internal-error line advises it."""

from __future__ import annotations

import errno
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

import pytest

from npu_gate.files import MAX_DOCUMENT_BYTES
from tests.helpers import model_zoo
from tests.helpers.common import REPO, RunCli
from tests.helpers.hook_fixtures import write_onnx_contract

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _cli(*args: object, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own: a regression that blocks on a FIFO fails the test at
    ``timeout`` instead of hanging the suite."""
    return subprocess.run([sys.executable, "-m", "npu_gate", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout, check=False)


def test_diff_refuses_a_symlink_to_dev_zero_and_a_fifo(tmp_path: Path, run_cli: RunCli) -> None:
    """`diff` read a .json side to the end: /dev/zero until the OOM killer came, a FIFO forever."""
    contract = write_onnx_contract(tmp_path / "c")
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    run = run_cli("diff", zero, contract)
    assert (run.code, run.out, run.err) == (2, "", f"npu-gate: error: {zero}: not a regular file\n")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    start = time.monotonic()
    done = _cli("diff", contract, fifo, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"npu-gate: error: {fifo}: not a regular file\n")
    assert time.monotonic() - start < 30


def test_a_fifo_named_by_a_contract_or_a_profile_is_refused_without_waiting(tmp_path: Path) -> None:
    """The device timings file and the profile a contract names, a FIFO each: not waited on."""
    timings = write_onnx_contract(tmp_path / "t", device_timings="times.json")
    os.mkfifo(timings.parent / "times.json")
    profile = write_onnx_contract(tmp_path / "p", target={"profile": "mine.json"})
    os.mkfifo(profile.parent / "mine.json")
    done = _cli("check", timings, "--no-cache", "--cache-dir", tmp_path / "cache", timeout=30)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"npu-gate: error: {timings}: device_timings: 'times.json' is not a regular file\n"
    mine = profile.parent / "mine.json"
    done = _cli("validate", mine, timeout=30)
    assert (done.returncode, done.stderr) == (2, f"npu-gate: error: {mine}: not a regular file\n")


def test_a_300_mb_profile_or_contract_is_refused_unread(tmp_path: Path, run_cli: RunCli) -> None:
    """A 300 MB profile took 33 s and 945 MB to parse; past the limit it is refused from its size
    (a sparse file here: nothing of it is read)."""
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(300 * 1024 * 1024)
    limit = f"over the limit of {MAX_DOCUMENT_BYTES:,} bytes for a contract, profile or record file"
    problem = f"{big}: 314,572,800 bytes, {limit}"
    run = run_cli("inspect", tmp_path / "none.onnx", "--profile", big)
    assert (run.code, run.err) == (2, f"npu-gate: error: {problem}\n")
    (tmp_path / ".git").mkdir()  # the contract's repository holds the profile (only such files are read)
    contract = write_onnx_contract(tmp_path / "c", target={"profile": str(big)})
    run = run_cli("check", contract, "--no-cache", "--cache-dir", tmp_path / "cache")
    assert (run.code, run.out) == (2, "")
    assert problem in run.err and run.err.count("\n") == 1
    for command in ("check", "validate"):
        run = run_cli(command, big)
        assert (run.code, run.err) == (2, f"npu-gate: error: {problem}\n")
    just_under = tmp_path / "ok.json"
    just_under.write_text(json.dumps({"pad": "x" * (MAX_DOCUMENT_BYTES - 20)}))
    assert run_cli("validate", just_under).err.count("over the limit") == 0


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file ``write_atomic`` writes is /dev/full underneath: the kernel's own ENOSPC,
    raised by the write (or its flush) after the file was created."""
    real = tempfile.mkstemp

    def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
        fd, name = real(*args, **kwargs)
        full = os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, fd)
        os.close(full)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)  # the module npu_gate.files calls it from


def test_a_failed_json_or_markdown_write_leaves_the_old_file(tmp_path: Path, run_cli: RunCli,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Disk full while --json/--markdown are written: one line naming the file, exit 2, and the
    good file written before is intact (it used to be a 0-byte file), no temporary file left."""
    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.conv_relu().SerializeToString())
    out = tmp_path / "out"
    out.mkdir()
    report, markdown = out / "r.json", out / "r.md"
    assert run_cli("inspect", model, "--json", report, "--markdown", markdown, "-q").code == 1
    before = report.read_bytes(), markdown.read_bytes()
    os.chmod(report, 0o640)
    _full_disk(monkeypatch)
    run = run_cli("inspect", model, "--json", report, "-q")
    assert (run.code, run.err) == (2, f"npu-gate: error: {report}: cannot write: No space left on device\n")
    run = run_cli("inspect", model, "--markdown", markdown, "-q")
    assert (run.code, run.err) == (2, f"npu-gate: error: {markdown}: cannot write: No space left on device\n")
    assert (report.read_bytes(), markdown.read_bytes()) == before
    assert sorted(p.name for p in out.iterdir()) == ["r.json", "r.md"]
    monkeypatch.undo()
    assert run_cli("inspect", model, "--json", report, "-q").code == 1
    assert json.loads(report.read_text())["name"] == "m"
    assert oct(os.stat(report).st_mode & 0o777) == oct(0o640)  # a replaced file keeps its permissions


def test_outputs_through_a_symlink_or_to_a_device_are_written_there(tmp_path: Path, run_cli: RunCli) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.conv_relu().SerializeToString())
    real = tmp_path / "real.json"
    link = tmp_path / "link.json"
    real.write_text("old")
    link.symlink_to(real)
    assert run_cli("inspect", model, "--json", link, "-q").code == 1
    assert link.is_symlink() and json.loads(real.read_text())["name"] == "m"
    run = run_cli("inspect", model, "--json", "/dev/null", "-q")
    assert (run.code, run.err) == (1, "")
    run = run_cli("inspect", model, "--json", "/dev/full", "-q")  # a device: written in place, ENOSPC
    assert (run.code, run.err) == (2, "npu-gate: error: /dev/full: cannot write: No space left on device\n")


def test_disk_full_on_out_names_the_bundle_and_keeps_the_previous_one(tmp_path: Path, run_cli: RunCli,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`check --out DIR` on a full disk was "internal error: OSError"; now one line naming DIR,
    and the bundle already there stays as it was (the new one is staged beside it)."""
    from npu_gate.evidence import bundle

    contract = write_onnx_contract(tmp_path / "c")
    out = tmp_path / "bundle"
    assert run_cli("check", contract, "--no-cache", "--cache-dir", tmp_path / "cache", "--out", out, "-q").code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    def full(*args: object, **kwargs: object) -> NoReturn:
        raise ENOSPC

    monkeypatch.setattr(bundle, "write_npz", full)
    run = run_cli("check", contract, "--no-cache", "--cache-dir", tmp_path / "cache", "--out", out, "-q")
    assert (run.code, run.out) == (2, "")
    assert run.err == f"npu-gate: error: {out}: cannot write the evidence bundle: No space left on device\n"
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder left


def test_disk_full_on_reduce_out_names_it(tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    from npu_gate.commands import reduce

    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.conv_relu().SerializeToString())
    out = tmp_path / "r.onnx"
    out.write_bytes(b"previous")

    def full(*args: object, **kwargs: object) -> NoReturn:
        raise ENOSPC

    monkeypatch.setattr(reduce, "write_atomic", full)
    check = shlex.join([sys.executable, "-c", "import sys; sys.exit(1)", "{model}"])
    run = run_cli("reduce", model, "--check", check, "--out", out, "-q")
    assert (run.code, run.err) == (2, f"npu-gate: error: {out}: cannot write: No space left on device\n")
    assert out.read_bytes() == b"previous"


_CHILD = ("import subprocess, sys, time\n"
          "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
          "open(sys.argv[1], 'a').write(f'{child.pid}\\n')\n"
          "{end}\n")


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie counts: this container's init may not reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def test_reduce_timeout_kills_the_check_command_s_children(tmp_path: Path, run_cli: RunCli) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.conv_relu().SerializeToString())
    pids = tmp_path / "pids"
    script = _CHILD.replace("{end}", "time.sleep(60)")
    check = shlex.join([sys.executable, "-c", script, str(pids), "{model}"])
    run = run_cli("reduce", model, "--check", check, "--timeout", "2", "-q", "--out", tmp_path / "r.onnx")
    assert run.code == 2 and "(timed out)" in run.err
    assert len(_pids(pids)) == 1
    deadline = time.monotonic() + 5
    while not all(_gone(p) for p in _pids(pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in _pids(pids))


def test_a_child_left_behind_neither_survives_nor_holds_the_step(tmp_path: Path, run_cli: RunCli) -> None:
    """The command fails at once but leaves a child holding its output: the step ends with the
    command (it waited for the child's end before: a timeout, counted as not failing)."""
    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.conv_relu().SerializeToString())
    pids = tmp_path / "pids"
    check = shlex.join([sys.executable, "-c", _CHILD.replace("{end}", "sys.exit(1)"), str(pids), "{model}"])
    start = time.monotonic()
    run = run_cli("reduce", model, "--check", check, "--timeout", "30", "-q", "--out", tmp_path / "r.onnx")
    assert (run.code, run.err) == (0, "")
    assert time.monotonic() - start < 30
    time.sleep(0.2)
    assert len(_pids(pids)) >= 2 and all(_gone(p) for p in _pids(pids))


def test_debug_is_accepted_after_the_command(monkeypatch: pytest.MonkeyPatch, run_cli: RunCli, tmp_path: Path) -> None:
    """The internal-error line says "rerun with --debug": `check C --debug` was refused (argparse:
    unrecognized arguments); now every command and subcommand takes it."""
    from npu_gate.cli import build_parser

    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.conv_relu().SerializeToString())

    def boom(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("kaboom")

    monkeypatch.setattr("npu_gate.pipeline.inspect_model", boom)
    assert run_cli("inspect", model).err == ("npu-gate: internal error: RuntimeError: kaboom "
                                             "(rerun with --debug for the traceback)\n")
    with pytest.raises(RuntimeError, match="kaboom"):
        run_cli("inspect", model, "--debug")
    with pytest.raises(RuntimeError, match="kaboom"):
        run_cli("--debug", "inspect", model)
    parser = build_parser()
    for argv in (["check", "c.json", "--debug"], ["profile", "show", "demo", "--debug"],
                 ["probe", "setup", "rknn", "v", "--debug"], ["merge", "a.json", "--debug"], ["rules", "--debug"]):
        assert parser.parse_args(argv).debug is True, argv
    assert parser.parse_args(["check", "c.json"]).debug is False
