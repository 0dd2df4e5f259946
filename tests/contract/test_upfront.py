"""`check a b c` validates every contract before any model runs (issue 16, bug 3): the
samples file's arrays, the metric's and a replacement's modules, a replacement model's inputs
and the device timings are checked when the contract is loaded, so a bad `b` stops the run
before `a`'s model runs or its verdict is printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.common import REPO, CliRun
from tests.helpers.hook_fixtures import tiny_model, write_onnx_contract

Run = Callable[..., CliRun]
ROWS = np.zeros((2, 1, 4), np.float32)  # two samples of the contract's x [1, 4]

SEARCHED = (" (searched the contract folder, the repository root and model.torch.path: ., then the installed "
            "packages; add the folder that holds it to model.torch.path, relative to the contract)")


def _pair(tmp_path: Path, **b_extra: Any) -> tuple[Path, Path]:
    """``a``: a valid ONNX contract that passes; ``b``: the same model with ``b_extra``."""
    a = write_onnx_contract(tmp_path / "a")
    b = write_onnx_contract(tmp_path / "b", **b_extra)
    return a, b


def _stopped_before_a(run: CliRun, cache_dir: Path) -> list[str]:
    """Exit 2, nothing on stdout (no verdict of `a`), no result stored (no model ran); the
    problem lines, each without its "npu-gate: error: " prefix."""
    assert run.code == 2, run
    assert run.out == ""
    assert [p for p in cache_dir.rglob("*") if p.is_file()] == []
    lines = run.err.splitlines()
    assert all(line.startswith("npu-gate: error: ") for line in lines), lines
    return [line.removeprefix("npu-gate: error: ") for line in lines]


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _samples(folder: Path, write: Callable[[Path], None] | None) -> None:
    if write is not None:
        write(folder / "real.npz")


def _text(path: Path) -> None:
    path.write_text("x,y\n1,2\n")


def _npy(path: Path) -> None:
    with open(path, "wb") as f:
        np.save(f, ROWS)


def _wrong_name(path: Path) -> None:
    np.savez(path, images=ROWS)


def _wrong_shape(path: Path) -> None:
    np.savez(path, x=np.zeros((2, 1, 5), np.float32))


def _folder(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize(("write", "problem"), [
    (None, "{b}: numerics.samples_file: file 'real.npz' not found"),  # was already checked up front
    (_folder, "{b}: numerics.samples_file: 'real.npz' is not a regular file"),
    (_text, "{npz}: numerics.samples_file: cannot read: not an .npz file (numpy.savez writes one: "
            "a zip of one .npy array per input)"),
    (_npy, "{npz}: numerics.samples_file: cannot read: a .npy file holds one array; expected an .npz "
           "with one array per input (numpy.savez(file, name=rows, ...))"),
    (_wrong_name, "{npz}: numerics.samples_file: no array for input(s) x"),
    (_wrong_shape, "{npz}: numerics.samples_file: array x: per-sample shape [1, 5], "
                   "contract inputs[0].shape [1, 4] (sample k in row k)"),
], ids=["missing", "folder", "not-npz", "npy", "wrong-name", "wrong-shape"])
def test_a_bad_samples_file_in_b_stops_before_a_runs(tmp_path: Path, run_cli: Run, cache_dir: Path,
                                                     write: Callable[[Path], None] | None, problem: str) -> None:
    a, b = _pair(tmp_path, numerics={"samples_file": "real.npz"})
    _samples(b.parent, write)
    lines = _stopped_before_a(run_cli("check", a, b, "--cache-dir", cache_dir), cache_dir)
    assert lines == [problem.format(b=b, npz=b.parent / "real.npz")]


def test_every_contract_s_problems_are_listed_at_once(tmp_path: Path, run_cli: Run, cache_dir: Path) -> None:
    a, b = _pair(tmp_path, numerics={"samples_file": "real.npz"})
    c = write_onnx_contract(tmp_path / "c", numerics={"samples_file": "real.npz"},
                            metric={"callable": "nomod:score"})
    _wrong_name(b.parent / "real.npz")
    _wrong_shape(c.parent / "real.npz")
    lines = _stopped_before_a(run_cli("check", a, b, c, "--cache-dir", cache_dir), cache_dir)
    assert lines == [f"{b.parent / 'real.npz'}: numerics.samples_file: no array for input(s) x",
                     f"{c}: metric.callable: cannot import 'nomod': No module named 'nomod'{SEARCHED}",
                     f"{c.parent / 'real.npz'}: numerics.samples_file: array x: per-sample shape [1, 5], "
                     "contract inputs[0].shape [1, 4] (sample k in row k)"]


def test_a_cached_a_is_not_printed_before_b_s_problem(tmp_path: Path, run_cli: Run, cache_dir: Path) -> None:
    """`a` answered from the cache: still nothing of it before `b`'s problem stops the run."""
    a, b = _pair(tmp_path, numerics={"samples_file": "real.npz"})
    assert run_cli("check", a, "--cache-dir", cache_dir, "-q").code == 0  # a's result is stored
    _wrong_name(b.parent / "real.npz")
    run = run_cli("check", a, b, "--cache-dir", cache_dir)
    assert (run.code, run.out) == (2, "")
    assert run.err == f"npu-gate: error: {b.parent / 'real.npz'}: numerics.samples_file: no array for input(s) x\n"


