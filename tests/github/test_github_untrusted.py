"""The fork comment-only mode's artifact, neutralised (npu_gate/github/untrusted.py), as GitHub renders it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from npu_gate.github.untrusted import WORD_JOINER, neutralise
from tests.helpers.common import RunCli
from tests.helpers.gfm import VISIBLE, assert_inert, gfm, hostile_model, readable, write_case

ATTACK = """\
# PASS, ask @octocat or see #1, owner/repo#2, GH-3, &#64;evil, &commat;team, &#35;4
[click here](https://evil.example/x) ![badge](https://evil.example/i.png) [ref link][r]

[r]: https://evil.example/ref
<img src=https://evil.example/i.png> <a href="https://evil.example">a</a> <A HREF=x>b</A>
<https://evil.example/auto> www.evil.example http&#58;//evil.example mail me@evil.example
<!-- hidden text --> <picture><source srcset="https://evil.example/p.png"></picture>
<details><summary>fine</summary>

<code>@octocat</code> `#5 https://evil.example` <sub>x</sub><br>
</details>
"""


def test_every_link_mention_image_and_tag_is_broken() -> None:
    rendered = gfm(neutralise(ATTACK))
    assert_inert(rendered)
    # Nothing outside the allowed tags survives as HTML; what is left is text.
    assert sorted(set(re.findall(r"<(/?[a-z0-9]+)", rendered))) == [
        "/code", "/details", "/h1", "/p", "/sub", "/summary", "br", "code", "details", "h1", "p", "sub", "summary"]
    # ... and stays readable: the joiners are invisible.
    seen = readable(rendered)
    assert "ask @octocat or see #1, owner/repo#2, GH-3, @evil, @team, #4" in seen
    assert "[click here](https://evil.example/x) ![badge](https://evil.example/i.png)" in seen
    assert "<img src=https://evil.example/i.png>" in seen


def test_the_original_text_is_not_inert() -> None:
    """The attack is real: without neutralising, GitHub would link, embed and hide."""
    rendered = gfm(ATTACK)
    # inline, reference, <a>, the <...> autolink, www. and the e-mail address
    assert rendered.count("<a href") == 6
    assert '<img src="https://evil.example/i.png"' in rendered
    assert "<!-- hidden text -->" in rendered
    with pytest.raises(AssertionError):
        assert_inert(rendered)


@pytest.mark.parametrize(("text", "expected"), [
    ("# Heading ## x", "# Heading ## x"),  # headings are not references
    ("&#64;&#8288;a &#35;&#8288;1", "&#64;&#8288;a &#35;&#8288;1"),  # already broken: unchanged
    ("2027-03-01 (-1) Conv-k3 e-08", f"2027-03-01 (-1) Conv-k3 e-{WORD_JOINER}08"),
    ("a <b>bold</b> <br/> <td>", "a <b>bold</b> <br/> <td>"),
    ("<details open>", f"<{WORD_JOINER}details open>"),  # attributes are not allowed
    ("x](y ]:z ![w", f"x]{WORD_JOINER}(y ]{WORD_JOINER}:z !{WORD_JOINER}[w"),
    ("&#x40;u &commat;u &COMMAT;u", f"&#x40;{WORD_JOINER}u &commat;{WORD_JOINER}u &COMMAT;u"),
])
def test_exact_rewrites(text: str, expected: str) -> None:
    assert neutralise(text) == expected


def test_our_own_report_reads_the_same(tmp_path: Path, run_cli: RunCli) -> None:
    """A real report (hostile names, tables, <details>, <code>) through the neutraliser renders to
    the same tags and the same visible text."""
    case = write_case(tmp_path / "case", hostile_model())
    run = run_cli("check", case, "--markdown", tmp_path / "r.md")
    assert run.code == 1
    report = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "<details>" in report and "<code>" in report and "|--" in report
    before, after = gfm(report), gfm(neutralise(report))
    assert_inert(after)
    assert re.findall(r"<[^>]+>", after) == re.findall(r"<[^>]+>", before)
    assert readable(after) == readable(before)
    assert VISIBLE in readable(after)


def test_our_links_become_text() -> None:
    rendered = gfm(neutralise("op-constraint ([doc](https://onnxruntime.ai/docs/x.html))"))
    assert "<a " not in rendered
    assert readable(rendered) == "op-constraint ([doc](https://onnxruntime.ai/docs/x.html))\n"


HIDDEN = ["\u202e", "\u202d", "\u2066", "\u2069", "\u200b", "\u200e", "\u200f", "\u00ad", "\ufeff", "\u2028",
          "\x1b", "\x07", "\x85", "\x9b"]


@pytest.mark.parametrize("char", HIDDEN)
def test_invisible_and_reordering_characters_are_shown_raw_or_as_entities(char: str) -> None:
    """Issue 17, item 9: a fork's file could reorder ("PASS" shown for "SSAP") or hide text."""
    shown = repr(char)[1:-1]
    for written in (char, f"&#{ord(char)};", f"&#x{ord(char):X};", f"&#X{ord(char):04x};"):
        out = neutralise(f"gate: {written}SSAP")
        assert out == f"gate: {shown}SSAP", written
        rendered = gfm(out)
        assert not any(c in rendered for c in HIDDEN), written


def test_named_entities_of_hidden_characters_and_our_joiner() -> None:
    assert neutralise("&rlm;&lrm;&ZeroWidthSpace;&zwnj;&shy;x") == "\\u200f\\u200e\\u200b\\u200c\\xadx"
    # the joiner is ours (escape.py writes it after "#" and "@"), and line breaks and tabs stay
    kept = f"a&#8288;b {WORD_JOINER}c\n\td\r\n"
    assert neutralise(kept) == kept


def test_a_fork_file_leaves_no_element_open_around_the_marker() -> None:
    from npu_gate.github.comment import close_open_blocks, comment_body, marker, strip_markers

    text = ("<details><summary>a</summary>\n\nx\n</details>\n\n<details><summary>b</summary>\n\n"
            "<table><tr><td>cell <b>bold\n\n```\n</td></tr></table></details>\n```\n")
    body = comment_body(close_open_blocks(neutralise(strip_markers(text)).rstrip("\n")), "ci")
    assert body.endswith(marker("ci") + "\n")
    assert body.index("</b>\n</td>\n</tr>\n</table>\n</details>") < body.index(marker("ci"))
    assert_inert(gfm(body))  # every <details>, <table>, <tr>, <td> closed, in order
