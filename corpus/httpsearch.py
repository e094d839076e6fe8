"""The HTTP retriever's client: call a team's own search API and read its ranked results.

Django-free: the app's services, the commands and the tests drive it alike. A search endpoint is
a URL template, an optional JSON body template, headers and a response mapping (dotted paths to
the result list, and inside each result to the doc id, score, offsets or passage text); presets
cover Elasticsearch/OpenSearch ``_search`` and a generic JSON API.

Templates take ``{{question}}`` (the question text, verbatim), ``{{k}}`` (how many results),
``{{user}}`` (what the team's system needs to act as a test user) and ``{{groups}}`` (that
user's Goldset access groups). A body string that is exactly one placeholder becomes the typed
value (``"{{k}}"`` is the number 10, ``"{{groups}}"`` a list); inside longer text a placeholder
is replaced by its text. In a URL every value is percent-encoded.

Secrets never live in configuration: a header value ``env:OUR_SEARCH_TOKEN`` is read from the
worker's environment when the request is made, and a header whose name looks secret must be
given that way. Outbound calls go only where `HostPolicy` (``GOLDSET_HTTP_ALLOWED_HOSTS``) lets
them: the URL's host must be listed, every address it resolves to is checked at connect time
(so DNS cannot swap in a private address after the check), loopback, link-local and private
addresses need their address or network listed, and a redirect to another host is refused.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import httpcore2
import httpx2
from httpcore2._backends.sync import SyncBackend

PLACEHOLDERS = ("question", "k", "user", "groups")
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# A header with one of these in its name carries a credential: its value must come from env:.
_SECRET_HEADER = re.compile(r"auth|cookie|token|secret|key|passw|session|credential", re.I)
# Goldset's own secrets: an endpoint must never be able to send them anywhere.
FORBIDDEN_ENV = frozenset(
    {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "PGPASSWORD"}
)
ENV_PREFIX = "env:"

METHODS = ("GET", "POST")
RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_REDIRECTS = 5
MAX_RESPONSE_BYTES = 20 * 2**20
MAX_BACKOFF = 30.0
LIMITS = {
    "timeout": (0.1, 120.0),
    "retries": (0, 10),
    "backoff": (0.0, 30.0),
    "concurrency": (1, 32),
}


class HttpSearchError(Exception):
    """Base of this module's errors; the message is meant for the person who configured it."""


class ConfigError(HttpSearchError):
    """An endpoint, identity or host list that cannot be used; nothing was called."""


class HostRefused(HttpSearchError):
    """A call the host policy does not allow (never retried)."""


# --- dotted paths -------------------------------------------------------------------------------

_SEGMENT = re.compile(r'\.?([^.\[\]"]+)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]')


def parse_path(text: str) -> tuple[str | int, ...]:
    """``hits.hits``, ``items[0].id``, ``highlight["text.en"]``: keys and list indexes.

    A bare number between dots (``a.0.b``) is an index too.
    """
    text = text.strip()
    if not text:
        raise ConfigError("an empty path")
    parts: list[str | int] = []
    position = 0
    while position < len(text):
        match = _SEGMENT.match(text, position)
        if match is None or (match.group(1) is not None and position and text[position] != "."):
            raise ConfigError(f"cannot read the path {text!r} at character {position + 1}")
        key, index, quoted = match.groups()
        if index is not None:
            parts.append(int(index))
        elif quoted is not None:
            parts.append(re.sub(r"\\(.)", r"\1", quoted))
        else:
            parts.append(int(key) if key.isdigit() else key)
        position = match.end()
    return tuple(parts)


_MISSING = object()


def dig(value: Any, path: Sequence[str | int]) -> Any:
    """The value at ``path`` inside parsed JSON, or `_MISSING`."""
    for part in path:
        if isinstance(part, int) and isinstance(value, list):
            if not -len(value) <= part < len(value):
                return _MISSING
            value = value[part]
        elif isinstance(value, dict) and str(part) in value:
            value = value[str(part)]
        else:
            return _MISSING
    return value


