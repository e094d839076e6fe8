"""What another system answered, as Goldset may keep and show it.

Django-free. A team's search API or manifest source answers whatever it answers: an error page,
a login form, the JSON of an authentication endpoint. Goldset's own messages (a job's message,
a problem's text, a flash) never quote that body; a bounded excerpt of it (`excerpt`) is kept
apart, under the ``remote`` key of a problem, and `shown_to` gives it to a project's admins
only, who configured the endpoint and hold its credentials. Pages escape it like any text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

EXCERPT_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\s]+")


def excerpt(body: bytes | str | None, limit: int = EXCERPT_CHARS) -> str:
    """At most ``limit`` characters of ``body`` on one line (control characters and runs of
    whitespace become one space), "…" when cut; "" for an empty body."""
    if body is None:
        return ""
    if isinstance(body, bytes):
        body = body[: limit * 4].decode("utf-8", errors="replace")
    text = _CONTROL.sub(" ", body[: limit * 4]).strip()
    return text[:limit] + ("…" if len(text) > limit else "")


def shown_to(problems: Iterable[dict], *, admin: bool) -> list[dict]:
    """The problems as a viewer may read them: with what the server answered for an admin,
    without it for anyone else."""
    if admin:
        return list(problems)
    return [{k: v for k, v in problem.items() if k != "remote"} for problem in problems]
