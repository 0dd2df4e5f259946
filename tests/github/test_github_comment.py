"""The sticky comment against a fake GitHub on 127.0.0.1: find, update, create, limits."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from npu_gate.github import workflow
from npu_gate.github.api import GitHubClient, GitHubError
from npu_gate.github.comment import (
    COMMENT_LIMIT,
    close_open_blocks,
    comment_body,
    fit,
    marker,
    upsert,
)
from tests.helpers.fake_github import BOT, READ_TOKEN, WRITE_TOKEN, FakeGitHub

PR = 7



def client(fake: FakeGitHub, token: str = WRITE_TOKEN) -> GitHubClient:
    return GitHubClient(token, fake.repo, fake.url)


def test_create_then_update_leaves_one_comment_and_others_untouched(fake: FakeGitHub) -> None:
    fake.max_per_page = 2  # 5 unrelated comments: our comment lands on page 3
    unrelated = [fake.add_comment(PR, f"review note {i}", "alice") for i in range(4)]
    # Someone else's comment quoting our marker must never be edited.
    spoof = fake.add_comment(PR, "copied " + marker(""), "mallory")
    first = upsert(client(fake), PR, comment_body("## run 1"), comment_id="")
    assert first.action == "created"
    second = upsert(client(fake), PR, comment_body("## run 2"), comment_id="")
    assert second.action == "updated"
    assert second.comment_id == first.comment_id
    ours = [c for c in fake.comments[PR] if c["user"]["login"] == BOT]
    assert len(ours) == 1
    assert ours[0]["body"] == "## run 2\n\n<!-- npu-gate:report id=default -->\n"
    assert [c["body"] for c in fake.comments[PR][:4]] == [c["body"] for c in unrelated]
    assert spoof["body"] == "copied <!-- npu-gate:report id=default -->"
    # run 2 read all three pages (2 + 2 + 2 comments) before patching
    gets = [c for c in fake.calls if c[0] == "GET"]
    assert len(gets) == 3 + 3
    assert fake.calls[-1] == ("PATCH", f"/repos/octo/models/issues/comments/{first.comment_id}")


def test_same_body_is_not_patched_again(fake: FakeGitHub) -> None:
    upsert(client(fake), PR, comment_body("same"))
    again = upsert(client(fake), PR, comment_body("same"))
    assert again.action == "unchanged"
    assert [m for m, _ in fake.calls] == ["GET", "POST", "GET"]


def test_comment_ids_keep_separate_comments(fake: FakeGitHub) -> None:
    upsert(client(fake), PR, comment_body("a", "linux"), comment_id="linux")
    upsert(client(fake), PR, comment_body("b", "mac"), comment_id="mac")
    upsert(client(fake), PR, comment_body("a2", "linux"), comment_id="linux")
    bodies = sorted(c["body"] for c in fake.comments[PR])
    assert bodies == ["a2\n\n<!-- npu-gate:report id=linux -->\n",
                      "b\n\n<!-- npu-gate:report id=mac -->\n"]


def test_create_false_skips_a_missing_comment_but_updates_an_existing_one(fake: FakeGitHub) -> None:
    assert upsert(client(fake), PR, comment_body("x"), create=False).action == "skipped"
    assert PR not in fake.comments
    upsert(client(fake), PR, comment_body("x"))
    assert upsert(client(fake), PR, comment_body("fixed"), create=False).action == "updated"


def test_read_only_token_gets_403_and_no_token_in_message(fake: FakeGitHub) -> None:
    with pytest.raises(GitHubError) as info:
        upsert(client(fake, READ_TOKEN), PR, comment_body("x"))
    assert info.value.status == 403
    assert str(info.value) == "HTTP 403: Resource not accessible by integration"
    assert fake.auth_headers[0] == f"Bearer {READ_TOKEN}"


def test_fake_rejects_long_bodies_like_github(fake: FakeGitHub) -> None:
    with pytest.raises(GitHubError) as info:
        client(fake).create_comment(PR, "x" * (COMMENT_LIMIT + 1))
    assert info.value.status == 422
    assert "body is too long (maximum is 65536 characters)" in str(info.value)


def _report(models: int, rows: int) -> str:
    parts = []
    for m in range(models):
        parts.append(f"## ❌ npu-gate: **FAIL** · model{m}\n\nStatic prediction.\n\n"
                     "### Summary\n\n| a | b |\n|---|---|\n| Nodes | 9 |\n\n"
                     "### Findings\n\n" + "".join(f"| error | x{i} |\n" for i in range(rows)) + "\n"
                     "<details><summary>Op census and shapes (9 nodes)</summary>\n\n"
                     + "".join(f"| node{i} | Conv |\n" for i in range(rows)) + "\n</details>\n\n"
                     "### Timings\n\n| total_s | 1.0 |\n")
    return "\n".join(parts)


def test_truncation_drops_details_first_keeps_verdict_summary_marker(fake: FakeGitHub) -> None:
    report = _report(models=3, rows=3000)  # 18,000 table rows: far over the limit
    assert len(report) > 100_000
    body = comment_body(report, "ci", where="the artifacts")
    assert len(body) <= COMMENT_LIMIT
    assert body.endswith("<!-- npu-gate:report id=ci -->\n")
    for m in range(3):
        assert f"## ❌ npu-gate: **FAIL** · model{m}" in body
    assert body.count("### Summary") == 3
    assert "<details>" not in body
    assert "### Timings" not in body
    # Findings tables go last, the last model's first: model0 keeps its findings.
    assert body.count("### Findings") == 1
    assert "### Findings\n\n| error | x0 |" in body.split("model1")[0]
    assert ("_Report truncated to fit GitHub's limit: left out Timings (×3), "
            "Op census and shapes (×3), Findings (×2). ") in body
    assert "The full report is in the artifacts._" in body
    posted = upsert(client(fake), PR, body, comment_id="ci")
    assert posted.action == "created"
    assert fake.comments[PR][0]["body"] == body


def test_hard_cut_closes_open_fence_and_details() -> None:
    # inside the verdict section (never dropped), so only a hard cut can shorten it
    report = "## verdict\n\nLog: <details><summary>log</summary>\n\n```\n" + "line\n" * 30_000
    body = fit(report, 10_000, tail="\n<!-- m -->\n")
    assert len(body) <= 10_000
    assert body.endswith("<!-- m -->\n")
    assert "cut the rest short" in body
    text = body.split("\n\n---\n")[0]
    assert text.endswith("line\n```\n</details>")
    assert close_open_blocks("a\n```x\nb") == "a\n```x\nb\n```"


@pytest.mark.parametrize(("text", "added"), [
    ("~~~\ncode", "\n~~~"),  # a tilde fence is closed by tildes, not backticks
    ("````md\n```\nstill code", "\n````"),  # only a run at least as long closes it
    ("```\nx\n```\n~~~~\ny", "\n~~~~"),
    ("```py\nx\n```", ""),
    ("use ```x``` inline", ""),  # inline code, not a fence
    ("<PRE>\nraw", "\n</pre>"),
    ("<details><summary>s</summary>\n\n<pre>x</pre>", "\n</details>"),
])
def test_close_open_blocks_closes_what_a_fork_left_open(text: str, added: str) -> None:
    """Comment-only mode posts a fork's file: a block it leaves open would swallow our
    truncation note and show our hidden marker as text."""
    assert close_open_blocks(text) == text + added


def test_unknown_detail_sections_are_dropped_but_summary_kept() -> None:
    report = ("## v\n\n### Summary\n\n" + "s\n" * 100 + "### Something new\n\n" + "n\n" * 5000
              + "<details><summary>Extra (3)</summary>\n\n" + "d\n" * 5000 + "</details>\n")
    body = fit(report, 2_000, where="x")
    assert body.startswith("## v\n\n### Summary\n\n" + "s\n" * 100)
    assert "left out Extra, Something new." in body


def test_advice_of_every_model_goes_before_any_models_cpu_fallback() -> None:
    # Suggested rewrites and CPU fallback used to share a rank: the last model lost its CPU
    # fallback reasons while the first kept its suggestions.
    def model(m: int) -> str:
        return (f"## ❌ npu-gate: **FAIL** · model{m}\n\n### Summary\n\n| s | 1 |\n\n"
                "### CPU fallback\n\n" + f"| reason {m} |\n" * 200 + "\n"
                "### Suggested rewrites\n\n" + f"| rewrite {m} |\n" * 400 + "\n"
                "### Findings\n\n" + f"| error {m} |\n" * 50 + "\n")
    report = "\n".join(model(m) for m in range(3))
    body = fit(report, 12_000, where="x")
    assert body.count("### CPU fallback") == 3 and body.count("### Findings") == 3
    assert "### Suggested rewrites" not in body
    assert "left out Suggested rewrites (×3)." in body


def test_fit_leaves_short_reports_alone() -> None:
    assert fit("short", 100, tail="|m") == "short|m"


def test_untrusted_markers_are_replaced_by_ours() -> None:
    body = comment_body("hi <!-- npu-gate:report id=other -->", "mine")
    assert body == "hi \n\n<!-- npu-gate:report id=mine -->\n"


def test_links_to_other_hosts_are_not_followed(fake: FakeGitHub) -> None:
    c = client(fake)
    with pytest.raises(GitHubError, match="refusing to follow a link to another host"):
        c._request("GET", "http://evil.example/steal")
    assert fake.calls == []


def test_unreachable_api_is_an_error_without_token() -> None:
    c = GitHubClient("sekret", "o/r", "http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(GitHubError) as info:
        list(c.issue_comments(1))
    assert info.value.status == 0
    assert "sekret" not in str(info.value)


def test_workflow_commands_escape_data_and_properties() -> None:
    out = io.StringIO()
    workflow.command("error", "50% off\nnext", out, file="a,b:c.json", title=None)
    assert out.getvalue() == "::error file=a%2Cb%3Ac.json::50%25 off%0Anext\n"


def test_outputs_use_a_heredoc_for_multiline_values(tmp_path: Path) -> None:
    path = tmp_path / "out"
    workflow.set_outputs({"one": "1", "many": "a\nb"}, {"GITHUB_OUTPUT": str(path)})
    lines = path.read_text().splitlines()
    assert lines[0] == "one=1"
    assert lines[1].startswith("many<<npu_gate_")
    assert lines[2:4] == ["a", "b"]
    assert lines[4] == lines[1].split("<<")[1]


def test_summary_fit_counts_utf8_bytes() -> None:
    report = "## ❌ verdict\n\n" + "### Findings\n\n" + "| ❌ | ünïcode |\n" * 20_000
    size = len(report.encode("utf-8"))
    assert size > 200_000
    fitted = fit(report, 100_000, where="x", measure=lambda s: len(s.encode("utf-8")))
    assert len(fitted.encode("utf-8")) <= 100_000
    assert fitted.startswith("## ❌ verdict\n\n")
    assert "left out Findings" in fitted