@pytest.mark.parametrize(("extra", "problem"), [
    ({"metric": {"callable": "nomod:score"}},
     "{b}: metric.callable: cannot import 'nomod': No module named 'nomod'" + SEARCHED),
    ({"metric": {"callable": "nopkg.sub:score"}},
     "{b}: metric.callable: cannot import 'nopkg.sub': No module named 'nopkg'" + SEARCHED),
    ({"replacement": {"onnx": "other.onnx"}},
     "{b}: replacement.onnx: other.onnx has input(s) images, the contract has x"),
], ids=["metric-module", "metric-package", "replacement-inputs"])
def test_a_bad_metric_or_replacement_in_b_stops_before_a_runs(tmp_path: Path, run_cli: Run, cache_dir: Path,
                                                              extra: dict[str, Any], problem: str) -> None:
    a, b = _pair(tmp_path, **extra)
    other = tiny_model()
    other.graph.input[0].name = "images"
    for node in other.graph.node:
        node.input[:] = ["images" if name == "x" else name for name in node.input]
    (b.parent / "other.onnx").write_bytes(other.SerializeToString())
    lines = _stopped_before_a(run_cli("check", a, b, "--cache-dir", cache_dir), cache_dir)
    assert lines == [problem.format(b=b)]


@pytest.mark.torch
def test_a_replacement_factory_whose_module_is_missing_stops_before_a_runs(tmp_path: Path, run_cli: Run,
                                                                          cache_dir: Path) -> None:
    a, b = _pair(tmp_path, replacement={"torch": {"factory": "nomod:build"}})
    lines = _stopped_before_a(run_cli("check", a, b, "--cache-dir", cache_dir), cache_dir)
    assert lines == [f"{b}: replacement.torch.factory: cannot import 'nomod': No module named 'nomod'{SEARCHED}"]


def test_bad_device_timings_in_b_stop_before_a_runs(tmp_path: Path, run_cli: Run, cache_dir: Path) -> None:
    a, b = _pair(tmp_path, device_timings="board.csv")
    (b.parent / "board.csv").write_text("scope,key,ms\nmodel,m,fast\n")
    lines = _stopped_before_a(run_cli("check", a, b, "--cache-dir", cache_dir), cache_dir)
    assert lines == [f"{b.parent / 'board.csv'}: row 2: ms 'fast' is not a finite number of milliseconds >= 0"]


def test_a_metric_module_is_found_not_imported_by_the_contract_check(tmp_path: Path, run_cli: Run) -> None:
    """The metric's module is imported (its code runs) only when its own contract is gated,
    as a torch factory is: `validate` finds the module and runs none of it."""
    _, b = _pair(tmp_path, metric={"callable": "task_metric:score"})
    (b.parent / "task_metric.py").write_text("raise SystemExit('imported')\n")
    assert run_cli("validate", b).code == 0
    run = run_cli("check", b, "--no-cache")
    assert run.code == 2 and "metric.callable: importing 'task_metric' raised SystemExit: imported" in run.err


def test_validate_reads_the_samples_file(tmp_path: Path, run_cli: Run) -> None:
    _, b = _pair(tmp_path, numerics={"samples_file": "real.npz"})
    _wrong_shape(b.parent / "real.npz")
    run = run_cli("validate", b)
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {b.parent / 'real.npz'}: numerics.samples_file: array x: per-sample "
                       "shape [1, 5], contract inputs[0].shape [1, 4] (sample k in row k)\n")


def test_the_samples_file_is_read_once_per_contract(tmp_path: Path, run_cli: Run, cache_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    a = write_onnx_contract(tmp_path / "a", tiny_model(cpu_op="Relu"), numerics={"samples_file": "real.npz"})
    b = write_onnx_contract(tmp_path / "b", tiny_model(cpu_op="Relu"), numerics={"samples_file": "real.npz"})
    for contract in (a, b):
        np.savez(contract.parent / "real.npz", x=ROWS)
    from npu_gate.contract import samples_file

    reads: list[str] = []
    load = samples_file.open_npz

    def counted(file: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(str(file))
        return load(file, *args, **kwargs)

    monkeypatch.setattr(samples_file, "open_npz", counted)
    run = run_cli("check", a, "--cache-dir", cache_dir)  # one contract: the lookup, then the run
    assert run.code == 1
    assert reads == [str(a.parent / "real.npz")]
    reads.clear()
    run = run_cli("check", a, b, "--cache-dir", cache_dir, "--no-cache")  # several: loaded in full up front
    assert run.code == 1
    assert reads == [str(a.parent / "real.npz"), str(b.parent / "real.npz")]


def test_a_hit_with_a_samples_file_imports_no_numpy(tmp_path: Path, run_cli: Run, cache_dir: Path) -> None:
    """The lookup's load does not read the samples file: a hit (of one contract or several)
    still imports none of onnx, onnxruntime, numpy or torch."""
    a, b = _pair(tmp_path, numerics={"samples_file": "real.npz"}, metric={"callable": "task_metric:score"})
    np.savez(b.parent / "real.npz", x=ROWS)
    (b.parent / "task_metric.py").write_text("def score(reference, candidate, samples):\n    return {}\n")
    argv = ["check", str(a), str(b), "--cache-dir", str(cache_dir)]
    assert run_cli(*argv, "-q").code == 0  # fills the cache
    for args, hits in ((argv, 2), (["check", str(b), "--cache-dir", str(cache_dir)], 1)):
        probe = (
            "import json, sys\n"
            "from npu_gate.cli import main\n"
            f"code = main({args!r})\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'onnx', 'onnxruntime', 'numpy', 'torch'})\n"
            "print(json.dumps({'code': code, 'heavy': heavy}))\n"
        )
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                              env=os.environ | {"PYTHONPATH": str(REPO)}, cwd=tmp_path, check=False)
        assert done.returncode == 0, done.stderr
        *lines, last = done.stdout.strip().splitlines()
        assert json.loads(last) == {"code": 0, "heavy": []}
        assert sum("result from cache" in line for line in lines) == hits, lines
