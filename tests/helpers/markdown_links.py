"""The relative links of a Markdown page, and the ones that point to no file or heading
(GitHub's heading slugs)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

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
