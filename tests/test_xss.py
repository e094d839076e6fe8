"""Hostile text everywhere users can put it stays inert on every page, the admin included."""

import re
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from corpus.models import Job
from labelling.highlight import highlight
from labelling.models import Judgement
from labelling.passage_html import passage_html
from tests.conftest import GOLDSET_APPS
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    QuestionFactory,
    UserFactory,
    add_documents,
)
from tests.test_access_matrix import routes, world

PAYLOADS = [
    "<script>alert('xss-1')</script>",
    "<img src=x onerror=alert('xss-2')>",
    "</script><script>alert('xss-3')</script>",
    "<a href=\"javascript:alert('xss-4')\">click</a>",
    "<svg onload=alert('xss-5')>",
    '<div hx-get="/admin/" hx-trigger="load">xss-6</div>',
]
HOSTILE = " ".join(PAYLOADS)


@pytest.fixture
def hostile(db, monkeypatch):
    monkeypatch.setattr("corpus.jobs.queue", lambda job: None)
    a = world("a")
    project = a["project"]
    add_documents(
        project, (f"evil {PAYLOADS[1]}.html", f"Policy text. {HOSTILE} More text follows.")
    )
    question_set = project.question_sets.get(name="hr")
    QuestionFactory(question_set=question_set, external_id="q-evil", text=f"how do I {HOSTILE}??")
    Judgement.objects.update(note=HOSTILE)
    MembershipFactory(project=project, user=UserFactory(username=f"eve{PAYLOADS[4]}"[:150]))
    # Error messages quote what the user sent: a file name, a line, a document id.
    Job.objects.filter(pk=a["ids"]["job_id"]).update(
        state="failed",
        message=f"Could not read {HOSTILE}",
        errors=[{"source": HOSTILE, "line": 3, "doc_id": HOSTILE, "error": f"bad {HOSTILE}"}],
    )
    return a


def assert_inert(body: str, where: str) -> None:
    for payload in PAYLOADS:
        assert payload not in body, f"{where}: {payload!r} rendered raw"
    assert 'href="javascript:' not in body, where


def test_every_page_escapes_hostile_text(hostile):
    client = Client()
    assert client.login(username=hostile["people"]["admin"].username, password=PASSWORD)
    shown_escaped = set()
    for name, kwargs in routes():
        url = reverse(name, kwargs={k: hostile["ids"][k] for k in kwargs})
        response = client.get(url)
        if response.status_code == 200 and response["Content-Type"].startswith("text/html"):
            body = response.content.decode()
            assert_inert(body, name)
            if "&lt;img src=x onerror=alert(&#x27;xss-2&#x27;)&gt;" in body:
                shown_escaped.add(name)
    # The hostile text really is on the pages, as text.
    assert {
        "corpus:list-documents",
        "labelling:show-question-set",
        "corpus:show-job",
    } <= shown_escaped


def test_the_admin_escapes_hostile_text(hostile):
    superuser = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    assert client.login(username=superuser.username, password=PASSWORD)
    for app in GOLDSET_APPS:
        for model in apps.get_app_config(app).get_models():
            if not admin.site.is_registered(model):
                continue
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            assert_inert(client.get(url).content.decode(), url)
            first = model.objects.order_by("pk").first()
            if first is not None:
                change = reverse(
                    f"admin:{model._meta.app_label}_{model._meta.model_name}_change",
                    args=[first.pk],
                )
                assert_inert(client.get(change).content.decode(), change)


def test_nothing_but_the_sanitised_guideline_is_marked_safe():
    """Autoescaping is the defence; every way around it is listed here and justified."""
    repo = Path(__file__).resolve().parents[1]
    bypass = re.compile(
        r"{{[^}]*\|\s*safe\b[^}]*}}|mark_safe|SafeString|Markup\(|{%-?\s*autoescape\s+(?:off|false)"
    )
    found = sorted(
        (str(path.relative_to(repo)), match)
        for folder in ("templates", "goldset", "goldeval", *GOLDSET_APPS)
        for path in (repo / folder).rglob("*")
        if path.suffix in (".html", ".py") and "migrations" not in path.parts
        for match in bypass.findall(path.read_text())
    )
    # The templates show labelling.services.guidelines.render_guideline: CommonMark with raw
    # HTML off, then nh3's allow-list (tests/labelling/test_grading_views.py checks it renders
    # safely; the editor's preview: tests/labelling/test_plain_language.py).
    # labelling/passage_html.py renders document text as Markdown with every character at its
    # offset: it escapes every piece of text itself and adds only its own fixed tags, joined
    # once (format_html per segment cost the grading page several times more);
    # tests/labelling/test_passage_html.py and test_every_page_escapes_hostile_text check it.
    assert found == [
        ("labelling/passage_html.py", "mark_safe"),
        ("templates/labelling/_guideline_panel.html", "{{ guideline_html|safe }}"),
        ("templates/labelling/edit_guideline.html", "{{ preview|safe }}"),
        ("templates/labelling/guideline.html", "{{ html|safe }}"),
        # A guideline section behind a lead's decision, by the same render_guideline
        # (tests/labelling/test_calibration.py::test_the_guideline_behind_a_decision).
        ("templates/labelling/my_calibration.html", "{{ section|safe }}"),
    ]


MARKDOWN_PAYLOADS = [
    "[click](javascript:alert('xss-7'))",
    "[click](javascript:alert)",
    "![x](javascript:alert) ` <script>alert('xss-8')</script> `",
    "**<img src=x onerror=alert('xss-9')>**",
    "# <svg onload=alert('xss-10')>",
    "- <a href=\"javascript:alert('xss-11')\">x</a>",
    '> <div hx-get="/admin/" hx-trigger="load">xss-12</div>',
]


@pytest.mark.parametrize("layer_marks", [False, True])
def test_passages_rendered_as_markdown_keep_hostile_text_text(layer_marks):
    """labelling.passage_html builds its HTML itself (see above): Markdown around hostile text
    makes no tag, attribute or link of it, in the grading page's look or the adjudication's."""
    text = "\n\n".join(PAYLOADS + MARKDOWN_PAYLOADS)
    segments = highlight(text, offset=5, passage=(5, 5 + len(text) // 2), layers={"a": [(9, 40)]})
    body = str(passage_html(segments, layer_marks=layer_marks))
    assert_inert(body, "passage_html")
    for payload in MARKDOWN_PAYLOADS:
        assert payload not in body
    assert not re.search(r"<(?!/?(?:div|span|mark)\b)", body)
    assert not re.search(r"<[^>]*\shref=", body)
