"""The HTTP retriever's client: call a team's own search API and read its ranked results.

Django-free: the app's services, the commands and the tests drive it alike. An `Endpoint`
(`corpus.httpendpoint`) says what to send and how to read the answer; a `HostPolicy`
(`corpus.httpguard`) where calls may go. The client retries timeouts, lost connections and
429/502/503/504 answers with exponential backoff (a server's ``Retry-After`` is honoured, up to
a cap), keeps at most ``concurrency`` requests in flight, caps the size of an answer, follows
redirects only on the same host and scheme, and returns one message per question that failed
instead of raising, so a run can list them. The calling itself (`GuardedClient`) knows nothing of
search: the LLM judge (`judges.client`) calls its endpoint through the same client.
"""

from __future__ import annotations

import json
import math
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import httpx2

from corpus.httpendpoint import (
    PLACEHOLDER_PATTERN,
    Endpoint,
    Hit,
    HttpSearchError,
    Identity,
    map_answer,
    render_template,
    render_text,
    resolve_env,
    text_value,
)
from corpus.httpguard import GuardedTransport, HostPolicy, HostRefused, host_of
from corpus.remote import excerpt

RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_REDIRECTS = 5
MAX_RESPONSE_BYTES = 20 * 2**20
MAX_BACKOFF = 30.0
T = TypeVar("T")
R = TypeVar("R")

# --- searching ----------------------------------------------------------------------------------


@dataclass
class Answer:
    """One question's outcome: its hits, or the reason there are none."""

    hits: list[Hit] | None = None
    error: str | None = None
    attempts: int = 0
    status: int | None = None
    remote: str = ""  # what the server answered, bounded: for admins only (`corpus.remote`)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Query:
    question: str
    k: int
    identity: Identity | None = None


class _Retry(Exception):
    def __init__(self, message: str, *, after: float | None = None):
        super().__init__(message)
        self.after = after


@dataclass
class Reply:
    """One call's outcome: the parsed JSON answer, or the reason there is none."""

    data: Any = None
    error: str | None = None
    attempts: int = 0
    status: int | None = None
    remote: str = ""  # what the server answered, bounded: for admins only (`corpus.remote`)


