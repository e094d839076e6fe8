"""The Jinja2 environment of the few fragments rendered on every keystroke of a labeller
(`labelling/jinja2/`; every other page is a Django template): Django's Jinja2 defaults, with
autoescaping, plus the filters those fragments use."""

from __future__ import annotations

import jinja2
from django.template.defaultfilters import truncatechars


def environment(**options) -> jinja2.Environment:
    # A misspelt name fails loudly (and so in the tests) instead of printing nothing.
    options["undefined"] = jinja2.StrictUndefined
    env = jinja2.Environment(**options)  # noqa: S701 - Django passes autoescape=True
    env.filters["truncatechars"] = truncatechars
    return env
