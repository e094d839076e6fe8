"""Where the HTTP retriever may connect: the host policy behind ``GOLDSET_HTTP_ALLOWED_HOSTS``.

Django-free. The URL's host must be listed; every address it resolves to is checked when the
connection is made, and the connection goes to the address that was checked, so DNS cannot swap
in a private address after the check. Loopback, link-local (cloud metadata) and private
addresses need their address or network listed; proxies from the environment are never used.
Redirects to another host are refused by the client (`corpus.httpsearch`).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import httpcore2
import httpx2

from corpus.httpendpoint import ConfigError, HttpSearchError
from corpus.httpurl import host_problems


class HostRefused(HttpSearchError):
    """A call the host policy does not allow (never retried)."""


# --- the policy ---------------------------------------------------------------------------------


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
        host = host_of(url)
        problems = host_problems(host)
        if problems:
            raise HostRefused(problems[0])
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
        """The addresses ``host`` resolves to, each allowed; HostRefused if any is not.

        A listed address or network with a port allows that port only, whatever name led to
        the address: ``vm,127.0.0.1:8125`` lets ``vm`` (resolving to 127.0.0.1) reach 8125 and
        nothing else on that machine."""
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
            covering = [e for e in self.entries if e.network is not None and address in e.network]
            if any(e.port in (None, port) for e in covering):
                continue
            if covering:
                ports = ", ".join(sorted({str(e.port) for e in covering}))
                raise HostRefused(
                    f"{host} resolves to {address}, a {_kind(address)} address listed in "
                    f"GOLDSET_HTTP_ALLOWED_HOSTS for port {ports} only, not {port}"
                )
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
    if not name or host_problems(name):
        raise ConfigError(
            f"GOLDSET_HTTP_ALLOWED_HOSTS: {text!r} is not a host name, *.domain, address or network"
        )
    return _Entry(name=name, wildcard=wildcard, port=port)


def _port(text: str, entry: str) -> int:
    if not re.fullmatch(r"[0-9]{1,5}", text) or not 0 < int(text) < 65536:
        raise ConfigError(f"GOLDSET_HTTP_ALLOWED_HOSTS: {entry!r} has a bad port")
    return int(text)


def _show(entry: _Entry) -> str:
    text = str(entry.network) if entry.network is not None else entry.name or ""
    if entry.wildcard:
        text = "*." + text
    return f"{text}:{entry.port}" if entry.port else text


def host_of(url: httpx2.URL) -> str:
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


class _GuardedBackend(httpcore2.SyncBackend):
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


class GuardedTransport(httpx2.HTTPTransport):
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
