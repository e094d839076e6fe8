"""The grading page's fragments that every write re-renders, placed in the Django page: the
passage card (`{% passage_card card %}`), the status bar's message (`{% grading_flash %}`) and
the question's progress (`{% question_progress %}`). Each is a Jinja template of
`labelling/jinja2/labelling/`, the one home of its markup, which a write's answer
(`grade_update.html` there) includes as well. Jinja, not Django's engine: these fragments are
rendered on every keystroke of a labeller, and Django's engine spent ~15% of a grade's CPU on
them (Jinja compiles a template to Python once)."""

from __future__ import annotations

from django import template
from django.template import engines
from django.template.backends.utils import csrf_input
from django.template.loader import get_template
from django.utils.safestring import mark_safe

from labelling.services.judgements import GRADES

register = template.Library()
PAGE_FIELDS = "labelling/grade.html#page_fields"  # the page's own, which its verdict form uses too
GRADE_CHOICES = list(GRADES.items())


def card_values(card, *, total: int, page_fields: str = "") -> dict:
    """What `passage_card.html` needs: the card, the question's number of passages, and the
    fields the page's forms carry (its CSRF token and page fields). Without them, the card is
    a write's answer (`oob`): only the page's script submits a swapped-in form."""
    return {
        "card": card, "total": total, "grades": GRADE_CHOICES, "page_fields": page_fields,
        "oob": not page_fields, "doc_oob": False,
    }  # fmt: skip


def _jinja(name: str, values: dict) -> str:
    # Safe: Jinja escaped every value it printed (autoescape is on for this engine,
    # `goldset/templating.py`).
    return mark_safe(engines["jinja2"].get_template(name).template.render(values))  # noqa: S308


@register.simple_tag(takes_context=True)
def passage_card(context, card) -> str:
    """The card as the page shows it, its forms with the page's fields."""
    return _jinja(
        "labelling/passage_card.html",
        card_values(card, total=context["progress"].total, page_fields=_page_fields(context)),
    )


def _page_fields(context) -> str:
    """The CSRF token and the page fields, rendered once per page for all its cards."""
    rendered = context.render_context
    if PAGE_FIELDS not in rendered:
        request = context.request
        rendered[PAGE_FIELDS] = csrf_input(request) + get_template(PAGE_FIELDS).render(
            {"user": request.user, "guideline_version": context.get("guideline_version")}
        )
    return rendered[PAGE_FIELDS]


@register.simple_tag(takes_context=True)
def grading_flash(context) -> str:
    """The page's status-bar message: the messages queued for it."""
    values = {"message": "", "message_kind": "", "notice": "", "oob": False}
    return _jinja("labelling/flash.html", {**values, "messages": context["messages"]})


@register.simple_tag(takes_context=True)
def question_progress(context) -> str:
    return _jinja(
        "labelling/question_progress.html", {"progress": context["progress"], "oob": False}
    )
