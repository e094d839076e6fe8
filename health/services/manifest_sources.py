"""Manifest sources: where a retriever's index manifest is fetched from, as an admin set it.

A source is its own endpoint with its own headers. The search endpoint's credentials never go
along (a lead pointing a fetch at ``/_security/_authenticate`` on the search host once received
the search token's owner), and a lead never chooses the URL: leads start a fetch, admins
configure where it goes. The fetch is a GET of that URL with the source's headers (``env:NAME``
read from the worker's environment when it is made) under the host policy
(`GOLDSET_HTTP_ALLOWED_HOSTS`: the host, every resolved address and its port), within the
timeout, at most `MAX_RESPONSE_BYTES`. No redirect is followed: one could change the scheme,
host or port the credentials go to. A source on the host of an HTTPS search endpoint must be
HTTPS too. What a server answered on failure is kept as a bounded excerpt for admins
(`corpus.remote`), never in the message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx2

from corpus.httpendpoint import ConfigError, header_problems, resolve_env, url_secret_problems
from corpus.httpguard import GuardedTransport, HostRefused, host_of
from corpus.httpsearch import MAX_RESPONSE_BYTES
from corpus.httpurl import read_url
from corpus.models import Retriever, RetrieverKind
from corpus.remote import excerpt
from corpus.services import http_retrieval
from goldset.errors import ServiceError
from health.models import ManifestSource

TIMEOUT = (0.1, 120.0)


class ManifestFetchFailed(ServiceError):
    """A fetch that brought no manifest; ``remote`` is what the server answered, bounded."""

    def __init__(self, message: str, *, remote: str = ""):
        super().__init__(message)
        self.remote = remote


def source_problems(
    *, retriever: Retriever, url: str, headers: Mapping[str, str], timeout: float
) -> dict[str, list[str]]:
    """Every reason a source cannot be stored, by field (``url``, ``headers``, ``timeout``)."""
    found: dict[str, list[str]] = {"url": [], "headers": [], "timeout": []}
    if "{{" in url:
        found["url"].append("a manifest source's URL takes no placeholders")
    authority, problems = read_url(url)
    found["url"] += problems + url_secret_problems(url)
    if authority is not None:
        try:
            http_retrieval.host_policy().check_url(httpx2.URL(url))
        except HostRefused as error:
            found["url"].append(str(error))
        except httpx2.InvalidURL as error:
            found["url"].append(f"the URL cannot be read ({error})")
        if authority.scheme == "http" and _https_search_host(retriever) == authority.host:
            found["url"].append(
                f"{retriever.name} searches {authority.host} over https: its manifest is "
                "fetched over https too (a scheme is never downgraded)"
            )
    for name, value in headers.items():
        found["headers"] += header_problems(str(name), str(value))
    if not TIMEOUT[0] <= timeout <= TIMEOUT[1]:
        found["timeout"].append(f"between {TIMEOUT[0]:g} and {TIMEOUT[1]:g} seconds")
    return {field: problems for field, problems in found.items() if problems}


def _https_search_host(retriever: Retriever) -> str | None:
    if retriever.kind != RetrieverKind.HTTP:
        return None
    authority, _ = read_url(str((retriever.endpoint or {}).get("url", "")).split("{{")[0])
    return authority.host if authority is not None and authority.scheme == "https" else None


def set_manifest_source(
    *, retriever: Retriever, url: str, headers: Mapping[str, str], timeout: float = 30.0, user
) -> ManifestSource:
    """Store where ``retriever``'s manifest is fetched from (an admin's decision), or a
    ServiceError naming each field's problems; nothing is called here."""
    url = url.strip()
    problems = source_problems(retriever=retriever, url=url, headers=headers, timeout=timeout)
    if problems:
        raise ServiceError(
            "The manifest source cannot be used: "
            + "; ".join(f"{field}: {p}" for field, found in problems.items() for p in found)
            + "."
        )
    source, _ = ManifestSource.objects.update_or_create(
        retriever=retriever,
        defaults={
            "url": url,
            "headers": {str(k): str(v) for k, v in headers.items()},
            "timeout": float(timeout),
            "changed_by": user,
        },
    )
    return source


def remove_manifest_source(*, retriever: Retriever) -> None:
    ManifestSource.objects.filter(retriever=retriever).delete()


def file_name_of(source: ManifestSource) -> str:
    path = httpx2.URL(source.url).path.rstrip("/")
    return path.rsplit("/", 1)[-1] or "manifest"


def fetch_manifest(*, source: ManifestSource, environ: Mapping[str, str] = os.environ) -> bytes:
    """The body the source answers, or ManifestFetchFailed (ServiceError for a source that can
    no longer be used: its host no longer allowed, an env variable missing)."""
    name = source.retriever.name
    where = f"{name}'s manifest source"
    problems = source_problems(
        retriever=source.retriever, url=source.url, headers=source.headers, timeout=source.timeout
    )
    if problems:
        first = next(iter(problems.values()))[0]
        raise ServiceError(f"{where} cannot be used: {first}; an admin changes it.")
    try:
        headers = {"Accept": "*/*"} | {
            key: str(resolve_env(value, environ=environ, where=f"the {key} header of {where}"))
            for key, value in source.headers.items()
        }
    except ConfigError as error:
        raise ServiceError(str(error)) from None
    policy = http_retrieval.host_policy()
    chunks: list[bytes] = []
    try:
        with (
            httpx2.Client(
                transport=GuardedTransport(policy, connections=1),
                timeout=httpx2.Timeout(source.timeout),
                follow_redirects=False,
                trust_env=False,
            ) as client,
            client.stream("GET", source.url, headers=headers) as response,
        ):
            status = response.status_code
            if response.is_redirect:
                raise ManifestFetchFailed(
                    f"{where} answered a redirect (HTTP {status}); redirects are not followed, "
                    "so the headers never go to another scheme, host or port: an admin sets "
                    "the final URL. Nothing was stored.",
                    remote=excerpt(f"Location: {response.headers.get('location', '')}"),
                )
            if status != 200:
                raise ManifestFetchFailed(
                    f"{where} answered HTTP {status}; nothing was stored.",
                    remote=excerpt(_first_bytes(response)),
                )
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise ManifestFetchFailed(
                        f"{where} answered more than {MAX_RESPONSE_BYTES // 2**20} MB; nothing "
                        "was stored: upload the manifest instead."
                    )
                chunks.append(chunk)
    except HostRefused as error:
        raise ServiceError(f"{where} cannot be called: {error}.") from None
    except httpx2.TimeoutException:
        raise ManifestFetchFailed(
            f"{where} ({host_of(httpx2.URL(source.url))}) gave no answer within "
            f"{source.timeout:g} s; nothing was stored."
        ) from None
    except httpx2.HTTPError as error:
        raise ManifestFetchFailed(
            f"{where} ({host_of(httpx2.URL(source.url))}) could not be reached "
            f"({type(error).__name__}); nothing was stored."
        ) from None
    return b"".join(chunks)


def _first_bytes(response: httpx2.Response, limit: int = 4096) -> bytes:
    data = b""
    try:
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) >= limit:
                break
    except httpx2.HTTPError:
        pass
    return data[:limit]
