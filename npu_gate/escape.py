"""Make untrusted text (node and tensor names, messages that quote them) safe to show.

Markdown, two layers:

- Every character that Markdown or HTML could interpret becomes a numeric entity, so
  ``</details><img src=x>``, ``*x*`` or ``|`` render as plain text and cannot add HTML,
  formatting or table cells.
- Entities are decoded before GitHub links text (its mention and issue-reference filters and
  the GFM autolinker all see the decoded text), so ``&#64;name`` would still ping. An invisible
  word joiner (U+2060, written ``&#8288;``) therefore breaks each trigger: after ``@``
  (mentions, e-mail addresses), after ``#`` (``#12``, ``owner/repo#12``), after the ``-`` of
  ``GH-12``-style references (a letter, ``-``, a digit), inside ``://`` and after ``www``
  before ``.`` (URLs). In ``<code>``, where GitHub neither mentions nor references but
  cmark-gfm still autolinks, only the links are broken (``://``, ``www.``, ``@`` before a
  domain), so a code name such as ``Relu#0`` copies as it is.

Not covered: a hexadecimal word may still link to a commit of the repository the report is
posted in (it cannot ping anyone or point elsewhere).

Both: control and format characters (ANSI escapes, bidi overrides such as U+202E, zero-width
characters) are made visible as ``\\u202e``-style escapes, so a name cannot reorder or hide the
report's text around it; in Markdown, line breaks and tabs become spaces. Both cut a text to
``MAX_TEXT`` characters.
"""

from __future__ import annotations

import re

_MD_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;-/=+%'?")
MAX_TEXT = 300  # characters of one name or message shown, in Markdown and in the terminal
WORD_JOINER = "\u2060"

_URL_TRIGGERS = r":(?=//)|(?i:www)(?=\.)"
_TEXT_TRIGGERS = re.compile(rf"[@#]|(?<=[A-Za-z])-(?=[0-9])|{_URL_TRIGGERS}")
_CODE_TRIGGERS = re.compile(rf"@(?=[\w-]+\.\w)|{_URL_TRIGGERS}")


def shorten(text: object, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when it was longer."""
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def md(text: object) -> str:
    """Plain Markdown text (tables included): escaped, links and mentions broken, shortened."""
    return _entities(_TEXT_TRIGGERS.sub(_join, shorten(text)))


def md_code(text: object) -> str:
    """Escaped text in a <code> element (entities render inside it, unlike in backticks)."""
    return f"<code>{_entities(_CODE_TRIGGERS.sub(_join, shorten(text)))}</code>"


def term(text: object) -> str:
    """Terminal text: what a terminal would interpret (ANSI escapes, carriage returns) shown
    as escapes; shortened like Markdown."""
    return visible(shorten(text))


def visible(text: object) -> str:
    """``term`` without the cut: for whole lines such as error messages, which may quote
    model or file text. A line break in them could start a GitHub workflow command."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


def _join(match: re.Match[str]) -> str:
    return match.group() + WORD_JOINER


def _entities(s: str) -> str:
    out = []
    for ch in s:
        if ch in _MD_SAFE:
            out.append(ch)
        elif ch in "\r\n\t":
            out.append(" ")
        elif not ch.isprintable() and ch != WORD_JOINER:  # an entity would still reorder (U+202E) or hide (U+200B) text
            out.append(_entities(repr(ch)[1:-1]))
        else:
            out.append(f"&#{ord(ch)};")
    return "".join(out)
