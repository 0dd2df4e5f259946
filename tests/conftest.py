"""Shared fixtures: run the CLI in-process, write contracts and models, compare with golden files.

What tests import (REPO, CliRun, the schema checks, model builders) lives in tests/helpers/."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import resource
import sys
import textwrap
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any

import onnx
import pytest

from npu_gate.cli import main
from tests.helpers.common import REPO, CliRun, Golden, RunCli, SaveModel, WriteContract


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite golden files under tests/golden/ from the current output")


# --- The `torch` mark, from what a test imports -------------------------------------------------
# A test is marked `torch` when its module imports torch at the top (itself or through a tests.helpers
# module that does), when its own body or one of its fixtures imports torch, or when it says so with
# @pytest.mark.torch (a test whose torch runs in the user-code child: a torch contract). Without torch
# installed, torch-marked tests are skipped with that reason. And so a test cannot escape the mark
# silently: a test not marked `torch` during which this repository's code (npu_gate/, tests/) first
# imports torch in the test process fails, naming itself (in `make check`, `-m "not torch"`, nothing
# marked imports torch first). A library that imports torch only when it is installed (onnxruntime's
# QNN quantizer) does not count: the test runs without torch too.

HAS_TORCH = importlib.util.find_spec("torch") is not None


class _TorchImportWatch:
    """A meta path finder that only looks: which files asked for torch (it finds nothing itself)."""

    def __init__(self) -> None:
        self.askers: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "torch":
            frame: FrameType | None = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith("<"):  # importlib's frozen frames
                frame = frame.f_back
            self.askers.append(frame.f_code.co_filename if frame is not None else "?")
        return None


_torch_watch = _TorchImportWatch()
sys.meta_path.insert(0, _torch_watch)


def _repo_code_imported_torch(torch_before: bool) -> bool:
    """Whether torch was first imported since torch_before was read, asked for by npu_gate/ or tests/."""
    if torch_before or "torch" not in sys.modules:
        return False
    return any(Path(f).is_relative_to(REPO) and not any(part.startswith(".venv") for part in Path(f).parts)
               for f in _torch_watch.askers)


def _imports_torch(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "torch":
            return True
    return False


def _top_level(tree: ast.Module) -> ast.Module:
    """The module without its function and class bodies (imports run at import time)."""
    kept = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return ast.Module(body=kept, type_ignores=[])


@cache
def _module_imports_torch(path: Path) -> bool:
    """Whether importing this file imports torch: its own top-level imports or a tests.* module's."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = _top_level(tree)
    if _imports_torch(top):
        return True
    for node in ast.walk(top):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name.split(".")[0] == "tests":
                helper = REPO.joinpath(*name.split("."))
                for candidate in (helper.with_suffix(".py"), helper / "__init__.py"):
                    if candidate.is_file() and candidate != path and _module_imports_torch(candidate):
                        return True
    return False


@cache
def _function_imports_torch(func: Callable[..., Any]) -> bool:
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return False
    return _imports_torch(ast.parse(source))


def _needs_torch(item: pytest.Function) -> bool:
    if item.get_closest_marker("torch"):
        return True
    if _module_imports_torch(Path(item.module.__file__)) or _function_imports_torch(item.function):
        return True
    for defs in item._fixtureinfo.name2fixturedefs.values():
        if any(_function_imports_torch(d.func) for d in defs):
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and _needs_torch(item):
            if not item.get_closest_marker("torch"):
                item.add_marker(pytest.mark.torch)
            if not HAS_TORCH:
                item.add_marker(pytest.mark.skip(reason="needs torch (marked torch), not installed"))


# --- Unmarked slow tests -----------------------------------------------------------------------
# A test over SLOW_SECONDS (env NPU_GATE_SLOW_TEST_SECONDS, default 3) must be marked `slow`, so the
# fast loop stays fast. Measured as CPU time of the test process plus its reaped children (load from
# other processes does not inflate it), or the wall time scaled down by the machine's load per core
# (a test that waits on a sleeping child uses little CPU), whichever is larger, the wall time only while
# the load is at most OVERSUBSCRIBED per core; setup and call count.

