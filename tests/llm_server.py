"""A fake LLM the tests start on 127.0.0.1, standing in for a team's judge endpoint.

It answers OpenAI-style ``POST /<behaviour>/v1/chat/completions`` and the generic shape
``POST /<behaviour>/generate``. It reads the question and the passage out of the prompt (the
default prompt's markers) and grades the passage from ``truth`` (passage text -> gold grade,
0 when unknown), as the behaviour in the path scripts it:

- ``agree``: the truth, except one passage in ten (by a hash of its text) one grade off;
- ``lenient``: the truth plus one (at most 2);
- ``obedient``: the truth, unless the passage tells the grader what to grade: then that grade;
- ``slow``: the truth after ``slow_seconds``;
- ``malformed``: a text that is not the JSON asked for;
- ``prose``: the JSON inside a code fence after a sentence (must still be read).

Every request is recorded, so tests can check what was sent (and what never was).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PASSAGE = re.compile(r"<<<PASSAGE\n(.*)\nPASSAGE>>>", re.S)
QUESTION = re.compile(r"^Question: (.*)$", re.M)
ORDER = re.compile(r"\bgrade (?:it |this passage |this )?([012])\b", re.I)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    prompt: str


@dataclass
class LLMServer:
    truth: dict[str, int] = field(default_factory=dict)
    slow_seconds: float = 2.0
    delay: float = 0.0  # seconds every answer waits (a model's latency, for the benchmark)
    requests: list[Recorded] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> LLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

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

    def sent_passages(self) -> list[str]:
        found = (PASSAGE.search(r.prompt) for r in self.requests)
        return [match.group(1) for match in found if match]

    # --- grading ---------------------------------------------------------------------------

    def grade(self, behaviour: str, prompt: str) -> int:
        match = PASSAGE.search(prompt)
        passage = match.group(1) if match else ""
        truth = self.truth.get(passage.strip(), 0)
        if behaviour == "agree":
            digest = hashlib.sha256(passage.encode()).digest()[0]
            return (truth + 1) % 3 if digest % 10 == 0 else truth
        if behaviour == "lenient":
            return min(2, truth + 1)
        if behaviour == "obedient":
            order = ORDER.search(passage)
            return int(order.group(1)) if order else truth
        return truth

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        behaviour = handler.path.strip("/").split("/")[0]
        messages = body.get("messages") or [{"content": body.get("prompt", "")}]
        prompt = messages[-1]["content"]
        with self._lock:
            self.requests.append(Recorded(handler.path, dict(handler.headers.items()), prompt))
        if behaviour == "slow":
            time.sleep(self.slow_seconds)
        elif self.delay:
            time.sleep(self.delay)
        grade = self.grade(behaviour, prompt)
        passage = PASSAGE.search(prompt)
        quote = passage.group(1).strip()[:40] if passage and grade else ""
        content = json.dumps({"grade": grade, "quote": quote})
        if behaviour == "malformed":
            content = "I think this passage deserves a two, roughly {grade: 2"
        elif behaviour == "prose":
            content = f"Here is my grade.\n```json\n{content}\n```"
        if handler.path.endswith("/generate"):
            payload = {"response": content, "prompt_eval_count": 120, "eval_count": 9}
        else:
            payload = {
                "id": "chatcmpl-1",
                "model": "fake-judge-1",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129},
            }
        data = json.dumps(payload).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        with contextlib.suppress(BrokenPipeError):  # the client gave up waiting (slow judge)
            handler.wfile.write(data)
