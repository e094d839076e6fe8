"""Issue 33, item 14: a page's notices stand in one region (templates/base.html), each message
said once: what the last action said, a lead's new production samples, the page's own banner."""

from __future__ import annotations

import re

from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.template import engines
from django.urls import reverse
from django.utils import timezone

from corpus.templatetags.banners import each_once
from labelling.models import QuestionSet
from production.models import Sample
from production.services.sampling import check_rule, save_sampling_rule
from tests.factories import MembershipFactory, UserFactory, login


def test_each_message_once_in_its_order():
    said = [
        Message(constants.SUCCESS, "Saved."),
        Message(constants.WARNING, "Two lines were skipped."),
        Message(constants.SUCCESS, "Saved."),
        Message(constants.ERROR, "Saved."),  # another level says something else
    ]
    assert [(m.level, str(m)) for m in each_once(said)] == [
        (constants.SUCCESS, "Saved."),
        (constants.WARNING, "Two lines were skipped."),
        (constants.ERROR, "Saved."),
    ]
    template = engines["django"].from_string(
        "{% load banners %}{% for m in messages|each_once %}<li>{{ m }}</li>{% endfor %}"
    )
    assert template.render({"messages": said}).count("<li>Saved.</li>") == 2


def region_of(html: str) -> str:
    start = html.index('<div class="banners"')
    return html[start : html.index("<h1", start)]


def test_samples_and_the_page_s_own_banner_share_one_region(project):
    lead = UserFactory(username="lea")
    MembershipFactory(project=project, user=lead, role="lead")
    rule = save_sampling_rule(
        project=project,
        user=lead,
        name="weekly",
        spec=check_rule(filters={}, strategy="uniform", size=5),
    )
    for name in ("production-W48", "production-W49"):
        Sample.objects.create(
            project=project,
            rule=rule,
            window_start=timezone.now(),
            window_end=timezone.now(),
            population=0,
            question_set=QuestionSet.objects.create(project=project, name=name),
        )
    html = login(lead).get(reverse("corpus:show-project", args=[project.slug])).content.decode()
    assert html.count('class="banners"') == 1
    region = region_of(html)
    assert "production-W48" in region and "production-W49" in region
    # The project page's index health banner loads into the same region.
    assert reverse("health:show-health-banner", args=[project.slug]) in region
    assert len(re.findall(r'class="banner[ "]', html)) == len(
        re.findall(r'class="banner[ "]', region)
    )
