"""A judge's endpoint and the calls to it.

Django-free. A judge is called like the HTTP retriever: through `corpus.httpsearch.GuardedClient`
(the host policy of ``GOLDSET_HTTP_ALLOWED_HOSTS``, timeouts, retries with backoff, a limit on
concurrent requests, a cap on the answer's size, redirects on the same host only), its URL read
by `corpus.httpurl`'s strict rule, and its API key an ``env:NAME`` reference read from the
environment of the process making the call, never stored. One item's failure (no answer, an
answer without a usable grade) is that item's error; the others go on.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from corpus.httpendpoint import (
    ENV_PREFIX,
    LIMITS,
    HttpSearchError,
    env_name_problems,
    resolve_env,
    url_secret_problems,
)
from corpus.httpguard import HostPolicy
from corpus.httpsearch import GuardedClient
from corpus.httpurl import url_problems
from corpus.remote import excerpt
from judges.prompt import TEMPLATES, JudgeAnswerError, Verdict, read_answer, request_body

RAW_CHARS = 2_000  # characters of a judge's answer kept with its judgement
MAX_MODEL = 200
TEMPERATURE = (0.0, 2.0)


@dataclass(frozen=True)
class JudgeEndpoint:
    url: str
    template: str = "openai"
    model: str = ""
    api_key: str = ""  # "" or env:NAME
    temperature: float = 0.0
    seed: int | None = 0
    timeout: float = 30.0
    retries: int = 2
    backoff: float = 1.0
    concurrency: int = 4

    def problems(self) -> list[str]:
        found = url_problems(self.url) + url_secret_problems(self.url)
        if self.template not in TEMPLATES:
            found.append(f"the template is openai or generic, not {self.template!r}")
        if self.template == "openai" and not self.model.strip():
            found.append("an OpenAI-compatible endpoint needs the model's name")
        if len(self.model) > MAX_MODEL:
            found.append(f"the model name is longer than {MAX_MODEL} characters")
        if self.api_key:
            if not self.api_key.startswith(ENV_PREFIX):
                found.append(
                    "the API key is given as env:NAME, the environment variable that holds it "
                    "where the judging runs; the key itself is never stored"
                )
            else:
                found += env_name_problems(self.api_key[len(ENV_PREFIX) :], where="the API key")
        low, high = TEMPERATURE
        if not low <= self.temperature <= high:
            found.append(f"temperature must be between {low:g} and {high:g}")
        if self.seed is not None and not -(2**31) <= self.seed < 2**31:
            found.append("the seed must fit in 32 bits")
        for name, (low, high) in LIMITS.items():
            if not low <= getattr(self, name) <= high:
                found.append(f"{name} must be between {low} and {high}")
        return found


@dataclass(frozen=True)
class Item:
    key: Any
    prompt: str  # the rendered prompt (`judges.prompt.render_prompt`)


@dataclass
class Outcome:
    key: Any
    verdict: Verdict | None = None
    error: str = ""
    raw: str = ""  # the answer, bounded (`corpus.remote.excerpt`)
    attempts: int = 0


@dataclass
class JudgeClient:
    endpoint: JudgeEndpoint
    policy: HostPolicy
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    sleep: Callable[[float], None] = time.sleep

    def headers(self) -> dict[str, str]:
        """The request's headers, the API key read from the environment now (ConfigError)."""
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if self.endpoint.api_key:
            key = resolve_env(self.endpoint.api_key, environ=self.environ, where="the API key")
            headers["Authorization"] = "Bearer " + str(key).replace("\r", "").replace("\n", "")
        return headers

    def judge_many(
        self, items: Sequence[Item], *, progress: Callable[[int], None] | None = None
    ) -> list[Outcome]:
        """Every item's outcome, in order; ConfigError first when the key cannot be read."""
        headers = self.headers()
        endpoint = self.endpoint
        with GuardedClient(
            policy=self.policy,
            timeout=endpoint.timeout,
            retries=endpoint.retries,
            backoff=endpoint.backoff,
            concurrency=endpoint.concurrency,
            environ=self.environ,
            sleep=self.sleep,
        ) as caller:

            def one(item: Item) -> Outcome:
                return self._judge(caller, item, headers)

            return caller.each(one, items, progress=progress)

    def _judge(self, caller: GuardedClient, item: Item, headers: dict[str, str]) -> Outcome:
        endpoint = self.endpoint
        body = request_body(
            endpoint.template,
            model=endpoint.model,
            prompt=item.prompt,
            temperature=endpoint.temperature,
            seed=endpoint.seed,
        )
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")

        def build() -> httpx2.Request:
            try:
                return caller.client.build_request(
                    "POST", endpoint.url, headers=headers, content=content
                )
            except (httpx2.InvalidURL, httpx2.UnsupportedProtocol, ValueError) as error:
                raise HttpSearchError(f"the judge's URL cannot be called ({error})") from None

        reply = caller.call(build)
        if reply.error is not None:
            return Outcome(
                key=item.key, error=reply.error, raw=reply.remote, attempts=reply.attempts
            )
        try:
            verdict = read_answer(endpoint.template, reply.data)
        except JudgeAnswerError as error:
            return Outcome(
                key=item.key,
                error=str(error),
                raw=excerpt(json.dumps(reply.data, ensure_ascii=False), RAW_CHARS),
                attempts=reply.attempts,
            )
        return Outcome(
            key=item.key,
            verdict=verdict,
            raw=excerpt(verdict.content, RAW_CHARS),
            attempts=reply.attempts,
        )
