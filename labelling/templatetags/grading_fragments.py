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

register = template.Library()
PAGE_FIELDS = "labelling/grade.html#page_fields"  # the page's own, which its verdict form uses too


def _jinja(name: str, values: dict) -> str:
    # Safe: Jinja escaped every value it printed (autoescape is on for this engine,
    # `goldset/templating.py`).
    return mark_safe(engines["jinja2"].get_template(name).template.render(values))  # noqa: S308


@register.simple_tag(takes_context=True)
def passage_card(context, card) -> str:
    """The card as the page shows it: with the CSRF and page fields on its forms, which a
    write's answer leaves out (only the page's script submits a swapped-in form)."""
    request = context.request
    page_fields = csrf_input(request) + get_template(PAGE_FIELDS).render(
        {"user": request.user, "guideline_version": context.get("guideline_version")}
    )
    values = {"card": card, "oob": False, "doc_oob": False, "page_fields": page_fields}
    values.update(total=context["progress"].total, grades=context["grades"])
    return _jinja("labelling/passage_card.html", values)


@register.simple_tag(takes_context=True)
def grading_flash(context) -> str:
    """The page's status-bar message: the messages queued for it."""
    values = {"message": "", "message_kind": "", "notice": "", "oob": False}
    return _jinja("labelling/flash.html", {**values, "messages": context["messages"]})


@register.simple_tag(takes_context=True)
def question_progress(context) -> str:
    return _jinja(
        "labelling/question_progress.html", {"progress": context["progress"]} | {"oob": False}
    )
