"""The structure docs/architecture.md describes, checked: no import cycle, no private name
imported across modules, no stage importing the orchestrator, a small top level, and the
import-linter layers contract kept."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import REPO
from tests.helpers.import_graph import cycles, imports, modules

PACKAGE = REPO / "npu_gate"


def _edges(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    edges: dict[str, set[str]] = {name: set() for name in known}
    for imp in imports(root):
        if imp.module in known and imp.module != imp.importer:
            edges[imp.importer].add(imp.module)
    return edges


def test_no_import_cycle_among_the_package_modules() -> None:
    assert cycles(_edges(PACKAGE)) == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    """The check above can fail: a cycle closed by an import inside a function is one."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from pkg import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    (pkg / "d.py").write_text("from pkg import c\n")
    assert cycles(_edges(pkg)) == [["pkg.a", "pkg.sub.b"]]


def test_no_private_name_is_imported_across_modules() -> None:
    crossing = [f"{i.importer} (line {i.line}) imports {name} from {i.module}"
                for i in imports(PACKAGE) for name in i.names
                if name.startswith("_") and not name.startswith("__") and i.module != i.importer]
    assert crossing == []


def test_no_private_name_is_read_through_another_module() -> None:
    """``facts._helper(...)`` after ``from npu_gate.graph import facts`` is a private import too."""
    import ast

    known = modules(PACKAGE)
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {a.asname or a.name: f"{node.module}.{a.name}" for node in ast.walk(tree)
                   if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("npu_gate")
                   for a in node.names if f"{node.module}.{a.name}" in known}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append(f"{name} (line {node.lineno}): {node.value.id}.{node.attr}")
    assert found == []


def test_tests_import_no_private_name_of_the_package() -> None:
    crossing = [f"{i.importer} (line {i.line}) imports {name} from {i.module}"
                for i in imports(REPO / "tests") for name in i.names
                if i.module.startswith("npu_gate") and name.startswith("_") and not name.startswith("__")]
    assert crossing == []


def test_no_stage_imports_the_orchestrator() -> None:
    upward = [f"{i.importer} (line {i.line})" for i in imports(PACKAGE)
              if i.importer.startswith("npu_gate.stages") and i.module == "npu_gate.pipeline"]
    assert upward == []


def test_at_most_fifteen_modules_at_the_top_level() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 15, top


@pytest.mark.skipif(shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None,
                    reason="import-linter is not installed (requirements-dev.txt)")
def test_the_layers_contract_is_kept() -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Contracts: 1 kept, 0 broken." in done.stdout