def describe(value: Any) -> str:
    """What a JSON value is, briefly, for messages that say what the answer held instead."""
    if value is _MISSING:
        return "nothing"
    if isinstance(value, dict):
        keys = ", ".join(list(map(str, value))[:8]) + (", …" if len(value) > 8 else "")
        return f"an object with keys {keys}" if value else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if value is None:
        return "null"
    return f"the {type(value).__name__} {json.dumps(value)[:60]}"


# --- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResponseMapping:
    """Where the results are in an answer, and where each result keeps what Goldset needs."""

    results: str
    doc_id: str
    score: str = ""
    start: str = ""
    end: str = ""
    text: str = ""

    def problems(self) -> list[str]:
        found = []
        for name in ("results", "doc_id", "score", "start", "end", "text"):
            path = getattr(self, name)
            if not path:
                if name in ("results", "doc_id"):
                    found.append(f"the {name.replace('_', ' ')} path is required")
                continue
            try:
                parse_path(path)
            except ConfigError as error:
                found.append(f"{name.replace('_', ' ')} path: {error}")
        if bool(self.start) != bool(self.end):
            found.append("give both the start and the end path, or neither")
        return found


@dataclass(frozen=True)
class Preset:
    label: str
    method: str
    url: str
    body: str
    mapping: ResponseMapping


_ES_BODY = """{
  "size": "{{k}}",
  "query": {"match": {"text": "{{question}}"}},
  "_source": false,
  "highlight": {"fields": {"text": {"number_of_fragments": 1, "fragment_size": 400,
    "no_match_size": 400, "pre_tags": [""], "post_tags": [""]}}}
}"""
PRESETS = {
    "elasticsearch": Preset(
        label="Elasticsearch / OpenSearch _search",
        method="POST",
        url="https://search.example.com:9200/policies/_search",
        body=_ES_BODY,
        mapping=ResponseMapping(
            results="hits.hits", doc_id="_id", score="_score", text="highlight.text"
        ),
    ),
    "generic": Preset(
        label="Generic JSON API",
        method="GET",
        url="https://search.example.com/search?q={{question}}&k={{k}}",
        body="",
        mapping=ResponseMapping(
            results="results",
            doc_id="doc_id",
            score="score",
            start="start",
            end="end",
            text="text",
        ),  # fmt: skip
    ),
}


@dataclass(frozen=True)
class Endpoint:
    """A search API as configured: request templates, mapping, and how hard to try."""

    url: str
    mapping: ResponseMapping
    method: str = "POST"
    headers: tuple[tuple[str, str], ...] = ()
    body: str = ""
    timeout: float = 10.0
    retries: int = 2
    backoff: float = 0.5
    concurrency: int = 4

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Endpoint:
        """An endpoint from its stored form (`to_dict`); ConfigError lists every problem."""
        if not isinstance(data, Mapping):
            raise ConfigError("the endpoint configuration is not an object")
        mapping = data.get("mapping") or {}
        headers = data.get("headers") or {}
        try:
            endpoint = cls(
                url=str(data.get("url") or ""),
                method=str(data.get("method") or "POST").upper(),
                headers=tuple((str(k), str(v)) for k, v in dict(headers).items()),
                body=str(data.get("body") or ""),
                mapping=ResponseMapping(
                    **{k: str(mapping.get(k) or "") for k in ResponseMapping.__annotations__}
                ),
                **{
                    name: type(getattr(cls, name))(data[name])
                    for name in LIMITS
                    if data.get(name) is not None
                },
            )
        except (TypeError, ValueError) as error:
            raise ConfigError(f"the endpoint configuration is malformed ({error})") from None
        endpoint.check()
        return endpoint

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "method": self.method,
            "headers": dict(self.headers),
            "body": self.body,
            "mapping": {k: getattr(self.mapping, k) for k in ResponseMapping.__annotations__},
            **{name: getattr(self, name) for name in LIMITS},
        }

    def problems(self) -> list[str]:
        found: list[str] = []
        if self.method not in METHODS:
            found.append(f"the method is GET or POST, not {self.method!r}")
        found += _url_problems(self.url)
        if self.body.strip():
            if self.method == "GET":
                found.append(
                    "a GET request carries no body: use POST, or put the question in the URL"
                )
            try:
                found += _placeholder_problems(json.loads(self.body), where="body")
            except json.JSONDecodeError as error:
                found.append(
                    f"the body template is not JSON (line {error.lineno}, column {error.colno}: "
                    f'{error.msg}); placeholders go inside strings, like "size": "{{{{k}}}}"'
                )
        if not any("question" in _placeholders_in(text) for text in (self.url, self.body)):
            found.append(
                "the question never reaches the endpoint: put {{question}} in the URL or body"
            )
        for name, value in self.headers:
            found += header_problems(name, value)
        found += self.mapping.problems()
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                found.append(f"{name} must be between {low} and {high}, not {value}")
        return found

    def check(self) -> None:
        problems = self.problems()
        if problems:
            raise ConfigError("; ".join(problems) + ".")


