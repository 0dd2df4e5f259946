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

- invisible and reordering characters: control characters (ESC and the rest of C0 and C1, but
  line breaks and tabs), format characters (bidi overrides and isolates such as U+202E,
  zero-width characters such as U+200B) and line/paragraph separators become ``\\u202e``-style
  text, as ``npu_gate/escape.py`` shows them in our reports, whether written raw or as an entity
  (``&#8238;``, ``&#x202e;``, ``&rlm;``): they could reorder or hide the text around them. Our
  own joiner, U+2060, stays.

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
import unicodedata

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
    """``text`` with a word joiner after every mention, reference, URL, link, image or HTML
    trigger, and its invisible and reordering characters shown as escapes."""
    text = _shown(text.removeprefix("\ufeff"))  # a byte order mark is no text
    cuts = _linkify_cuts(text) | _syntax_cuts(text)
    out = []
    last = 0
    for cut in sorted(cuts):
        out.append(text[last:cut] + WORD_JOINER)
        last = cut
    out.append(text[last:])
    return "".join(out)


_KEPT = frozenset("\n\r\t" + WORD_JOINER)
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def _hidden(ch: str) -> bool:
    return ch not in _KEPT and unicodedata.category(ch) in _HIDDEN_CATEGORIES


def _escape(value: str) -> str:
    return "".join(repr(ch)[1:-1] if _hidden(ch) else ch for ch in value)


def _shown(text: str) -> str:
    """Hidden characters (``_hidden``), raw or as an entity, as ``\\u202e``-style text."""
    text = _ENTITY.sub(lambda m: _escape(v) if any(map(_hidden, v := _decoded(m.group()))) else m.group(), text)
    return _escape(text) if any(map(_hidden, text)) else text


def _decoded(entity: str) -> str:
    """An entity's character(s); a numeric one as its code point (``&#27;``, which
    ``html.unescape`` drops, and ``&#128;``, which it reads as Windows-1252)."""
    if entity.startswith("&#"):
        number = int(entity[3:-1], 16) if entity[2] in "xX" else int(entity[2:-1])
        if 0 < number <= 0x10FFFF and not 0xD800 <= number <= 0xDFFF:
            return chr(number)
    return html.unescape(entity)


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
