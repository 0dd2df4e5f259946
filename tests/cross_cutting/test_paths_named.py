"""Every repository path the package's prose and the user docs name exists (a module that moved
leaves no stale mention behind).

The prose read: the docstrings (module, class, function) and comments of npu_gate/**/*.py, not
their other strings (those are data); the whole text of README.md and docs/*.md (the dated records
under docs/records/ keep the names of their day). The rules, simple on purpose:

- a path is a run of ``folder/`` segments ending in a file name ``.py``, ``.md`` or ``.json``
  (``npu_gate/stages/verdict.py``, ``schemas/result.schema.json``, ``stages/verdict.py``); URLs and
  ``../`` links are skipped (test_docs_links checks the links);
- one whose first folder is a top-level folder of the repository (``ROOTS``) is relative to the root;
- any other is relative to npu_gate/ (``stages/verdict.py``) or to the folder of the file naming it
  (``drivers/_protocol.py`` in npu_gate/probe/, ``profiles/x.md`` in docs/);
- a dotted ``npu_gate.a.b`` names a module or package, or a module and then one name in its source;
- ``ALLOWED`` lists the paths named on purpose that are not the repository's (examples, other projects).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.common import REPO

ROOTS = ("npu_gate", "tests", "docs", "schemas", "bench", "examples")
PATH = re.compile(r"(?<![\w./-])(?:[A-Za-z_][\w.-]*/)+[\w-]+(?:\.[\w-]+)*\.(?:py|md|json)\b")
DOTTED = re.compile(r"(?<![\w.])npu_gate(?:\.[A-Za-z_]\w*)+")
URL = re.compile(r"\w+://\S+")

ALLOWED = {
    "models/zoo.py": "a user's model module, in examples of source attribution",
    "site-packages/torch/__init__.py": "where the torch stub is installed in a compiler's venv",
    "tools/symbolic_shape_infer.py": "a file of the onnxruntime package",
    "onnxruntime/__init__.py": "a file of the onnxruntime package",
    "onnxruntime/tools/__init__.py": "a file of the onnxruntime package",
    "docs/execution_providers/QNN-ExecutionProvider.md": "a page of the onnxruntime-qnn repository",
    "probe/drivers/NAME_driver.py": "a pattern: one driver per compiler",
    "reports/all.md": "a user's file, in an example command",
    "results/NN-name.json": "a pattern: the action's per-model result files",
    "contracts/resnet18_onnx/npu-gate.json": "a user's file, in an example layout",
    "before/result.json": "a user's file, in an example command",
    "models/m/npu-gate.json": "a user's contract, in an example of the cache's note",
    "jobs/relu/result.json": "a user's result file, in an example of a refused merge",
    "outlier/npu-gate.json": "in examples/quantize-mobilenet/, the folder the page names just above",
    "out/demo/report.md": "written by `make demo`",
    "doc/RKNNToolKit2_OP_Support-v2.1.0.md": "a page of the RKNN-Toolkit2 repository",
}


def python_prose(path: Path) -> Iterator[str]:
    """The docstrings and comments of one Python file."""
    text = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                yield docstring


def named_paths(text: str) -> list[str]:
    """The file paths and the dotted npu_gate names a text mentions, in order."""
    text = URL.sub(" ", text)
    return [m.group(0) for m in PATH.finditer(text)] + [m.group(0) for m in DOTTED.finditer(text)]


def _dotted_exists(name: str, root: Path) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:i])
        module = base.with_suffix(".py") if not base.is_dir() else base / "__init__.py"
        if module.is_file():
            rest = parts[i:]
            return not rest or (len(rest) == 1 and re.search(rf"\b{rest[0]}\b", module.read_text("utf-8")) is not None)
    return False


def exists(named: str, where: Path, root: Path) -> bool:
    """Whether a path or dotted name mentioned in the file ``where`` is a file of the repository at ``root``."""
    if "/" not in named:
        return _dotted_exists(named, root)
    if named.split("/")[0] in ROOTS:
        return (root / named).is_file()
    return (root / "npu_gate" / named).is_file() or (where.parent / named).is_file()


@functools.cache
def prose(root: Path) -> tuple[tuple[Path, str], ...]:
    """(file, its prose) for the package's Python files and the docs pages under ``root`` (read once)."""
    sources = [(p, "\n".join(python_prose(p))) for p in sorted((root / "npu_gate").rglob("*.py"))]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    sources += [(p, p.read_text(encoding="utf-8")) for p in pages if p.is_file()]
    return tuple(sources)


def missing_paths(root: Path) -> list[str]:
    """``file: path`` for every mention under ``root`` that names no file and is not in ``ALLOWED``."""
    return [f"{p.relative_to(root)}: {named}" for p, text in prose(root) for named in named_paths(text)
            if named not in ALLOWED and not exists(named, p, root)]


@pytest.mark.slow
def test_every_path_named_in_the_package_and_the_docs_exists() -> None:
    assert missing_paths(REPO) == []


def test_every_allowed_path_is_still_named_and_is_not_a_file() -> None:
    """The allow-list stays short: an entry nothing names any more, or one that now exists, goes."""
    named = {n for _, text in prose(REPO) for n in named_paths(text)}
    assert sorted(set(ALLOWED) - named) == []
    # out/ is where `make demo` writes (ignored by git): present after the README's first command
    assert [a for a in ALLOWED if not a.startswith("out/")
            and ((REPO / a).is_file() or (REPO / "npu_gate" / a).is_file())] == []


def test_stale_mentions_are_reported(tmp_path: Path) -> None:
    """The check can fail: each rule on a tiny tree, with one stale mention of each kind."""
    (tmp_path / "npu_gate" / "stages").mkdir(parents=True)
    (tmp_path / "npu_gate" / "probe" / "drivers").mkdir(parents=True)
    (tmp_path / "docs" / "profiles").mkdir(parents=True)
    (tmp_path / "npu_gate" / "__init__.py").write_text("")
    (tmp_path / "npu_gate" / "stages" / "__init__.py").write_text("")
    (tmp_path / "npu_gate" / "stages" / "verdict.py").write_text("DEFAULT = 1\n")
    (tmp_path / "npu_gate" / "probe" / "drivers" / "_protocol.py").write_text("")
    (tmp_path / "docs" / "profiles" / "demo.md").write_text("# Demo\n")
    (tmp_path / "npu_gate" / "probe" / "base.py").write_text(
        '"""Drivers speak drivers/_protocol.py; the verdict is npu_gate/stages/verdict.py."""\n'
        "# moved: npu_gate/constraints.py, and stages/probe.py, and drivers/gone.py\n"
        'PATH = "npu_gate/not_prose.py"  # a string that is data, not prose: not read\n'
        "def f() -> None:\n"
        '    """npu_gate.stages.verdict.DEFAULT and npu_gate.stages; stale: npu_gate.target.pages."""\n')
    (tmp_path / "docs" / "page.md").write_text(
        "See `profiles/demo.md`, `schemas/result.schema.json`, `models/zoo.py` (allowed) and\n"
        "https://example.com/docs/elsewhere.md (a URL); `npu_gate.stages.verdict.MISSING`.\n", encoding="utf-8")
    assert missing_paths(tmp_path) == [
        "npu_gate/probe/base.py: npu_gate/constraints.py",
        "npu_gate/probe/base.py: stages/probe.py",
        "npu_gate/probe/base.py: drivers/gone.py",
        "npu_gate/probe/base.py: npu_gate.target.pages",
        "docs/page.md: schemas/result.schema.json",
        "docs/page.md: npu_gate.stages.verdict.MISSING",
    ]
