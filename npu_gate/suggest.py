""""Did you mean": the nearest valid names to a misspelt one (difflib), for error lines."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The valid names closest to ``word``, best first; else those it begins (``rknn`` for
    ``rknn-rk3588``); none when nothing is close."""
    names = sorted(set(candidates))
    close = difflib.get_close_matches(word, names, n=n, cutoff=0.6)
    if not close and len(word) >= 3:
        close = [c for c in names if c.startswith(word)][:n]
    return close


def did_you_mean(word: str, candidates: Iterable[str], prefix: str = "") -> str:
    """``"; did you mean 'a'?"`` (or ``'a' or 'b'``), or "" when no valid name is close; each
    suggestion shown after ``prefix`` (``PROFILE:`` for a constraint id)."""
    close = nearest(word, candidates)
    return f"; did you mean {' or '.join(repr(prefix + c) for c in close)}?" if close else ""