def _placeholders_in(text: str) -> set[str]:
    return {match.group(1) for match in _PLACEHOLDER.finditer(text)}


def _unknown_placeholders(text: str, where: str) -> list[str]:
    return [
        f"unknown placeholder {{{{{name}}}}} in the {where} (use "
        + ", ".join(f"{{{{{p}}}}}" for p in PLACEHOLDERS)
        + ")"
        for name in sorted(_placeholders_in(text) - set(PLACEHOLDERS))
    ]


def _placeholder_problems(value: Any, *, where: str) -> list[str]:
    if isinstance(value, str):
        return _unknown_placeholders(value, where)
    if isinstance(value, dict):
        return [p for item in value.values() for p in _placeholder_problems(item, where=where)]
    if isinstance(value, list):
        return [p for item in value for p in _placeholder_problems(item, where=where)]
    return []


def _url_problems(url: str) -> list[str]:
    if not url.strip():
        return ["the URL is required"]
    found = _unknown_placeholders(url, "URL")
    sample = _PLACEHOLDER.sub("x", url)
    try:
        parts = urlsplit(sample)
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError as error:
        return [*found, f"the URL cannot be read ({error})"]
    if parts.scheme not in ("http", "https"):
        found.append(f"the URL must start with http:// or https://, not {url[:40]!r}")
    elif not parts.hostname:
        found.append("the URL has no host")
    if "@" in parts.netloc:
        found.append(
            "the URL carries a user name or password: pass credentials in a header with env:NAME"
        )
    if parts.fragment:
        found.append("the URL has a #fragment, which is never sent")
    return found


def header_problems(name: str, value: str) -> list[str]:
    """Why a configured header cannot be stored (a secret must be an env: reference)."""
    if not _HEADER_NAME.fullmatch(name):
        return [f"{name!r} is not a valid header name"]
    if "\r" in value or "\n" in value:
        return [f"the {name} header value holds a line break"]
    if value.startswith(ENV_PREFIX):
        return env_name_problems(value[len(ENV_PREFIX) :], where=f"the {name} header")
    if _SECRET_HEADER.search(name) and value.strip():
        return [
            f"the {name} header looks like a credential: give it as env:NAME so the secret "
            "stays in the worker's environment, never in Goldset's database"
        ]
    return _unknown_placeholders(value, f"{name} header")


def env_name_problems(name: str, *, where: str) -> list[str]:
    if not _ENV_NAME.fullmatch(name):
        return [f"{where}: {name!r} is not an environment variable name"]
    if name.upper() in FORBIDDEN_ENV:
        return [f"{where}: {name} holds Goldset's own secret and is never sent anywhere"]
    return []


