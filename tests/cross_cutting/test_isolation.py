"""Untrusted children (the model worker, compiler drivers) get one stripped environment and cannot
read a token from their process ancestry (issue 43, items 1 and 8): the gate is not dumpable, the
Action's gate step is its shell exec'd without the token, and a gate running as root runs them as
uid 65534. The hostile code here walks ``os.getppid()`` up to pid 1 reading each ``environ``."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from npu_gate.probe.fake import FakeCompiler
from npu_gate.probe.runner import child_env, run_child
from npu_gate.process import isolation
from npu_gate.process.isolation import NOBODY, child_environment, child_user
from tests.helpers.common import REPO

SECRETS = {"GITHUB_TOKEN": "ghs_job", "GH_TOKEN": "ghs_cli", "ACTIONS_RUNTIME_TOKEN": "rt",
           "ACTIONS_ID_TOKEN_REQUEST_URL": "u", "HF_TOKEN": "hf", "AWS_SECRET_ACCESS_KEY": "aws",
           "NPM_AUTH_TOKEN": "npm", "DOCKER_PASSWORD": "pw", "SSH_AUTH_SOCK": "/s", "OPENAI_API_KEY": "k",
           "INPUT_GITHUB-TOKEN": "t", "NPU_GATE_GITHUB_TOKEN": "t", "GITHUB_ENV": "e", "GITHUB_OUTPUT": "o"}
KEPT = {"PATH": "/bin", "GITHUB_WORKSPACE": "w", "TOKENIZERS_PARALLELISM": "false", "GIT_AUTHOR_NAME": "a",
        "KEYBOARD": "us", "HOME": "/h"}
# Walks the ancestry: every parent's environ, a token found or the error reading it; and who it runs as.
WALK = '''
import json, os, sys
def walk():
    seen, pid = [], os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/status") as f:
            pid = int(next(l for l in f if l.startswith("PPid:")).split()[1])
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                names = [e.split(b"=")[0].decode() for e in f.read().split(b"\\0") if e]
            seen.append([pid, sorted(n for n in names if "TOKEN" in n) or "readable"])
        except OSError as exc:
            seen.append([pid, type(exc).__name__])
    return {"uid": os.getuid(), "ancestors": seen, "env": sorted(os.environ)}
'''


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every user can read (pytest's are its owner's only), so a child may run as another user."""
    folder = Path(tempfile.mkdtemp(prefix="npu-gate-test-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _npu_gate_readable_by_others() -> bool:
    """Whether another user can read this checkout (a clone under ``mktemp -d`` is its owner's only:
    a child cannot run as another user from it, and the gate says so instead)."""
    return isolation.readable_by_others(str(REPO / "npu_gate" / "process" / "isolation.py"))


def _python_for_others() -> str | None:
    """An interpreter another user can run (the gate's may live in root's home)."""
    for python in (sys.executable, "/usr/bin/python3"):
        if Path(python).exists() and isolation.readable_by_others(python):
            return python
    return None


def test_children_get_no_token_workflow_file_or_secret_looking_variable() -> None:
    assert child_environment({**SECRETS, **KEPT}) == KEPT


def test_compiler_drivers_get_the_model_workers_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "environ", {**SECRETS, **KEPT, "PYTHONPATH": "/x", "VIRTUAL_ENV": "/v"})
    assert child_env(tmp_path) == {**KEPT, "TMPDIR": str(tmp_path / "tmp"), "PYTHONUNBUFFERED": "1",
                                   "PYTHONNOUSERSITE": "1"}


def test_a_hostile_compiler_python_reads_no_token(monkeypatch: pytest.MonkeyPatch, open_folder: Path) -> None:
    """A venv's ``bin/python`` that looks for the token in its environment and its ancestors'."""
    python = _python_for_others()
    if python is None or not _npu_gate_readable_by_others():
        pytest.skip("no Python and npu_gate another user can read")
    hostile = open_folder / "python"
    hostile.write_text(f"#!{python}\n{WALK}\njson.dump({{'status': 'failed', **walk()}}, open(sys.argv[-1], 'w'))\n",
                       encoding="utf-8")
    hostile.chmod(0o755)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    run = run_child(FakeCompiler(), hostile, {"model": str(open_folder / "m.onnx")}, open_folder / "work", 30)
    assert run.returncode == 0, run.log
    assert not [n for n in run.response["env"] if n in SECRETS]
    parent = run.response["ancestors"][0]
    assert parent == [os.getpid(), "PermissionError"]  # this process: not dumpable, or another user's
    if os.geteuid() == 0:  # root: the driver ran as nobody, and read nothing of its ancestry
        assert run.response["uid"] == NOBODY
        assert {what for _, what in run.response["ancestors"]} == {"PermissionError"}


def test_a_non_dumpable_gate_hides_its_environment_from_a_child_of_its_user() -> None:
    """The mechanism on its own, as an unprivileged user: a process with a token starts a child that
    reads its parent's environ; after ``hide_environment`` it cannot."""
    python = _python_for_others()
    if python is None or not _npu_gate_readable_by_others():
        pytest.skip("no Python and npu_gate another user can read")
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv")
    child = f"{WALK}\nprint(json.dumps(walk()['ancestors'][0][1]))"
    results = []
    for hide in (False, True):
        gate = (f"import subprocess, sys; sys.path.insert(0, {str(REPO)!r}); from npu_gate.process import isolation\n"
                f"if {hide}: isolation.hide_environment()\n"
                f"subprocess.run([sys.executable, '-c', {child!r}], check=True)")
        out = subprocess.run([*prefix, python, "-I", "-c", gate], capture_output=True, text=True, check=True,
                             env={"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "ghs_job"}, cwd="/")
        results.append(json.loads(out.stdout))
    assert results == [["GITHUB_TOKEN"], "PermissionError"]


def test_who_a_child_runs_as(monkeypatch: pytest.MonkeyPatch, open_folder: Path, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1001)
    monkeypatch.setattr(os, "getuid", lambda: 1001)
    assert child_user([str(open_folder)]) == isolation.ChildUser(None, None, (
        "untrusted code (the model's, the compiler driver's) runs as the gate's own user (uid 1001): it can read "
        "what that user can, the environment of the processes above the gate's included (the gate run as root "
        "gives it a user of its own)"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert child_user([str(open_folder)]) == isolation.ChildUser(NOBODY, NOBODY, None)
    private = tmp_path / "own"
    private.mkdir(mode=0o700)
    tmp_path.chmod(0o700)
    same = "untrusted code (the model's, the compiler driver's) runs as the gate's own user (root)"
    assert child_user([str(open_folder), str(private / "model.py")]).note == (
        f"{same}: {private / 'model.py'} cannot be read by other users")
    assert child_user([str(open_folder)], env={"NPU_GATE_CHILD_USER": "off"}).note == f"{same}: NPU_GATE_CHILD_USER=off"


def test_a_handed_over_folder_is_the_childs_and_reachable(open_folder: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root hands folders to another user")
    work = Path(tempfile.mkdtemp(dir=open_folder))  # 0700, as the gate's work folders are
    inner = work / "attempt-1"
    inner.mkdir(mode=0o700)
    user = child_user([], [str(inner)])
    assert user.uid == NOBODY
    assert os.stat(inner).st_uid == NOBODY
    assert stat.S_IMODE(os.stat(work).st_mode) == 0o701  # passable, not listable


def test_a_driver_cannot_make_the_gate_read_through_a_link(open_folder: Path) -> None:
    """As another user the driver may replace its log with a link to a file only root can read: the
    gate takes its folder back (links removed) before reading it, so the log never holds that file."""
    python = _python_for_others()
    if os.geteuid() != 0 or python is None or not _npu_gate_readable_by_others():
        pytest.skip("only a gate running as root, from a checkout others can read, hands folders to another user")
    secret = open_folder / "secret.txt"
    secret.write_text("ROOT-ONLY\n", encoding="utf-8")
    secret.chmod(0o600)
    hostile = open_folder / "python"
    hostile.write_text(f"#!{python}\nimport os\nos.unlink('compiler.log')\n"
                       f"os.symlink({str(secret)!r}, 'compiler.log')\nos.symlink({str(secret)!r}, 'response.json')\n",
                       encoding="utf-8")
    hostile.chmod(0o755)
    run = run_child(FakeCompiler(), hostile, {"model": str(open_folder / "m.onnx")}, open_folder / "work", 30)
    assert run.returncode == 0
    assert (run.log, run.response) == ([], {})
    assert sorted(p.name for p in (open_folder / "work").iterdir()) == ["request.json", "tmp"]
    assert os.stat(open_folder / "work").st_uid == 0


def test_reclaim_keeps_only_the_childs_regular_files(open_folder: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root hands folders to another user")
    work = open_folder / "work"
    (work / "sub").mkdir(parents=True)
    user = child_user([], [str(work)])
    (work / "kept.txt").write_text("k", encoding="utf-8")
    (work / "sub" / "deep.txt").write_text("d", encoding="utf-8")
    os.symlink("/etc/hostname", work / "link")
    os.symlink("/etc", work / "sub" / "dirlink")
    (open_folder / "secret").write_text("s", encoding="utf-8")
    os.link(open_folder / "secret", work / "sub" / "hard.txt")  # a file of the gate's, by another name
    os.mkfifo(work / "fifo")
    for path in (work / "sub", work / "kept.txt", work / "sub" / "deep.txt"):
        os.lchown(path, NOBODY, NOBODY)
    isolation.reclaim(user, work)
    left = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    assert left == ["kept.txt", "sub", "sub/deep.txt"]
    assert (open_folder / "secret").read_text(encoding="utf-8") == "s"
    assert {os.lstat(work / p).st_uid for p in ["", *left]} == {0}


FACTORY = f'''
import torch
{WALK}
def build():
    import os
    with open(os.path.join(os.path.dirname(__file__), "out", "found.json"), "w") as f:
        json.dump(walk(), f)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1))
'''


def _gate_step(folder: Path, run: str) -> tuple[str, dict[str, object]]:
    """The Action's gate step: its `run` in bash, with a job-wide token in the step's environment."""
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "GITHUB_TOKEN": "ghs_job", "GH_TOKEN": "ghs_cli",
           "NPU_GATE_PYTHON": sys.executable, "NPU_GATE_ARTIFACTS_DIR": str(folder / "npu-gate-out"),
           "NPU_GATE_CACHE_DIR": str(folder / "cache"), "GITHUB_WORKSPACE": str(folder),
           "PYTHONPATH": str(REPO)}
    script = folder / "step.sh"  # as the runner runs a step: its script in a file
    script.write_text(run, encoding="utf-8")
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found: dict[str, object] = json.loads((folder / "out" / "found.json").read_text(encoding="utf-8"))
    walked = found["ancestors"]
    assert isinstance(walked, list)
    pids = [pid for pid, _ in walked]
    found["ancestors"] = walked[:pids.index(os.getpid())]  # up to this test, which stands for the runner
    return proc.stdout, found


@pytest.mark.slow
def test_the_hostile_factory_finds_no_token_above_the_actions_gate(open_folder: Path) -> None:
    (open_folder / "hostile.py").write_text(FACTORY, encoding="utf-8")
    (open_folder / "out").mkdir(mode=0o777)
    (open_folder / "out").chmod(0o777)  # the factory may run as another user
    doc = {"name": "net", "model": {"torch": {"factory": "hostile:build", "exporter": "torchscript", "opset": 17}},
           "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}], "target": {"profile": "demo"}}
    (open_folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
    step = next(s for s in yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
                if s.get("id") == "gate")
    log, found = _gate_step(open_folder, step["run"])
    ancestors = found["ancestors"]
    assert isinstance(ancestors, list) and ancestors  # the gate at least
    assert not [a for a in ancestors if isinstance(a[1], list)], ancestors  # no TOKEN variable anywhere above
    assert "GITHUB_TOKEN" not in found["env"] and "GH_TOKEN" not in found["env"]  # type: ignore[operator]
    report = (open_folder / "npu-gate-out" / "report.md").read_text(encoding="utf-8")
    if found["uid"] == NOBODY:
        assert "::notice::" not in log and "\nNote: " not in report
    else:  # it ran as the gate's user: the job log and the report say so, in one line each
        notes = [line for line in log.splitlines() if line.startswith("::notice::npu-gate: untrusted code")]
        assert len(notes) == 1
        assert f"\nNote: {notes[0][len('::notice::npu-gate: '):]}.\n" in report
    # the step as it was (issue 43): the gate (root reads it) or its shell (a step script) holds the token
    before = step["run"].replace("exec env", "env").replace("-u GITHUB_TOKEN -u GH_TOKEN -u NPU_GATE_GITHUB_TOKEN ", "")
    _, leaked = _gate_step(open_folder, before)
    walked = leaked["ancestors"]
    assert isinstance(walked, list)
    if leaked["uid"] != NOBODY:
        assert [a[1] for a in walked if isinstance(a[1], list)][:1] == [["GH_TOKEN", "GITHUB_TOKEN"]]


def test_an_export_of_another_users_child_is_copied_without_its_links(tmp_path: Path) -> None:
    """What the gate takes from an export folder it handed over: regular files, never through a link."""
    from npu_gate.model.worker import copy_regular_files

    source, folder = tmp_path / "export-1", tmp_path / "work"
    source.mkdir()
    folder.mkdir()
    (source / "model.onnx").write_bytes(b"onnx")
    (source / "model.onnx.data").write_bytes(b"weights")
    (tmp_path / "private").write_text("gate's own", encoding="utf-8")
    os.symlink(tmp_path / "private", source / "stolen.onnx")
    os.mkfifo(source / "fifo")
    (source / "sub").mkdir()
    copy_regular_files(source, folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == {"model.onnx": b"onnx", "model.onnx.data": b"weights"}
