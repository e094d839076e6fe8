"""The page's one banner region (templates/base.html): each message said once, however many
times a request queued it."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def each_once(messages) -> list:
    """The queued messages in their order, a repeated text (at the same level) left out."""
    seen: set[tuple[int, str]] = set()
    kept = []
    for message in messages:
        key = (message.level, str(message))
        if key not in seen:
            seen.add(key)
            kept.append(message)
    return kept