def resolve_env(value: Any, *, environ: Mapping[str, str], where: str) -> Any:
    """A configured value with ``env:NAME`` replaced by that variable of the environment."""
    if not isinstance(value, str) or not value.startswith(ENV_PREFIX):
        return value
    name = value[len(ENV_PREFIX) :]
    problems = env_name_problems(name, where=where)
    if problems:
        raise ConfigError(problems[0] + ".")
    if name not in environ:
        raise ConfigError(
            f"{where} reads the environment variable {name}, which is not set where the search "
            "runs (the Celery worker, or the shell of a management command)."
        )
    return environ[name]


@dataclass(frozen=True)
class Identity:
    """A test user as the team's system is told about them: extra headers and ``{{user}}``.

    Without an identity a call is made as the retriever is configured, with ``{{user}}`` null
    and ``{{groups}}`` every group (``all_groups``): the unrestricted view pools are built from.
    """

    name: str
    groups: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    value: Any = None  # for {{user}}; None means the test user's name


def identity_problems(*, headers: Mapping[str, str], value: Any) -> list[str]:
    found = [p for name, v in headers.items() for p in header_problems(str(name), str(v))]
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        found += env_name_problems(value[len(ENV_PREFIX) :], where="the user value")
    return found


# --- host policy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    name: str | None = None  # exact host name, or a "*.domain" suffix when wildcard
    wildcard: bool = False
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None


Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class HostPolicy:
    """Which hosts and addresses the HTTP retriever may call (``GOLDSET_HTTP_ALLOWED_HOSTS``).

    Entries: a host name (``search.internal``), every subdomain (``*.example.com``), an address
    (``10.1.2.3``, ``[::1]``) or a network (``10.0.0.0/8``), each optionally with ``:port``.
    A URL's host must match an entry. Every address it resolves to must be public, or inside a
    listed address or network: loopback, link-local (cloud metadata) and private addresses are
    refused unless listed, whatever name led there.
    """

    def __init__(self, entries: Iterable[str], *, resolver: Resolver = system_resolver):
        self.entries = [_parse_entry(text) for text in entries if text.strip()]
        self.resolver = resolver

    def check_url(self, url: httpx2.URL) -> None:
        if url.scheme not in ("http", "https"):
            raise HostRefused(f"only http and https are called, not {url.scheme}:")
        host = _host_of(url)
        port = url.port or (443 if url.scheme == "https" else 80)
        address = _address(host)
        for entry in self.entries:
            if entry.port is not None and entry.port != port:
                continue
            if address is not None and entry.network is not None and address in entry.network:
                return
            if address is None and entry.name is not None:
                if entry.wildcard and host.endswith("." + entry.name):
                    return
                if not entry.wildcard and host == entry.name:
                    return
        listed = ", ".join(_show(entry) for entry in self.entries) or "nothing"
        raise HostRefused(
            f"{host}:{port} is not in GOLDSET_HTTP_ALLOWED_HOSTS (it lists {listed}); an admin "
            "adds the search host there"
        )

    def vetted_addresses(self, host: str, port: int) -> list[str]:
        """The addresses ``host`` resolves to, each allowed; HostRefused if any is not."""
        literal = _address(host)
        if literal is not None:
            addresses = [str(literal)]
        else:
            try:
                addresses = self.resolver(host, port)
            except (OSError, UnicodeError) as error:
                raise HostRefused(f"{host} could not be resolved ({error})") from None
        if not addresses:
            raise HostRefused(f"{host} resolves to no address")
        for text in addresses:
            address = ipaddress.ip_address(text.split("%")[0])
            if getattr(address, "ipv4_mapped", None):
                address = address.ipv4_mapped
            if _public(address):
                continue
            if any(e.network is not None and address in e.network for e in self.entries):
                continue
            raise HostRefused(
                f"{host} resolves to {address}, a {_kind(address)} address; it is called only "
                "when that address (or its network) is listed in GOLDSET_HTTP_ALLOWED_HOSTS"
            )
        return addresses


