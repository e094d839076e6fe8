"""The relevance guideline: Markdown a lead writes, kept as numbered versions.

Judgements and verdicts record the version they were made under, so an old version is never
changed; an edit is always a new version.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from django.db import IntegrityError, transaction
from markdown_it import MarkdownIt

from corpus.models import Project
from goldset.errors import ServiceError
from labelling.models import Guideline

MAX_GUIDELINE_CHARS = 100_000

# CommonMark with raw HTML switched off: a `<script>` in the Markdown is shown as text. nh3
# then cleans the output as a second line of defence (only safe tags, no event handlers, no
# javascript: links), so nothing a lead types can run in a labeller's browser.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_MARKDOWN.enable("table")
_ALLOWED_TAGS = {
    "a",
    "blockquote",
    "br",
    "code",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "li",
    "ol",
    "p",
    "pre",
    "strong",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}


class GuidelineError(ServiceError):
    """A guideline edit that cannot be saved."""


@lru_cache(maxsize=64)
def render_guideline(text: str) -> str:
    """Safe HTML for a guideline's Markdown (the only HTML the templates mark safe)."""
    html = _MARKDOWN.render(text)
    return nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes={"a": {"href", "title"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def current_guideline(project: Project) -> Guideline | None:
    return Guideline.objects.filter(project=project).order_by("-version").first()


def save_guideline(*, project: Project, text: str, user) -> Guideline:
    """A new version with ``text``; saving unchanged text keeps the current version."""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        raise GuidelineError("The guideline cannot be empty.")
    if len(text) > MAX_GUIDELINE_CHARS:
        raise GuidelineError(
            f"The guideline is {len(text):,} characters; the limit is {MAX_GUIDELINE_CHARS:,}."
        )
    for _ in range(3):
        current = current_guideline(project)
        if current is not None and current.text == text:
            return current
        try:
            # Two leads saving at once both compute the same next number; the unique
            # constraint lets one win and the other retries with the number after it.
            with transaction.atomic():
                return Guideline.objects.create(
                    project=project,
                    version=(current.version + 1) if current else 1,
                    text=text,
                    created_by=user,
                )
        except IntegrityError:
            continue
    raise GuidelineError("The guideline changed while you saved it; try again.")
