"""What a URL Goldset calls may look like: one strict reading, shared by every URL field (the
HTTP retriever's URL template, a manifest source) and by the host policy when a call is made.

Django-free. URL readers disagree about odd URLs, and each disagreement is a way around a host
check: Python's ``urlsplit`` silently drops tabs and line breaks, httpx reads fullwidth digits
in a port as ASCII ones, and a resolver reads ``0177.0.0.1`` (octal), ``0x7f.1`` or
``2130706433`` as 127.0.0.1. So anything two readers could read differently is refused, with a
message that says what to write instead: ASCII only, no whitespace or control characters, a
host that is a name of letters, digits and hyphens, a four-number decimal IPv4 address or a
bracketed IPv6 one, and a port of ASCII digits from 1 to 65535.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass

SCHEMES = ("http", "https")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_NUMERIC = re.compile(r"[0-9]+|0x[0-9a-f]*")
_OCTET = re.compile(r"0|[1-9][0-9]{0,2}")
_PORT = re.compile(r"[0-9]{1,5}")
_NAMES = {"\t": "tab", "\n": "line break", "\r": "carriage return", " ": "space"}


@dataclass(frozen=True)
class Authority:
    """The parts of a URL that decide where a call goes."""

    scheme: str
    host: str  # lower case; an IPv6 address without its brackets
    port: int | None


def url_problems(url: str) -> list[str]:
    """Why ``url`` cannot be called (an empty list when it can). Placeholders such as
    ``{{question}}`` are the caller's to replace before asking."""
    return read_url(url)[1]


def read_url(url: str) -> tuple[Authority | None, list[str]]:
    """The scheme, host and port of ``url``, or None with every problem found."""
    if not url.strip():
        return None, ["the URL is required"]
    odd = _odd_character(url)
    if odd:
        return None, [f"the URL {_short(url)} holds {odd}; remove it"]
    match = _SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    if scheme not in SCHEMES:
        return None, [f"the URL must start with http:// or https://, not {_short(url)}"]
    rest = url[match.end() :]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    problems = []
    if "#" in rest:
        problems.append("the URL has a #fragment, which is never sent")
    if "@" in authority:
        problems.append(
            "the URL carries a user name or password: pass credentials in a header with env:NAME"
        )
        authority = authority.rpartition("@")[2]
    host, port, found = _split_authority(authority)
    problems += found
    if host is not None:
        problems += host_problems(host)
    if problems:
        return None, problems
    return Authority(scheme=scheme, host=_bare(host), port=port), []


def host_problems(host: str) -> list[str]:
    """Why ``host`` (a name or an address, IPv6 in brackets or not) is not one the host policy
    reads one way only."""
    if not host:
        return ["the URL has no host"]
    odd = _odd_character(host)
    if odd:
        return [f"the host {host!r} holds {odd}"]
    if not host.isascii():
        return [
            f"the host {host!r} has characters outside ASCII (fullwidth digits or look-alike "
            "letters): write it in plain ASCII (an international name in its xn-- form)"
        ]
    bare = _bare(host)
    if ":" in bare:
        try:
            ipaddress.IPv6Address(bare)
        except ValueError:
            return [f"{host!r} is not an IPv6 address"]
        return []
    name = bare.lower()
    labels = name.split(".")
    if re.search(r"[^a-z0-9.-]", name):
        return [
            f"the host {host!r} is not a host name: letters, digits and hyphens between dots "
            "(no percent-encoding, underscores or other signs)"
        ]
    if _NUMERIC.fullmatch(labels[-1]):
        if len(labels) == 4 and all(_OCTET.fullmatch(x) and int(x) < 256 for x in labels):
            return []
        return [
            f"the host {host!r} reads as an address in another notation (octal, hex, a single "
            "number or fewer than four parts): write an IPv4 address as four decimal numbers "
            "without leading zeros, like 127.0.0.1"
        ]
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return [
            f"the host {host!r} is not a host name: letters, digits and hyphens between dots, "
            "no label starting or ending with a hyphen"
        ]
    return []


def _split_authority(authority: str) -> tuple[str | None, int | None, list[str]]:
    port_text = None
    if authority.startswith("["):
        host, bracket, after = authority.partition("]")
        if not bracket:
            return None, None, [f"the IPv6 address in {authority!r} has no closing ]"]
        host += "]"
        if after:
            if not after.startswith(":"):
                return None, None, [f"{authority!r}: only :port may follow an IPv6 address"]
            port_text = after[1:]
    elif ":" in authority:
        host, _, port_text = authority.partition(":")
    else:
        host = authority
    if port_text is None:
        return host, None, []
    if not _PORT.fullmatch(port_text) or not 0 < int(port_text) < 65536:
        return host, None, [f"the port {port_text!r} is not a number from 1 to 65535"]
    return host, int(port_text), []


def _bare(host: str) -> str:
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1]
    return host[:-1] if host.endswith(".") and not host.endswith("..") else host


def _odd_character(text: str) -> str:
    for position, char in enumerate(text, start=1):
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            name = _NAMES.get(char) or unicodedata.name(char, "").lower() or f"U+{ord(char):04X}"
            return f"a {name} character at position {position}"
    return ""


def _short(url: str) -> str:
    return repr(url[:60] + ("…" if len(url) > 60 else ""))
