"""A copy of the package vendored into another repository keeps every file: no folder or file of
``npu_gate/`` has a name that the common ``.gitignore`` templates ignore at any depth (issue 36:
a package called ``target/`` was silently dropped by the Python, Rust and Maven templates)."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.common import REPO

# Names ignored at any depth by widely used templates (GitHub's Python, Rust, Maven, Node, Java,
# VisualStudio, JetBrains): folder patterns end with "/", file patterns are globs.
IGNORED_ANYWHERE = (
    "target/", "build/", "dist/", "develop-eggs/", "downloads/", "eggs/", ".eggs/", "lib/", "lib64/",
    "parts/", "sdist/", "var/", "wheels/", "env/", "venv/", "ENV/", "htmlcov/", "instance/", "out/",
    "bin/", "obj/", "node_modules/", "logs/", "log/", "tmp/", "temp/", "debug/", "release/",
    "*.log", "*.so", "*.egg", "*.class", "*.jar", "*.tmp", "*.bak", "*.swp", "*.cover", "*.pot",
    "*.manifest", "*.spec", "*.mo", "*.sage.py",
)


def _ignored(path: Path) -> str | None:
    """The pattern of IGNORED_ANYWHERE that ignores ``path`` (relative to the package), or None."""
    for part in path.parts[:-1]:
        for pattern in IGNORED_ANYWHERE:
            if pattern.endswith("/") and part == pattern[:-1]:
                return pattern
    for pattern in IGNORED_ANYWHERE:
        if not pattern.endswith("/") and fnmatch.fnmatchcase(path.name, pattern):
            return pattern
    return None


def test_no_package_path_is_ignored_by_a_common_gitignore_template() -> None:
    package = REPO / "npu_gate"
    found = [f"npu_gate/{p.relative_to(package)} ({_ignored(p.relative_to(package))})"
             for p in sorted(package.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
             and _ignored(p.relative_to(package))]
    assert found == []


def test_the_check_finds_an_ignored_folder() -> None:
    """The check above can fail: the old ``target/`` folder, and a log file, are found."""
    assert _ignored(Path("target/profile.py")) == "target/"
    assert _ignored(Path("probe/run.log")) == "*.log"
    assert _ignored(Path("profile/spec.py")) is None


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_keeps_a_vendored_copy_under_the_rust_and_maven_rule(tmp_path: Path) -> None:
    """What the issue ran, as git itself answers it: a repository ignoring ``target/`` keeps every
    file of a vendored ``npu_gate/``."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("target/\nbuild/\ndist/\n*.log\n", encoding="utf-8")
    names = [f"vendor/npu_gate/{p.relative_to(REPO / 'npu_gate')}" for p in (REPO / "npu_gate").rglob("*.py")
             if "__pycache__" not in p.parts]
    answer = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "--stdin"], input="\n".join(names),
                            capture_output=True, text=True, check=False)
    assert answer.stdout.split() == []
    check = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "vendor/npu_gate/target/profile.py"],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0  # the rule does ignore a target/ folder: the test above can fail
