"""A fake GitHub REST API on 127.0.0.1 (stdlib only): issue comments and pull requests.

Behaves like GitHub where our client depends on it: paginated listings with a Link
header, 201 on create, 422 for a body over 65,536 characters, 403 "Resource not
accessible by integration" for a read-only token (a fork PR's), 401 for an unknown token.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

WRITE_TOKEN = "t0k-write"
READ_TOKEN = "t0k-read"
BOT = "github-actions[bot]"
LIMIT = 65_536
FORBIDDEN = "Resource not accessible by integration"


class FakeGitHub:
    def __init__(self, repo: str = "octo/models") -> None:
        self.repo = repo
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: dict[int, str] = {}  # number -> head sha
        self.calls: list[tuple[str, str]] = []
        self.max_per_page = 100  # lower it to exercise pagination with a few comments
        self.auth_headers: list[str] = []
        self.listing: Any = None  # when set, every comment listing answers 200 with this
        self._next_id = 1000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add_comment(self, number: int, body: str, login: str = "someone") -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            comment = {"id": self._next_id, "body": body, "user": {"login": login},
                       "html_url": f"https://github.test/{self.repo}/pull/{number}"
                                   f"#issuecomment-{self._next_id}"}
            self.comments.setdefault(number, []).append(comment)
            return comment

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
                payload = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def _route(self, method: str) -> None:
                parts = urlsplit(self.path)
                fake.calls.append((method, parts.path))
                auth = self.headers.get("Authorization", "")
                fake.auth_headers.append(auth)
                token = auth.removeprefix("Bearer ")
                if token not in (WRITE_TOKEN, READ_TOKEN):
                    return self._send(401, {"message": "Bad credentials"})
                body: dict[str, Any] = {}
                if method in ("POST", "PATCH"):
                    length = int(self.headers.get("Content-Length", "0"))
                    body = json.loads(self.rfile.read(length) or b"{}")
                    if token == READ_TOKEN:
                        return self._send(403, {"message": FORBIDDEN})
                    if len(body.get("body", "")) > LIMIT:
                        return self._send(422, {"message": "Validation Failed", "errors": [
                            {"resource": "IssueComment", "code": "custom", "field": "body",
                             "message": f"body is too long (maximum is {LIMIT} characters)"}]})
                prefix = f"/repos/{fake.repo}/"
                rest = parts.path.removeprefix(prefix) if parts.path.startswith(prefix) else ""
                if m := re.fullmatch(r"issues/(\d+)/comments", rest):
                    number = int(m.group(1))
                    if method == "GET" and fake.listing is not None:
                        return self._send(200, fake.listing)
                    if method == "GET":
                        return self._list(number, parse_qs(parts.query))
                    if method == "POST":
                        return self._send(201, fake.add_comment(number, body["body"], BOT))
                if (m := re.fullmatch(r"issues/comments/(\d+)", rest)) and method == "PATCH":
                    for comments in fake.comments.values():
                        for c in comments:
                            if c["id"] == int(m.group(1)):
                                c["body"] = body["body"]
                                return self._send(200, c)
                if (m := re.fullmatch(r"pulls/(\d+)", rest)) and method == "GET":
                    number = int(m.group(1))
                    if number in fake.pulls:
                        pull = {"number": number, "head": {"sha": fake.pulls[number]}}
                        return self._send(200, pull)
                return self._send(404, {"message": "Not Found"})

            def _list(self, number: int, query: dict[str, list[str]]) -> None:
                per_page = min(int(query.get("per_page", ["30"])[0]), fake.max_per_page)
                page = int(query.get("page", ["1"])[0])
                comments = fake.comments.get(number, [])
                chunk = comments[(page - 1) * per_page: page * per_page]
                headers = {}
                if page * per_page < len(comments):
                    nxt = (f"{fake.url}/repos/{fake.repo}/issues/{number}/comments"
                           f"?per_page={per_page}&page={page + 1}")
                    headers["Link"] = f'<{nxt}>; rel="next"'
                self._send(200, chunk, headers)

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

            def do_PATCH(self) -> None:
                self._route("PATCH")

        return Handler
