"""A fake Hugging Face Hub on 127.0.0.1 that speaks just enough of the Hub's HTTP API for resolve():
paths-info (file sizes), and HEAD/GET of `/{repo}/resolve/{revision}/{file}`. Repos can be told to
hang, to answer 500, or to declare a file size other than the content's. Tests point HF_ENDPOINT at
it; nothing ever reaches the network.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional
from urllib.parse import parse_qs, unquote

__all__ = ["FakeRepo", "FakeHub"]

COMMIT = "a" * 40
_PATHS_INFO = re.compile(r"^/api/models/([^/]+/[^/]+)/paths-info/(.+)$")
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")


@dataclass
class FakeRepo:
    files: dict[str, bytes] = field(default_factory=dict)
    behaviour: str = "ok"  # ok | hang | error500
    declared_sizes: dict[str, int] = field(default_factory=dict)  # paths-info sizes that differ from the content


class FakeHub:
    """`with FakeHub() as hub:` serves `hub.repos` at `hub.url`; `hub.requests` records (method, path)."""

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[tuple[str, str]] = []
        self._release = threading.Event()  # set on exit: hanging handlers return
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:
                hub._handle(self, "POST")

            def do_HEAD(self) -> None:
                hub._handle(self, "HEAD")

            def do_GET(self) -> None:
                hub._handle(self, "GET")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def add(self, repo_id: str, files: Optional[dict[str, object]] = None, **kw) -> FakeRepo:
        raw = {n: (c if isinstance(c, bytes) else json.dumps(c).encode()) for n, c in (files or {}).items()}
        self.repos[repo_id] = FakeRepo(raw, **kw)
        return self.repos[repo_id]

    # ---- request handling ------------------------------------------------------------------

    def _send(self, h: BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: Optional[dict] = None,
              head_only: bool = False) -> None:
        h.send_response(status)
        for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
            h.send_header(k, v)
        h.end_headers()
        if body and not head_only:
            h.wfile.write(body)

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        path = unquote(h.path.split("?", 1)[0])
        self.requests.append((method, path))
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0)) if method == "POST" else b""
        m = _PATHS_INFO.match(path) if method == "POST" else _RESOLVE.match(path)
        repo = self.repos.get(m.group(1)) if m else None
        if repo is None:
            self._send(h, 404, b'{"error": "Repository not found"}',
                       {"X-Error-Code": "RepoNotFound", "Content-Type": "application/json"}, method == "HEAD")
            return
        if repo.behaviour == "hang":
            self._release.wait(60)
            return
        if repo.behaviour == "error500":
            self._send(h, 500, b'{"error": "Internal Error"}', {"Content-Type": "application/json"}, method == "HEAD")
            return
        if method == "POST":
            self._paths_info(h, repo, body)
        else:
            self._file(h, repo, m.group(3), method == "HEAD")

    def _paths_info(self, h: BaseHTTPRequestHandler, repo: FakeRepo, body: bytes) -> None:
        wanted = parse_qs(body.decode()).get("paths", [])
        out = [
            {"type": "file", "path": name, "oid": hashlib.sha1(repo.files[name]).hexdigest(),
             "size": repo.declared_sizes.get(name, len(repo.files[name]))}
            for name in wanted if name in repo.files
        ]
        self._send(h, 200, json.dumps(out).encode(), {"Content-Type": "application/json"})

    def _file(self, h: BaseHTTPRequestHandler, repo: FakeRepo, name: str, head_only: bool) -> None:
        content = repo.files.get(name)
        if content is None:
            self._send(h, 404, b"", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT}, head_only)
            return
        etag = hashlib.sha1(content).hexdigest()
        self._send(h, 200, content, {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"'}, head_only)
