"""A small search server the tests start on 127.0.0.1, standing in for a team's own system.

It answers in the Elasticsearch ``_search`` shape (``POST /<index>/_search``) and in a custom
shape (``GET /api/find?query=…&limit=…&as=…``), filters by its own access list before the top k,
and can misbehave on purpose: leak a restricted document to one user, filter after the top k
(a side channel), answer slowly, with HTML, in the wrong shape, redirect elsewhere, or fail a
few times first. Every request is recorded, so tests can check what was sent.

`RawServer` answers each question with the exact bytes and headers a test gives it (JSON a
well-behaved server would never send: NaN, 5,000-digit integers, `Retry-After: nan`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

WORD = re.compile(r"\w+")
SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


@dataclass
class IndexedDocument:
    doc_id: str
    text: str
    groups: frozenset[str] = frozenset()


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class SearchServer:
    documents: list[IndexedDocument]
    # What each user (by the X-Test-User header, or ?as=) may see; no header = everything.
    users: dict[str, frozenset[str]] = field(default_factory=dict)
    # user -> doc ids returned to that user whatever their groups (the deliberate leak).
    leaks: dict[str, set[str]] = field(default_factory=dict)
    # users whose results are filtered after the top k instead of before (a side channel).
    post_filter: set[str] = field(default_factory=set)
    requests: list[Recorded] = field(default_factory=list)
    failures_left: dict[str, int] = field(default_factory=dict)
    delay: float = 0.0
    active: int = 0
    most_active: int = 0  # the most requests in flight at once
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> SearchServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                server._handle(self)

            def do_POST(self):
                server._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # --- searching ------------------------------------------------------------------------

    def search(
        self, question: str, k: int, user: str | None
    ) -> list[tuple[IndexedDocument, float]]:
        words = {w.lower() for w in WORD.findall(question)}
        scored = []
        for document in self.documents:
            score = sum(1 for w in WORD.findall(document.text) if w.lower() in words)
            if score:
                scored.append((document, score / (1 + len(document.text) / 1000)))
        scored.sort(key=lambda pair: (-pair[1], pair[0].doc_id))
        if user is None:
            return scored[:k]

        def allowed(document):
            return (
                not document.groups
                or document.groups & self.users.get(user, frozenset())
                or document.doc_id in self.leaks.get(user, set())
            )

        if user in self.post_filter:
            return [pair for pair in scored[:k] if allowed(pair[0])]
        return [pair for pair in scored if allowed(pair[0])][:k]

    @staticmethod
    def fragment(document: IndexedDocument, question: str) -> tuple[int, int]:
        words = {w.lower() for w in WORD.findall(question)}
        best = max(
            SENTENCE.finditer(document.text),
            key=lambda m: sum(1 for w in WORD.findall(m.group()) if w.lower() in words),
        )
        start = best.start() + len(best.group()) - len(best.group().lstrip())
        return start, best.end()

    # --- HTTP -----------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            self._answer(handler)
        finally:
            with self._lock:
                self.active -= 1

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        self.requests.append(
            Recorded(handler.command, handler.path, dict(handler.headers.items()), body)
        )
        parts = urlsplit(handler.path)
        path = parts.path
        if self.delay:
            time.sleep(self.delay)
        if self.failures_left.get(path, 0) > 0:
            self.failures_left[path] -= 1
            return self._send(
                handler, 503, b'{"error": "overloaded"}', headers={"Retry-After": "0"}
            )
        if path == "/slow":
            time.sleep(3)
            return self._json(handler, {"hits": {"hits": []}})
        if path == "/notjson":
            return self._send(handler, 200, b"<html>Login required</html>", kind="text/html")
        if path == "/wrongshape":
            return self._json(handler, {"took": 3, "items": []})
        if path == "/broken":
            return self._send(handler, 500, b'{"error": "index_not_found_exception"}')
        if path.startswith("/redirect-elsewhere"):
            target = f"http://127.0.0.2:{self.port}/policies/_search"
            return self._send(handler, 302, b"", headers={"Location": target})
        if path.startswith("/redirect-same"):
            return self._send(handler, 307, b"", headers={"Location": "/policies/_search"})
        if path.endswith("/_search"):
            return self._elasticsearch(handler, body)
        if path == "/api/find":
            return self._custom(handler, parse_qs(parts.query))
        self._send(handler, 404, b'{"error": "no such endpoint"}')

    def _elasticsearch(self, handler, body: bytes) -> None:
        request = json.loads(body or b"{}")
        question = request["query"]["match"]["text"]
        k = int(request.get("size", 10))
        user = handler.headers.get("X-Test-User")
        hits = []
        for document, score in self.search(question, k, user):
            start, end = self.fragment(document, question)
            hits.append(
                {
                    "_index": "policies",
                    "_id": document.doc_id,
                    "_score": score,
                    "highlight": {"text": [document.text[start:end]]},
                }
            )
        self._json(handler, {"took": 1, "hits": {"total": {"value": len(hits)}, "hits": hits}})

    def _custom(self, handler, query: dict[str, list[str]]) -> None:
        question = query.get("query", [""])[0]
        k = int(query.get("limit", ["10"])[0])
        user = query.get("as", [None])[0] or None
        items = []
        for document, score in self.search(question, k, user):
            start, end = self.fragment(document, question)
            items.append(
                {
                    "ref": {"id": document.doc_id},
                    "relevance": round(score, 6),
                    "span": {"from": start, "to": end},
                }
            )
        self._json(handler, {"data": {"items": items}, "meta": {"user": user}})

    def _json(self, handler, payload) -> None:
        self._send(handler, 200, json.dumps(payload).encode())

    def _send(self, handler, status, body: bytes, *, kind="application/json", headers=None):
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)


class RawServer:
    """Answers GET /search?q=… with the raw body (and headers) given for that question."""

    def __init__(self):
        self.bodies: dict[str, tuple[int, dict, bytes]] = {}
        self.default = (200, {}, b'{"results": []}')
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests += 1
                question = parse_qs(urlsplit(self.path).query).get("q", [""])[0]
                status, headers, body = server.bodies.get(question, server.default)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
