"""The HTTP retriever's endpoint: what is sent (URL and body templates, headers) and how the
answer is read (a response mapping of dotted paths), checked before anything is called.

Django-free. Templates take ``{{question}}`` (the question text, verbatim), ``{{k}}`` (how many
results), ``{{user}}`` (what the team's system needs to act as a test user) and ``{{groups}}``
(that user's Goldset access groups). A body string that is exactly one placeholder becomes the
typed value (``"{{k}}"`` is the number 10, ``"{{groups}}"`` a list); inside longer text a
placeholder is replaced by its text; in a URL every value is percent-encoded. Presets cover
Elasticsearch/OpenSearch ``_search`` and a generic JSON API.

Secrets never live in configuration: a header value ``env:OUR_SEARCH_TOKEN`` is read from the
environment of the process making the request, a header whose name looks like a credential must
be given that way, and Goldset's own secrets (``SECRET_KEY``, ``DATABASE_URL``…) cannot be named.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from corpus.httpurl import url_problems
from goldeval.formats.runfiles import MAX_SCORE, score_problem
from goldeval.formats.textfiles import text_problem

PLACEHOLDERS = ("question", "k", "user", "groups")
PLACEHOLDER_PATTERN = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# A header with one of these in its name carries a credential: its value must come from env:.
_SECRET_HEADER = re.compile(r"auth|cookie|token|secret|key|passw|session|credential", re.I)
# A query parameter with one of these in its name carries one too (a signed URL's signature).
_SECRET_PARAM = re.compile(_SECRET_HEADER.pattern + r"|signature|^sig$", re.I)
# Goldset's own secrets: an endpoint must never be able to send them anywhere.
FORBIDDEN_ENV = frozenset(
    {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "PGPASSWORD"}
)
ENV_PREFIX = "env:"

METHODS = ("GET", "POST")
# What one result of an answer may carry: a doc id as long as Goldset's (Document.doc_id), and
# a passage text to locate that is a passage, not a document (locating it costs its length).
MAX_DOC_ID = 255
MAX_HIT_TEXT = 100_000
LIMITS = {
    "timeout": (0.1, 120.0),
    "retries": (0, 10),
    "backoff": (0.0, 30.0),
    "concurrency": (1, 32),
}


class HttpSearchError(Exception):
    """Base of this module's errors; the message is meant for the person who configured it and
    never quotes the server. ``remote`` is what the server answered, bounded, kept apart for
    admins (`corpus.remote`)."""

    def __init__(self, message: str, *, remote: str = ""):
        super().__init__(message)
        self.remote = remote


class ConfigError(HttpSearchError):
    """An endpoint, identity or host list that cannot be used; nothing was called."""


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


@dataclass(frozen=True)
class Hit:
    """One result of an answer, in the answer's order; the mapping's fields, nothing placed."""

    doc_id: str
    score: float | None = None
    start: int | None = None
    end: int | None = None
    text: str | None = None


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
        ),
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
        found += url_template_problems(self.url)
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
    return {match.group(1) for match in PLACEHOLDER_PATTERN.finditer(text)}


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


def url_template_problems(url: str) -> list[str]:
    if not url.strip():
        return ["the URL is required"]
    found = _unknown_placeholders(url, "URL") + url_secret_problems(url)
    return found + url_problems(PLACEHOLDER_PATTERN.sub("x", url))


def url_secret_problems(url: str) -> list[str]:
    """A credential in a URL's query would be stored and shown with the URL (to leads, on job
    and health pages): a parameter whose name looks like one must come from a placeholder, and a
    secret goes in a header as env:NAME."""
    query = url.partition("?")[2].partition("#")[0]
    found = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if (
            value
            and _SECRET_PARAM.search(unquote(name))
            and not PLACEHOLDER_PATTERN.fullmatch(value)
        ):
            found.append(
                f"the URL's {unquote(name)[:40]!r} parameter looks like a credential: send it in "
                "a header as env:NAME, so the secret stays in the worker's environment"
            )
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


def text_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(text_value(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def render_text(text: str, values: Mapping[str, Any]) -> str:
    return PLACEHOLDER_PATTERN.sub(lambda m: text_value(values.get(m.group(1))), text)


def render_template(template: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(template, str):
        whole = PLACEHOLDER_PATTERN.fullmatch(template)
        if whole is not None and whole.group(1) in values:
            return values[whole.group(1)]
        return render_text(template, values)
    if isinstance(template, dict):
        return {key: render_template(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [render_template(value, values) for value in template]
    return template


def map_answer(data: Any, mapping: ResponseMapping, *, k: int) -> list[Hit]:
    """The first ``k`` results of a parsed answer, each read through the mapping."""
    results = dig(data, parse_path(mapping.results))
    if not isinstance(results, list):
        found = "nothing" if results is _MISSING else describe(results)
        raise HttpSearchError(
            f"the results path {mapping.results!r} should lead to a list of results, but the "
            "answer has none there",
            remote=f"at {mapping.results}: {found}; the answer is {describe(data)}",
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
            f"{where}: the doc id path {mapping.doc_id!r} should lead to a string, but does not",
            remote=f"at {mapping.doc_id}: {found}; the result is {describe(item)}",
        )
    doc_id = str(doc_id)
    problem = text_problem(doc_id, max_length=MAX_DOC_ID, identifier=True)
    if problem:
        raise HttpSearchError(
            f"{where}: the doc id at {mapping.doc_id!r} {problem}",
            remote=f"it starts {describe(doc_id[:40])}",
        )
    score = None
    if "score" in paths:
        value = dig(item, paths["score"])
        if value is not _MISSING and value is not None:
            # Some APIs send a score as text ("0.5"): read as the number it spells, then held
            # to the run format's own rule, so a score it would refuse never reaches a run.
            if isinstance(value, str) and len(value) <= 100:
                with contextlib.suppress(ValueError):
                    value = float(value)
            if score_problem(value):
                raise HttpSearchError(
                    f"{where}: the score at {mapping.score!r} is not a number "
                    f"(a finite one, at most {MAX_SCORE:g} in size)",
                    remote=f"{describe(doc_id)}: the score is {describe(value)}",
                ) from None
            score = float(value)
    start = end = None
    if "start" in paths:
        start, end = dig(item, paths["start"]), dig(item, paths["end"])
        if start is _MISSING and end is _MISSING or start is None and end is None:
            start = end = None
        elif not (_whole(start) and _whole(end) and 0 <= start < end):
            raise HttpSearchError(
                f"{where}: offsets at {mapping.start!r}/{mapping.end!r} should be whole numbers "
                "with 0 <= start < end",
                remote=f"{describe(doc_id)}: {describe(start)} and {describe(end)}",
            )
    text = None
    if "text" in paths:
        value = dig(item, paths["text"])
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v.strip()), None)
        if isinstance(value, str) and value.strip():
            if len(value) > MAX_HIT_TEXT:
                raise HttpSearchError(
                    f"{where} ({doc_id}): the text at {mapping.text!r} is {len(value):,} "
                    f"characters long; a passage is at most {MAX_HIT_TEXT:,}"
                )
            text = value
    return Hit(doc_id=doc_id, score=score, start=start, end=end, text=text)


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