SLOW_SECONDS = float(os.environ.get("NPU_GATE_SLOW_TEST_SECONDS", "3"))  # "inf": no check
OVERSUBSCRIBED = 1.25  # load per core above which the wall time is not counted


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_cost: dict[str, tuple[float, float]] = {}  # nodeid -> (cpu, wall) of setup + call


_torch_escaped: set[str] = set()


@contextmanager
def _accounted(item: pytest.Item) -> Iterator[None]:
    """One phase of ``item`` (setup or call): its CPU and wall time, and whether torch came in."""
    cpu, wall, torch_before = _cpu_seconds(), time.perf_counter(), "torch" in sys.modules
    _torch_watch.askers.clear()
    try:
        yield
    finally:
        _account(item, cpu, wall, torch_before)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _accounted(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _accounted(item):
        return (yield)


def _account(item: pytest.Item, cpu: float, wall: float, torch_before: bool) -> None:
    spent = (_cpu_seconds() - cpu, time.perf_counter() - wall)
    before = _cost.get(item.nodeid, (0.0, 0.0))
    _cost[item.nodeid] = (before[0] + spent[0], before[1] + spent[1])
    if _repo_code_imported_torch(torch_before) and not item.get_closest_marker("torch"):
        _torch_escaped.add(item.nodeid)


def _load_per_core() -> float:
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if call.when != "call" or not report.passed:
        return report
    problems = []
    if item.nodeid in _torch_escaped:
        problems.append("imported torch but is not marked `torch`: mark it @pytest.mark.torch")
    cpu, wall = _cost.pop(item.nodeid, (0.0, 0.0))
    load = _load_per_core()
    # the wall time only while the machine is not oversubscribed: past one runnable process per core, a
    # test's wall time measures the others (11.6 s of wall for 1.9 s of CPU at a load of 3.6 per core)
    figure = max(cpu, wall / load) if load <= OVERSUBSCRIBED else cpu
    compiler = any(item.get_closest_marker(m) for m in ("rknn", "qnn", "ethos_u"))  # never in the fast loop
    if figure > SLOW_SECONDS and not compiler and not item.get_closest_marker("slow"):
        problems.append(f"took {figure:.1f} s (CPU {cpu:.1f} s, wall {wall:.1f} s; limit "
                        f"NPU_GATE_SLOW_TEST_SECONDS={SLOW_SECONDS:g}) but is not marked `slow`: "
                        "mark it @pytest.mark.slow")
    if problems:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid}: " + "; ".join(problems)
    return report


# Nothing the tool runs may write into the folder it is started from (a user's repository):
# the suite runs from the repo root, so a stray file there fails the run.
_TOLERATED = {".pytest_cache", "__pycache__", ".venv-rknn", ".venv-qnn", ".coverage"}
_started_with: set[str] = set()


def pytest_sessionstart(session: pytest.Session) -> None:
    _started_with.update(p.name for p in Path.cwd().iterdir())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stray = sorted({p.name for p in Path.cwd().iterdir()} - _started_with - _TOLERATED)
    if stray:
        print(f"\ntests left files in {Path.cwd()}: {', '.join(stray)}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    def run(*args: str) -> CliRun:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run


@pytest.fixture
def save_model(tmp_path: Path) -> SaveModel:
    def save(model: onnx.ModelProto, name: str = "model.onnx") -> Path:
        path = tmp_path / name
        path.write_bytes(model.SerializeToString())
        return path

    return save


@pytest.fixture
def write_contract(tmp_path: Path) -> WriteContract:
    def write(doc: dict[str, Any], name: str = "npu-gate.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        return path

    return write


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """Compare text with tests/golden/<name>; rewrite it with --update-goldens."""
    update = request.config.getoption("--update-goldens")

    def check(name: str, text: str) -> None:
        path = REPO / "tests" / "golden" / name
        if update or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if not update:
                pytest.fail(f"golden file {name} was missing and has been written; rerun")
        assert text == path.read_text(encoding="utf-8"), (
            f"{name} differs from the golden file; rerun with --update-goldens if intended")

    return check


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty result cache: `check` caches by default, and a hit
    left by another test (or the developer's ~/.cache) must never change an output."""
    folder = tmp_path_factory.mktemp("npu-gate-cache")
    monkeypatch.setenv("NPU_GATE_CACHE_DIR", str(folder))
    return folder
