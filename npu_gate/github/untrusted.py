"""Make an untrusted comment.md (the fork comment-only mode's artifact) safe to post as the bot.

The author of a fork's pull request controls the workflow run that wrote the artifact, so the
text is theirs. It stays readable, but nothing in it may notify anyone, link anywhere or load
an image. An invisible word joiner (U+2060) breaks each trigger, as ``npu_gate/escape.py`` does
for our own reports:

- mentions and references: after ``@`` or ``#`` before a word character (``@team``, ``#12``,
  ``owner/repo#12``, e-mail addresses), and inside ``GH-12``-style references;
- bare URLs: inside ``://`` and after ``www`` before ``.`` (GFM's autolinks);
- Markdown links and images: after ``]`` before ``(`` or ``:`` (inline links, reference
  definitions) and after ``!`` before ``[``;
- HTML: after every ``<`` that does not open or close a tag of ``ALLOWED_TAGS`` without
  attributes, which breaks ``<a>``, ``<img>``, ``<https://...>`` autolinks and comments.

GitHub decodes entities before it links text (``&#64;name`` pings), so the first two rules read
the text with entities decoded; entities never form Markdown or HTML syntax, so the last two
read it as written. The joiner is the literal character, invisible in text and in code alike.
Our own reports (escaped by ``npu_gate/escape.py``, using only allowed tags) read the same
afterwards, except that their links show as text.

Stdlib only: the comment step runs without npu-gate's dependencies.
"""

from __future__ import annotations

import html
import re

WORD_JOINER = "\u2060"
ALLOWED_TAGS = frozenset({
    "details", "summary", "code", "pre", "kbd", "br", "hr", "p", "b", "i", "em", "strong", "sub", "sup",
    "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
})
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_LINKIFY = re.compile(r"[@#](?=\w)|(?<=[A-Za-z])-(?=[0-9])|:(?=//)|(?i:www)(?=\.)")
_SYNTAX = re.compile(r"\](?=[(:])|!(?=\[)|<")
_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)\s*/?>")


def neutralise(text: str) -> str:
    """``text`` with a word joiner after every mention, reference, URL, link, image or HTML trigger."""
    cuts = _linkify_cuts(text) | _syntax_cuts(text)
    out = []
    last = 0
    for cut in sorted(cuts):
        out.append(text[last:cut] + WORD_JOINER)
        last = cut
    out.append(text[last:])
    return "".join(out)


def _linkify_cuts(text: str) -> set[int]:
    """Offsets in ``text`` right after each trigger, found in the text as GitHub's linkers see it."""
    decoded: list[str] = []
    ends: list[int] = []  # for each decoded character: the offset in ``text`` after its source
    pos = 0
    for entity in [*_ENTITY.finditer(text), None]:
        start = len(text) if entity is None else entity.start()
        decoded += text[pos:start]
        ends += range(pos + 1, start + 1)
        if entity is not None:
            value = html.unescape(entity.group())
            decoded += value
            ends += [entity.end()] * len(value)
            pos = entity.end()
    return {ends[m.end() - 1] for m in _LINKIFY.finditer("".join(decoded))}


def _syntax_cuts(text: str) -> set[int]:
    cuts = set()
    for m in _SYNTAX.finditer(text):
        if m.group() == "<":
            tag = _TAG.match(text, m.start())
            if tag is not None and tag.group(1).lower() in ALLOWED_TAGS:
                continue
        cuts.add(m.end())
    return cuts
