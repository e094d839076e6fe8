"""Figures in plain language for the lead's pages: shares as percentages, a count with its
noun ("1 question", "2 questions")."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def percent(value, digits: int = 0) -> str:
    """0.3804 → "38%" (``digits`` decimals); None → "—"."""
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:.{int(digits)}f}%"


@register.filter
def signed(value, digits: int = 3) -> str:
    """A difference with its sign: 0.0213 → "+0.021", -0.5 → "−0.500"; None → "—"."""
    if value is None:
        return "—"
    text = f"{abs(float(value)):.{int(digits)}f}"
    return ("+" if value > 0 else "−" if value < 0 else "±") + text


@register.filter
def counted(number, nouns: str) -> str:
    """``{{ n|counted:"question,questions" }}`` → "1 question" or "3 questions"."""
    singular, _, plural = nouns.partition(",")
    return f"{number} {singular if number == 1 else plural or singular + 's'}"
