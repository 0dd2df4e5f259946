"""A small GitHub REST client on urllib: issue comments and pull requests.

The base URL comes from GITHUB_API_URL (GitHub Enterprise Server, and the tests' fake
server on 127.0.0.1). The token goes only into the Authorization header of requests to
that host and never into messages.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

DEFAULT_API_URL = "https://api.github.com"
MAX_PAGES = 50  # 5,000 comments: far beyond any real PR, and a bound on a misbehaving server
TIMEOUT_S = 30
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


class GitHubError(Exception):
    """A request failed: HTTP status (0 when no response) and GitHub's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status


class GitHubClient:
    def __init__(self, token: str, repository: str, api_url: str = DEFAULT_API_URL) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
            raise ValueError(f"GITHUB_REPOSITORY {repository!r} is not owner/name")
        self.api_url = (api_url or DEFAULT_API_URL).rstrip("/")
        self.repository = repository
        self._token = token
        self._netloc = urllib.parse.urlsplit(self.api_url).netloc

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None
                 ) -> tuple[Any, dict[str, str]]:
        if urllib.parse.urlsplit(url).netloc != self._netloc:
            raise GitHubError(0, f"refusing to follow a link to another host: {url}")
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method, headers={
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "npu-gate",
            **({"Authorization": f"Bearer {self._token}"} if self._token else {}),
            **({"Content-Type": "application/json"} if data is not None else {}),
        })
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                payload = response.read()
                headers = {k.lower(): v for k, v in response.headers.items()}
        except urllib.error.HTTPError as exc:
            raise GitHubError(exc.code, self._scrub(_message(exc.read()))) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GitHubError(0, self._scrub(f"cannot reach {self.api_url}: {reason}")) from None
        try:
            return (json.loads(payload) if payload else None), headers
        except ValueError:
            raise GitHubError(0, f"{method} {url}: the response is not JSON") from None

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    def _url(self, path: str) -> str:
        return f"{self.api_url}/repos/{self.repository}/{path}"

    def issue_comments(self, number: int) -> Iterator[dict[str, Any]]:
        """Every comment of an issue or pull request, following the Link header's pages."""
        url: str | None = self._url(f"issues/{number}/comments?per_page=100")
        for _ in range(MAX_PAGES):
            if url is None:
                return
            page, headers = self._request("GET", url)
            if not isinstance(page, list) or not all(isinstance(c, dict) for c in page):
                # a proxy's or a broken server's answer: an API error (a warning), not a crash
                raise GitHubError(0, f"GET {url}: the response is not a list of comments")
            yield from page
            match = _NEXT.search(headers.get("link", ""))
            url = match.group(1) if match else None

    def create_comment(self, number: int, body: str) -> dict[str, Any]:
        url = self._url(f"issues/{number}/comments")
        comment, _ = self._request("POST", url, {"body": body})
        return _object(comment, f"POST {url}")

    def update_comment(self, comment_id: int, body: str) -> dict[str, Any]:
        url = self._url(f"issues/comments/{comment_id}")
        comment, _ = self._request("PATCH", url, {"body": body})
        return _object(comment, f"PATCH {url}")

    def pull_request(self, number: int) -> dict[str, Any]:
        url = self._url(f"pulls/{number}")
        pull, _ = self._request("GET", url)
        return _object(pull, f"GET {url}")


def _object(doc: Any, request: str) -> dict[str, Any]:
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise GitHubError(0, f"{request}: the response is not a JSON object")
    return doc


def _message(payload: bytes) -> str:
    """GitHub's error message, e.g. 'Resource not accessible by integration'."""
    try:
        doc = json.loads(payload)
    except ValueError:
        return payload.decode("utf-8", "replace")[:200] or "no message"
    if not isinstance(doc, dict):
        return "no message"
    text = str(doc.get("message", "no message"))
    errors = doc.get("errors")
    if isinstance(errors, list):
        details = [str(e.get("message", e.get("code", ""))) if isinstance(e, dict) else str(e)
                   for e in errors]
        text += "".join(f"; {d}" for d in details if d)
    return text
