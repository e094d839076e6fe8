"""The passage card, a partial of the grading page (`labelling/grade.html#passage_card`):
hostile document text stays text on the page, in a write's answer and in the document view;
the card a write answers with is the page's card; and the page is one engine's, Django's."""

import re

import pytest
from django.conf import settings
from django.urls import reverse

from labelling.models import Assignment
from labelling.services import judgements as judgement_services
from tests.factories import DocumentVersionFactory, PoolCandidateFactory, QuestionFactory
from tests.labelling.test_grading_views import HTMX, World, client_for, fast_user, post

PAYLOADS = ['<script>alert("card")</script>', "<img src=x onerror=alert(1)>", '"><b x="']
HOSTILE = " ".join(PAYLOADS)
TEXT = f"Leave policy. {HOSTILE} Unused days carry over until March. {HOSTILE} The end."


@pytest.fixture
def hostile(project):
    """Lina's question whose one passage, document title and note all carry markup."""
    lina = fast_user(project, username="lina")
    world = World(project)
    version = DocumentVersionFactory(
        document__project=project, document__title=f"Policy {PAYLOADS[1]}", text=TEXT
    )
    question = QuestionFactory(question_set=world.pool.question_set)
    start = TEXT.index("Unused")
    candidate = PoolCandidateFactory(
        pool=world.pool, question=question, version=version, start=start - 20, end=start + 40
    )
    assignment = Assignment.objects.create(pool=world.pool, question=question, labeller=lina)
    judgement_services.record_grade(
        assignment=assignment, candidate_id=candidate.pk, labeller=lina, grade=2, revision=0
    )
    judgement_services.record_note(
        assignment=assignment, candidate_id=candidate.pk, labeller=lina, note=HOSTILE, revision=1
    )
    kwargs = {"slug": project.slug, "pool_id": world.pool.pk, "question_id": question.pk}
    page = reverse("labelling:grade-question", kwargs=kwargs)
    return {"client": client_for(lina), "page": page, "candidate": candidate, "revision": 2}


def assert_inert(body: str, where: str) -> None:
    for payload in PAYLOADS:
        assert payload not in body, f"{where}: {payload!r} rendered raw"
    assert "&lt;script&gt;alert(" in body and "&lt;img src=x onerror=alert(1)&gt;" in body, where


def test_hostile_text_stays_text_on_the_page_in_a_writes_answer_and_the_document_view(hostile):
    client, page, candidate = hostile["client"], hostile["page"], hostile["candidate"]
    base = f"{page}candidates/{candidate.pk}/"
    shown = client.get(page)
    assert shown.status_code == 200
    assert_inert(shown.content.decode(), "page")
    assert "Policy &lt;img src=x onerror=alert(1)&gt;" in shown.content.decode()  # the title
    answer = post(client, base + "grade/", {"grade": "1", "revision": hostile["revision"]})
    assert answer.status_code == 200
    assert_inert(answer.content.decode(), "a grade's answer")
    for view in ("", "?view=passage"):
        document = client.get(base + "document/" + view, **HTMX)
        assert document.status_code == 200
        assert_inert(document.content.decode(), f"the document view {view}")


def card_of(body: str, candidate_id: int) -> str:
    """The passage's card: its <li> up to the end of its note form, its last part."""
    start = f'<li class="candidate[^"]*" id="candidate-{candidate_id}"'
    match = re.search(start + r'.*?class="note-form".*?</form>\s*</li>', body, re.S)
    assert match, body[:500]
    return match.group(0)


def normalised(card: str) -> str:
    """The card without what only the page's copy carries (its CSRF and page fields, the
    passage's number among the others) and without the answer's swap attribute."""
    card = re.sub(
        r'<input type="hidden" name="(?:csrfmiddlewaretoken|labeller|guideline)"[^>]*>', "", card
    )
    card = card.replace(' hx-swap-oob="true"', "")
    card = re.sub(r'<p class="card-message[^"]*"([^>]*)>.*?</p>', r"<p\1></p>", card, flags=re.S)
    return re.sub(r"\s+", " ", card)


def test_a_writes_answer_carries_the_card_the_page_shows(hostile):
    """One template for both: after a write, the card swapped in is the card a reload shows
    (but for the fields only the page's script sends, and the write's message)."""
    client, page, candidate = hostile["client"], hostile["page"], hostile["candidate"]
    answer = post(
        client,
        f"{page}candidates/{candidate.pk}/grade/",
        {"grade": "1", "revision": hostile["revision"]},
    )
    swapped = card_of(answer.content.decode(), candidate.pk)
    assert 'hx-swap-oob="true"' in swapped and "csrfmiddlewaretoken" not in swapped
    reloaded = card_of(client.get(page).content.decode(), candidate.pk)
    assert reloaded.count('name="csrfmiddlewaretoken"') == 3  # grade, remove-span and note
    assert reloaded.count('name="labeller"') == 3 and "hx-swap-oob" not in reloaded
    assert normalised(swapped) == normalised(reloaded)
    assert 'data-revision="3"' in swapped and "grade-1 chosen" in swapped


def test_the_grading_page_and_its_fragments_are_django_templates_only():
    assert [engine["BACKEND"] for engine in settings.TEMPLATES] == [
        "django.template.backends.django.DjangoTemplates"
    ]