def _parse_entry(text: str) -> _Entry:
    text = text.strip().lower().rstrip(".")
    port = None
    host = text
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest.startswith(":"):
            port = _port(rest[1:], text)
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
        port = _port(port_text, text)
    try:
        return _Entry(network=ipaddress.ip_network(host, strict=False), port=port)
    except ValueError:
        pass
    wildcard = host.startswith("*.")
    name = host[2:] if wildcard else host
    if not name or not re.fullmatch(
        r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*", name
    ):
        raise ConfigError(
            f"GOLDSET_HTTP_ALLOWED_HOSTS: {text!r} is not a host name, *.domain, address or network"
        )
    return _Entry(name=name, wildcard=wildcard, port=port)


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ConfigError(f"GOLDSET_HTTP_ALLOWED_HOSTS: {entry!r} has a bad port")
    return int(text)


def _show(entry: _Entry) -> str:
    text = str(entry.network) if entry.network is not None else entry.name or ""
    if entry.wildcard:
        text = "*." + text
    return f"{text}:{entry.port}" if entry.port else text


def _host_of(url: httpx2.URL) -> str:
    return url.raw_host.decode("ascii").lower().rstrip(".").strip("[]")


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return None


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return address.is_global and not address.is_multicast


def _kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_unspecified:
        return "non-public"
    if address.is_private:
        return "private"
    return "non-public"


class _GuardedBackend(SyncBackend):
    """Connects only to addresses the policy vetted, resolved here once: the address checked
    is the address connected to."""

    def __init__(self, policy: HostPolicy):
        self.policy = policy

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        error: Exception | None = None
        for address in self.policy.vetted_addresses(host, port):
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore2.ConnectError as failure:
                error = failure
        raise error or httpcore2.ConnectError(f"no address of {host} answered")


class _GuardedTransport(httpx2.HTTPTransport):
    def __init__(self, policy: HostPolicy, *, connections: int):
        super().__init__(trust_env=False)
        # The same pool httpx builds, with our network backend; proxies from the environment
        # are never used (they would make the connect-time address check meaningless).
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False),
            max_connections=connections,
            max_keepalive_connections=connections,
            network_backend=_GuardedBackend(policy),
        )


# --- searching ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One result of an answer, in the answer's order; the mapping's fields, nothing placed."""

    doc_id: str
    score: float | None = None
    start: int | None = None
    end: int | None = None
    text: str | None = None


