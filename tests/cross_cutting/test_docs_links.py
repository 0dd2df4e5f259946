"""Every relative Markdown link in README.md and docs/*.md points to a file of the repository, and its
`#anchor` to a heading of that file (GitHub's heading slugs); README links every docs page."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.helpers.common import REPO

# The generated pages under docs/profiles/ too: a profile's relative `doc` references are rewritten to resolve there.
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "profiles").glob("*.md"))]

CODE_SPAN = re.compile(r"(`+).*?\1")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link syntax reduced to its text, lower case, every character
    other than letters, digits, `_`, `-` and spaces dropped, spaces turned into `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated slug gets `-1`, `-2`, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The link targets of a page, outside code blocks and code spans."""
    targets = []
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        prose = CODE_SPAN.sub(lambda m: "code" if m.group(0).count("`") == 2 else "", line)
        targets += LINK.findall(prose)
    return targets


def broken_links(page: Path, root: Path) -> list[str]:
    """Each relative link of `page` whose file is missing or outside `root`, or whose anchor names no heading."""
    broken = []
    for target in links(page):
        if SCHEME.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not dest.is_relative_to(root.resolve()) or not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page, REPO) == []


def test_readme_links_every_docs_page() -> None:
    readme = REPO / "README.md"
    linked = {(REPO / t.partition("#")[0]).resolve() for t in links(readme) if not SCHEME.match(t)}
    docs = sorted((REPO / "docs").rglob("*.md"))
    assert [str(p.relative_to(REPO)) for p in docs if p.resolve() not in linked] == []


def test_slug_follows_github() -> None:
    assert slug("In a contract: `target.probe`") == "in-a-contract-targetprobe"
    assert slug("Setup: the compiler's own venv") == "setup-the-compilers-own-venv"
    assert slug("`npu-gate diff A B`") == "npu-gate-diff-a-b"
    assert slug("What a probe returns (`--json`, [`schemas/probe.schema.json`](../schemas/probe.schema.json))") \
        == "what-a-probe-returns---json-schemasprobeschemajson"
    assert slug("A real compiler in the loop (RKNN)") == "a-real-compiler-in-the-loop-rknn"


def test_broken_links_are_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## Tests\n\n## Tests\n", encoding="utf-8")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Page\n\n"
        "[ok](other.md#tests-1) [ok](#page) [ok](other.md) [web](https://example.com/x.md#nothing)\n"
        "[gone](missing.md) [bad anchor](other.md#tests-2) [self](#nowhere) [outside](../../x.md)\n"
        "`[in a code span](missing-too.md)`\n"
        "```\n[in a fence](missing-three.md)\n```\n",
        encoding="utf-8",
    )
    (tmp_path.parent / "x.md").write_text("# X\n", encoding="utf-8")
    assert broken_links(page, tmp_path) == [
        "missing.md: no such file",
        "other.md#tests-2: no heading with that anchor",
        "#nowhere: no heading with that anchor",
        "../../x.md: no such file",
    ]
