"""Make untrusted text (node and tensor names, messages that quote them) safe to show.

Markdown: every character that Markdown or HTML could interpret becomes a numeric
entity, so ``</details><img src=x>``, ``@someone`` or ``#12`` render as plain text and
cannot ping, link or break a table. Terminal: control characters are made visible.
"""

from __future__ import annotations

_MD_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;-/=+%'?")
MAX_TEXT = 300


def md(text: object) -> str:
    """Escape for Markdown and HTML (tables included); long text is shortened."""
    s = str(text)
    if len(s) > MAX_TEXT:
        s = s[: MAX_TEXT - 1] + "…"
    out = []
    for ch in s:
        if ch in _MD_SAFE:
            out.append(ch)
        elif ch in "\r\n\t":
            out.append(" ")
        else:
            out.append(f"&#{ord(ch)};")
    return "".join(out)


def md_code(text: object) -> str:
    """Escaped text in a <code> element (entities render inside it, unlike in backticks)."""
    return f"<code>{md(text)}</code>"


def term(text: object) -> str:
    """Strip what a terminal would interpret (ANSI escapes, carriage returns)."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))
