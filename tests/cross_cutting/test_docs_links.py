"""Every relative Markdown link in README.md and docs/*.md points to a file of the repository, and its
`#anchor` to a heading of that file (GitHub's heading slugs); README links every docs page."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.common import REPO
from tests.helpers.markdown_links import SCHEME, broken_links, links, slug

# The generated pages under docs/profiles/ too: a profile's relative `doc` references are rewritten to resolve there.
# And the measurement records under docs/records/.
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "profiles").glob("*.md")),
         *sorted((REPO / "docs" / "records").glob("*.md"))]


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
