"""The import graph of a package, read from its source with ``ast``: every ``import`` and
``from ... import``, inside functions too; only imports under ``if TYPE_CHECKING:`` are left
out (annotations, never run)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    importer: str  # module doing the import
    module: str  # module imported (the package-internal one named, resolved)
    names: tuple[str, ...]  # the names taken from it (``from m import a, b``); () for ``import m``
    line: int


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for the package folder ``root`` (its name is the top package)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    return skipped


def imports(root: Path) -> list[Import]:
    """Every package-internal import in the package at ``root``."""
    known = modules(root)
    top = root.name
    out = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_nodes(tree)
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                out += [Import(name, a.name, (), node.lineno) for a in node.names
                        if a.name == top or a.name.startswith(top + ".")]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if is_package else name.split(".")[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                if base != top and not base.startswith(top + "."):
                    continue
                # `from pkg import submodule` imports the submodule
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in known:
                        out.append(Import(name, sub, (), node.lineno))
                    else:
                        out.append(Import(name, base, (alias.name,), node.lineno))
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, and modules importing
    themselves (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    found.append(sorted(component))
    return found
