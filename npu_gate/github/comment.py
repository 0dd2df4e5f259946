"""The sticky PR comment: a hidden marker, size-aware truncation, find-then-update.

One comment per ``comment-id``: the marker ``<!-- npu-gate:report id=... -->`` ends the
body; we update the comment that carries our marker AND was written by our author, and
create one only when none exists (and the caller allows it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from npu_gate.github.api import GitHubClient

COMMENT_LIMIT = 65_536  # characters; GitHub answers 422 "body is too long" above it
DEFAULT_AUTHOR = "github-actions[bot]"  # the login behind GITHUB_TOKEN
_MARKER_RE = re.compile(r"<!-- npu-gate:report id=[^>]*-->")

# Which sections go first when a report is too long (lower = dropped earlier; in a rank, the
# last model's first). What explains the verdict goes last: the findings, then the CPU-fallback
# reasons, gates and numerics; detail and advice before them. Other "###" sections and
# <details> blocks rank DEFAULT_RANK. Never dropped: the "#"/"##" verdict headings with their
# text, and the KEEP sections.
KEEP = frozenset({"Summary", "Baseline"})
DEFAULT_RANK = 3
DROP_ORDER = {
    "Timings": 0,
    # detail a reviewer can read in the full report
    "Op census and shapes": 1, "Op census": 1, "Placement by op": 1, "Fused patterns": 1,
    "Shape chains": 1, "Exporter comparison": 1, "How the graphs differ": 1,
    # advice and the graph's structure
    "Partitions": 2, "Partition map": 2, "Suggested rewrites": 2, "Replacement model": 2, "Task metric": 2,
    "Minimal failing models": 2, "Nodes": 2, "Changed nodes": 2, "Placement changes": 2,
    # rank 3: Review, Rewrites applied, Real compiler, Dynamic dims, Shape computation
    "CPU fallback": 4,
    "Gates": 4,
    "Numerics": 4,
    "Findings": 5,
}
# A model's fold in a several-model report starts with one of these (render.report.MODEL_ICONS,
# not imported: this module runs in the stdlib-only comment step; a test keeps the two equal).
MODEL_ICONS = ("✅", "❌", "⚠️")
_RESERVE = 600  # room for the truncation note and closing tags
TIMINGS_NOTE = ("### Timings\n\nIn `report.md` (and the job summary when it has room): they change on every run, "
                "so the comment leaves them out.\n\n")


def marker(comment_id: str = "") -> str:
    clean = re.sub(r"[^A-Za-z0-9._/-]", "-", comment_id.strip())[:100] or "default"
    return f"<!-- npu-gate:report id={clean} -->"


def strip_markers(body: str) -> str:
    """Remove any npu-gate marker (e.g. from an untrusted artifact) before adding ours."""
    return _MARKER_RE.sub("", body)


@dataclass
class _Section:
    title: str | None  # None: never dropped
    text: str


def _title(line: str) -> str:
    if line.startswith("<details>"):
        m = re.search(r"<summary>(.*?)</summary>", line)
        line = m.group(1) if m else "details"
    text = line.lstrip("#").strip()
    return re.sub(r"\s*\(.*\)$", "", text)  # "Numerics (onnxruntime ...)" -> "Numerics"


def _sections(markdown: str) -> list[_Section]:
    sections: list[_Section] = [_Section(None, "")]
    fence = False
    for line in markdown.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fence = not fence
        starts = not fence and (line.startswith("### ") or line.startswith("## ")
                                or line.startswith("# ") or line.startswith("<details>"))
        if starts:
            title = _title(line)
            detail = line.startswith("### ") or line.startswith("<details>")
            # a model's fold (render.report.folded_model) is kept: its <details> holds the model's report
            droppable = detail and title not in KEEP and not title.startswith(MODEL_ICONS)
            sections.append(_Section(title if droppable else None, ""))
        sections[-1].text += line
    return sections


def without_timings(markdown: str) -> str:
    """The report with each "### Timings" section replaced by a line saying where it is: the
    timings change on every run, and the comment must not (an unchanged result is not re-posted)."""
    return "".join(TIMINGS_NOTE if s.title == "Timings" else s.text for s in _sections(markdown))


def close_open_blocks(text: str) -> str:
    """Close a code fence (``` or ~~~) and every HTML element (<details>, <table>, <pre>...) left
    open by a cut or by a fork's comment file, innermost first, each closer on its own line, so
    what we append after it (the truncation note, our marker) is not swallowed. Tags inside
    fenced code are text; a closing tag closes the last element of its name still open (and any
    opened inside it), as an HTML parser does."""
    fence, lines = _outside_fences(text)
    if fence:
        text += "\n" + fence
    stack: list[str] = []
    for line in lines:
        for m in _ELEMENT.finditer(line):
            name = m.group(2).lower()
            if name in _VOID or m.group(3):  # <br>, <details/>: nothing left open
                continue
            if not m.group(1):
                stack.append(name)
            elif name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name):]
    return text + "".join(f"\n</{name}>" for name in reversed(stack))


_ELEMENT = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)(?:\s[^<>]*)?(/?)>")
_VOID = frozenset({"br", "hr", "img", "input", "wbr", "col", "area", "base", "link", "meta", "source",
                   "track", "embed", "param"})


def _outside_fences(text: str) -> tuple[str, list[str]]:
    """The fence a code block left open at the end of ``text`` starts with ("" if none), and
    the lines outside fenced code: as in CommonMark, only a run of the same character, at least
    as long, closes a fence."""
    fence = ""
    outside = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if not fence:
            m = re.match(r"(`{3,}|~{3,})(.*)", stripped)
            # ```x``` is inline code: a backtick fence's info string has no backtick
            fence = m.group(1) if m and not (m.group(1)[0] == "`" and "`" in m.group(2)) else ""
            if not fence:
                outside.append(line)
        elif re.fullmatch(re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*", stripped):
            fence = ""
    return fence, outside


def fit(markdown: str, limit: int = COMMENT_LIMIT, *, where: str = "the job summary",
        measure: Callable[[str], int] = len, tail: str = "") -> str:
    """The report, shortened to ``limit`` (as counted by ``measure``) with ``tail`` kept last.

    Drops whole detail sections first (least useful first, the last model first), then cuts
    at a line and closes open blocks. Says what was cut and where the full report is.
    """
    if measure(markdown) + measure(tail) <= limit:
        return markdown + tail
    budget = limit - measure(tail) - _RESERVE
    sections = _sections(markdown)
    dropped: list[str] = []
    droppable = sorted((i for i, s in enumerate(sections) if s.title is not None),
                       key=lambda i: (DROP_ORDER.get(sections[i].title or "", DEFAULT_RANK), -i))
    for i in droppable:
        if measure("".join(s.text for s in sections)) <= budget:
            break
        dropped.append(sections[i].title or "")
        sections[i] = _Section(None, "")
    text = "".join(s.text for s in sections).rstrip("\n")
    cut = False
    if measure(text) > budget:
        cut = True
        text = text[: max(0, budget)]
        while measure(text) > budget:  # multi-byte measure: shrink further
            text = text[: len(text) - max(1, (measure(text) - budget) // 4)]
        text = close_open_blocks(text[: text.rfind("\n")] if "\n" in text else text)
    what = []
    if dropped:
        counts: dict[str, int] = {}
        for title in dropped:
            counts[title] = counts.get(title, 0) + 1
        what.append("left out " + ", ".join(
            f"{t}" + (f" (×{n})" if n > 1 else "") for t, n in counts.items()))
    if cut:
        what.append("cut the rest short")
    note = (f"\n\n---\n_Report truncated to fit GitHub's limit: {'; '.join(what)}. "
            f"The full report is in {where}._\n")
    return text + note + tail


@dataclass
class Posted:
    action: str  # created | updated | unchanged | skipped
    comment_id: int | None = None
    url: str | None = None


def comment_body(markdown: str, comment_id: str = "", *, where: str = "the job summary") -> str:
    """The comment as posted: the report (untrusted markers removed), fitted, then our marker."""
    report = strip_markers(markdown).rstrip("\n")
    return fit(report, COMMENT_LIMIT, where=where, tail="\n\n" + marker(comment_id) + "\n")


def upsert(client: GitHubClient, number: int, full: str, *, comment_id: str = "",
           author: str = DEFAULT_AUTHOR, create: bool = True) -> Posted:
    """Update our comment in place, or create it when missing and ``create`` is True.

    ``full`` comes from ``comment_body`` (it fits and ends with the marker of ``comment_id``).
    """
    mark = marker(comment_id)
    for existing in client.issue_comments(number):
        login = str((existing.get("user") or {}).get("login", ""))
        if mark in str(existing.get("body", "")) and login.lower() == author.lower():
            if existing.get("body") == full:
                return Posted("unchanged", existing.get("id"), existing.get("html_url"))
            updated = client.update_comment(int(existing["id"]), full)
            return Posted("updated", updated.get("id"), updated.get("html_url"))
    if not create:
        return Posted("skipped")
    created = client.create_comment(number, full)
    return Posted("created", created.get("id"), created.get("html_url"))