@dataclass(kw_only=True)
class GuardedClient:
    """Calls JSON APIs under a host policy: retries with backoff, a limit on concurrent
    requests, a size cap on answers, redirects only on the same host and scheme. The HTTP
    retriever (`SearchClient`) and the LLM judge (`judges.client`) both call through it. Use as
    a context manager."""

    policy: HostPolicy
    timeout: float = 10.0
    retries: int = 2
    backoff: float = 0.5
    concurrency: int = 4
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    sleep: Callable[[float], None] = time.sleep
    _client: httpx2.Client | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    @property
    def client(self) -> httpx2.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx2.Client(
                    transport=GuardedTransport(self.policy, connections=self.concurrency),
                    timeout=httpx2.Timeout(self.timeout),
                    follow_redirects=False,
                    trust_env=False,
                )
            return self._client

    def each(
        self,
        work: Callable[[T], R],
        items: Sequence[T],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> list[R]:
        """``work`` of every item, in order, with at most ``concurrency`` running at a time."""
        results: list[Any] = [None] * len(items)
        workers = max(1, min(self.concurrency, len(items)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="httpcall") as pool:
            futures = {pool.submit(work, item): i for i, item in enumerate(items)}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                if progress:
                    progress(1)
        return results

    def call(self, build: Callable[[], httpx2.Request]) -> Reply:
        """One request (made by ``build``), retried on timeouts, lost connections and
        429/502/503/504; its JSON answer, or the reason there is none."""
        attempts = 0
        last = ""
        while True:
            attempts += 1
            try:
                status, data = self._send(build())
            except HostRefused as error:
                return Reply(error=f"refused: {error}", attempts=attempts, remote=error.remote)
            except _Retry as retry:
                last = str(retry)
                if attempts > self.retries:
                    break
                self.sleep(self._delay(attempts, retry.after))
                continue
            except HttpSearchError as error:
                return Reply(error=str(error), attempts=attempts, remote=error.remote)
            return Reply(data=data, attempts=attempts, status=status)
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        return Reply(error=f"{last} (gave up after {tries})", attempts=attempts)

    def _delay(self, attempt: int, after: float | None) -> float:
        if after is not None:
            return min(max(after, 0.0), MAX_BACKOFF)
        # Exponential backoff with jitter, so parallel workers do not retry in step.
        base = self.backoff * 2 ** (attempt - 1)
        return min(base * random.uniform(0.5, 1.0), MAX_BACKOFF)

    def _send(self, request: httpx2.Request) -> tuple[int, Any]:
        origin = (request.url.scheme, host_of(request.url), request.url.port)
        started = time.monotonic()
        for _ in range(MAX_REDIRECTS + 1):
            self.policy.check_url(request.url)
            try:
                response = self.client.send(request, stream=True)
            except httpx2.TimeoutException:
                raise _Retry(f"no answer from {host_of(request.url)} within {self.timeout:g} s")
            except httpx2.TransportError as error:
                raise _Retry(
                    f"could not reach {host_of(request.url)} ({error or type(error).__name__})"
                )
            try:
                following = response.next_request
                if response.is_redirect and following is not None:
                    target = (following.url.scheme, host_of(following.url), following.url.port)
                    if target != origin:
                        raise HostRefused(
                            f"{host_of(request.url)} redirected to another host, port or "
                            "scheme; redirects are followed only on the same host and scheme",
                            remote=excerpt(f"Location: {following.url}"),
                        )
                    request = following
                    continue
                body = self._read(response, started)
            finally:
                response.close()
            return self._parse(response, body)
        raise HttpSearchError(f"more than {MAX_REDIRECTS} redirects")

    def _read(self, response: httpx2.Response, started: float) -> bytes:
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise HttpSearchError(
                        f"the answer is larger than {MAX_RESPONSE_BYTES // 2**20} MB; ask for "
                        "fewer results or leave out the document text"
                    )
                if time.monotonic() - started > 2 * self.timeout:
                    raise _Retry(f"the answer took longer than {2 * self.timeout:g} s")
                chunks.append(chunk)
        except httpx2.TimeoutException:
            raise _Retry(f"the answer stalled for {self.timeout:g} s")
        except httpx2.TransportError as error:
            raise _Retry(f"the connection broke while reading the answer ({error})")
        return b"".join(chunks)

    def _parse(self, response: httpx2.Response, body: bytes) -> tuple[int, Any]:
        status = response.status_code
        if status in RETRY_STATUSES:
            raise _Retry(
                f"HTTP {status} from {host_of(response.request.url)}", after=_retry_after(response)
            )
        if status >= 300:
            raise HttpSearchError(
                f"HTTP {status} from {host_of(response.request.url)}", remote=_snippet(body)
            )
        try:
            return status, json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            kind = response.headers.get("content-type", "no content type")
            raise HttpSearchError(
                f"the answer is not JSON ({excerpt(kind, 80)})", remote=_snippet(body)
            ) from None
        except RecursionError:
            raise HttpSearchError("the answer is JSON nested too deeply to read") from None
        except ValueError as error:  # an integer of more than 4,300 digits
            raise HttpSearchError(f"the answer is JSON that cannot be read ({error})") from None


@dataclass(kw_only=True)
class SearchClient(GuardedClient):
    """Sends queries to one endpoint: the endpoint's timeout, retries, backoff and
    concurrency are the client's."""

    endpoint: Endpoint
    all_groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("timeout", "retries", "backoff", "concurrency"):
            setattr(self, name, getattr(self.endpoint, name))

    def headers_for(self, identity: Identity | None) -> dict[str, str]:
        """Every header of a request as ``identity``, env: values read now (ConfigError)."""
        headers = {"Accept": "application/json"}
        configured = list(self.endpoint.headers) + list(identity.headers if identity else ())
        for name, value in configured:
            where = f"the {name} header" + (f" of test user {identity.name}" if identity else "")
            resolved = resolve_env(value, environ=self.environ, where=where)
            if resolved is value:
                resolved = render_text(value, self._values(identity, question="", k=0))
            headers[name] = str(resolved).replace("\r", " ").replace("\n", " ")
        return headers

    def search_many(
        self, queries: Sequence[Query], *, progress: Callable[[int], None] | None = None
    ) -> list[Answer]:
        """Every query's answer, in order, with at most ``concurrency`` requests at a time.

        A query that fails (after its retries) gets an error; the others go on. A
        configuration that cannot work (a missing env variable) raises ConfigError first.
        """
        for identity in {q.identity for q in queries}:
            self.headers_for(identity)
            if identity is not None:
                resolve_env(
                    identity.value, environ=self.environ, where=f"test user {identity.name}"
                )
        return self.each(self.search, queries, progress=progress)

    def search(self, query: Query) -> Answer:
        """One query, retried on timeouts, lost connections and 429/502/503/504."""
        reply = self.call(lambda: self.build_request(query))
        if reply.error is not None:
            return Answer(
                error=reply.error,
                attempts=reply.attempts,
                status=reply.status,
                remote=reply.remote,
            )
        try:
            hits = map_answer(reply.data, self.endpoint.mapping, k=query.k)
        except HttpSearchError as error:
            return Answer(
                error=str(error), attempts=reply.attempts, status=reply.status, remote=error.remote
            )
        return Answer(hits=hits, attempts=reply.attempts, status=reply.status)

    def _values(self, identity: Identity | None, *, question: str, k: int) -> dict[str, Any]:
        if identity is None:
            user, groups = None, list(self.all_groups)
        else:
            user = resolve_env(
                identity.value, environ=self.environ, where=f"test user {identity.name}"
            )
            user = identity.name if user is None else user
            groups = list(identity.groups)
        return {"question": question, "k": k, "user": user, "groups": groups}

    def build_request(self, query: Query) -> httpx2.Request:
        endpoint = self.endpoint
        values = self._values(query.identity, question=query.question, k=query.k)
        url = PLACEHOLDER_PATTERN.sub(
            lambda m: quote(text_value(values.get(m.group(1), "")), safe=""), endpoint.url
        )
        headers = self.headers_for(query.identity)
        content = None
        if endpoint.body.strip():
            body = render_template(json.loads(endpoint.body), values)
            content = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            return self.client.build_request(endpoint.method, url, headers=headers, content=content)
        except (httpx2.InvalidURL, httpx2.UnsupportedProtocol, ValueError) as error:
            raise HttpSearchError(f"the URL {url[:100]!r} cannot be called ({error})") from None


def _retry_after(response: httpx2.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        after = float(value)
    except ValueError:
        return None  # an HTTP date, or nonsense: the usual backoff
    # "nan" reads as a float too, and time.sleep(nan) raises: only a finite delay is honoured.
    return after if math.isfinite(after) else None


def _snippet(body: bytes) -> str:
    return excerpt(body) or "an empty body"