@dataclass
class Answer:
    """One question's outcome: its hits, or the reason there are none."""

    hits: list[Hit] | None = None
    error: str | None = None
    attempts: int = 0
    status: int | None = None

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
class SearchClient:
    """Sends queries to one endpoint under a host policy: retries with backoff, a limit on
    concurrent requests, a size cap on answers. Use as a context manager."""

    endpoint: Endpoint
    policy: HostPolicy
    all_groups: tuple[str, ...] = ()
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    sleep: Callable[[float], None] = time.sleep
    _client: httpx2.Client | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __enter__(self) -> SearchClient:
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
                    transport=_GuardedTransport(self.policy, connections=self.endpoint.concurrency),
                    timeout=httpx2.Timeout(self.endpoint.timeout),
                    follow_redirects=False,
                    trust_env=False,
                )
            return self._client

    def headers_for(self, identity: Identity | None) -> dict[str, str]:
        """Every header of a request as ``identity``, env: values read now (ConfigError)."""
        headers = {"Accept": "application/json"}
        configured = list(self.endpoint.headers) + list(identity.headers if identity else ())
        for name, value in configured:
            where = f"the {name} header" + (f" of test user {identity.name}" if identity else "")
            resolved = resolve_env(value, environ=self.environ, where=where)
            if resolved is value:
                resolved = _render_text(value, self._values(identity, question="", k=0))
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
        answers: list[Answer | None] = [None] * len(queries)
        workers = max(1, min(self.endpoint.concurrency, len(queries)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="httpsearch") as pool:
            futures = {pool.submit(self.search, query): i for i, query in enumerate(queries)}
            for future in as_completed(futures):
                answers[futures[future]] = future.result()
                if progress:
                    progress(1)
        return [answer for answer in answers if answer is not None]

    def search(self, query: Query) -> Answer:
        """One query, retried on timeouts, lost connections and 429/502/503/504."""
        endpoint = self.endpoint
        attempts = 0
        last = ""
        while True:
            attempts += 1
            try:
                status, data = self._send(query)
            except HostRefused as error:
                return Answer(error=f"refused: {error}", attempts=attempts)
            except _Retry as retry:
                last = str(retry)
                if attempts > endpoint.retries:
                    break
                self.sleep(self._delay(attempts, retry.after))
                continue
            except HttpSearchError as error:
                return Answer(error=str(error), attempts=attempts)
            try:
                hits = map_answer(data, endpoint.mapping, k=query.k)
            except HttpSearchError as error:
                return Answer(error=str(error), attempts=attempts, status=status)
            return Answer(hits=hits, attempts=attempts, status=status)
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        return Answer(error=f"{last} (gave up after {tries})", attempts=attempts)

    def _delay(self, attempt: int, after: float | None) -> float:
        if after is not None:
            return min(max(after, 0.0), MAX_BACKOFF)
        # Exponential backoff with jitter, so parallel workers do not retry in step.
        base = self.endpoint.backoff * 2 ** (attempt - 1)
        return min(base * random.uniform(0.5, 1.0), MAX_BACKOFF)

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
        url = _PLACEHOLDER.sub(
            lambda m: quote(_text(values.get(m.group(1), "")), safe=""), endpoint.url
        )
        headers = self.headers_for(query.identity)
        content = None
        if endpoint.body.strip():
            body = _render(json.loads(endpoint.body), values)
            content = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            return self.client.build_request(endpoint.method, url, headers=headers, content=content)
        except (httpx2.InvalidURL, httpx2.UnsupportedProtocol, ValueError) as error:
            raise HttpSearchError(f"the URL {url[:100]!r} cannot be called ({error})") from None

    def _send(self, query: Query) -> tuple[int, Any]:
        request = self.build_request(query)
        origin = (request.url.scheme, _host_of(request.url), request.url.port)
        started = time.monotonic()
        for _ in range(MAX_REDIRECTS + 1):
            self.policy.check_url(request.url)
            try:
                response = self.client.send(request, stream=True)
            except httpx2.TimeoutException:
                raise _Retry(
                    f"no answer from {_host_of(request.url)} within {self.endpoint.timeout:g} s"
                )
            except httpx2.TransportError as error:
                raise _Retry(
                    f"could not reach {_host_of(request.url)} ({error or type(error).__name__})"
                )
            try:
                following = response.next_request
                if response.is_redirect and following is not None:
                    target = (following.url.scheme, _host_of(following.url), following.url.port)
                    if target != origin:
                        raise HostRefused(
                            f"{_host_of(request.url)} redirected to {following.url.scheme}://"
                            f"{_host_of(following.url)}; redirects are followed only on the "
                            "same host and scheme"
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
                if time.monotonic() - started > 2 * self.endpoint.timeout:
                    raise _Retry(f"the answer took longer than {2 * self.endpoint.timeout:g} s")
                chunks.append(chunk)
        except httpx2.TimeoutException:
            raise _Retry(f"the answer stalled for {self.endpoint.timeout:g} s")
        except httpx2.TransportError as error:
            raise _Retry(f"the connection broke while reading the answer ({error})")
        return b"".join(chunks)

    def _parse(self, response: httpx2.Response, body: bytes) -> tuple[int, Any]:
        status = response.status_code
        if status in RETRY_STATUSES:
            raise _Retry(
                f"HTTP {status} from {_host_of(response.request.url)}", after=_retry_after(response)
            )
        if status >= 300:
            raise HttpSearchError(
                f"HTTP {status} from {_host_of(response.request.url)}: {_snippet(body)}"
            )
        try:
            return status, json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            kind = response.headers.get("content-type", "no content type")
            raise HttpSearchError(f"the answer is not JSON ({kind}): {_snippet(body)}") from None


def _retry_after(response: httpx2.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return float(value)
    except ValueError:
        return None


def _snippet(body: bytes, limit: int = 200) -> str:
    text = body.decode("utf-8", errors="replace").strip().replace("\n", " ")
    return repr(text[:limit] + ("…" if len(text) > limit else "")) if text else "an empty body"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(_text(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _render_text(text: str, values: Mapping[str, Any]) -> str:
    return _PLACEHOLDER.sub(lambda m: _text(values.get(m.group(1))), text)


def _render(template: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole is not None and whole.group(1) in values:
            return values[whole.group(1)]
        return _render_text(template, values)
    if isinstance(template, dict):
        return {key: _render(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [_render(value, values) for value in template]
    return template


def map_answer(data: Any, mapping: ResponseMapping, *, k: int) -> list[Hit]:
    """The first ``k`` results of a parsed answer, each read through the mapping."""
    results = dig(data, parse_path(mapping.results))
    if not isinstance(results, list):
        found = "nothing" if results is _MISSING else describe(results)
        raise HttpSearchError(
            f"the results path {mapping.results!r} should lead to a list of results, but the "
            f"answer has {found} there (the answer is {describe(data)})"
        )
    paths = {
        name: parse_path(getattr(mapping, name))
        for name in ("doc_id", "score", "start", "end", "text")
        if getattr(mapping, name)
    }
    hits = []
    for rank, item in enumerate(results[:k], start=1):
        hits.append(_hit(item, paths, mapping=mapping, rank=rank))
    return hits


def _hit(item: Any, paths: dict[str, tuple], *, mapping: ResponseMapping, rank: int) -> Hit:
    where = f"result {rank}"
    doc_id = dig(item, paths["doc_id"])
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or doc_id == "":
        found = "nothing" if doc_id is _MISSING else describe(doc_id)
        raise HttpSearchError(
            f"{where}: the doc id path {mapping.doc_id!r} should lead to a string, but finds "
            f"{found} (the result is {describe(item)})"
        )
    score = None
    if "score" in paths:
        value = dig(item, paths["score"])
        if value is not _MISSING and value is not None:
            try:
                score = float(value) if not isinstance(value, bool) else None
            except (TypeError, ValueError):
                raise HttpSearchError(
                    f"{where} ({doc_id}): the score at {mapping.score!r} is {describe(value)}, "
                    "not a number"
                ) from None
    start = end = None
    if "start" in paths:
        start, end = dig(item, paths["start"]), dig(item, paths["end"])
        if start is _MISSING and end is _MISSING or start is None and end is None:
            start = end = None
        elif not (_whole(start) and _whole(end) and 0 <= start < end):
            raise HttpSearchError(
                f"{where} ({doc_id}): offsets at {mapping.start!r}/{mapping.end!r} should be "
                f"whole numbers with 0 <= start < end, not {describe(start)} and {describe(end)}"
            )
    text = None
    if "text" in paths:
        value = dig(item, paths["text"])
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v.strip()), None)
        if isinstance(value, str) and value.strip():
            text = value
    return Hit(doc_id=str(doc_id), score=score, start=start, end=end, text=text)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def with_preset(name: str, **overrides: Any) -> dict[str, Any]:
    """A preset's stored form with some fields replaced (the ones a user gave)."""
    preset = PRESETS[name]
    mapping = {k: getattr(preset.mapping, k) for k in ResponseMapping.__annotations__}
    mapping.update({k: v for k, v in (overrides.pop("mapping", None) or {}).items() if v})
    data = {"url": preset.url, "method": preset.method, "body": preset.body, "mapping": mapping}
    data.update({k: v for k, v in overrides.items() if v not in (None, "")})
    return data
