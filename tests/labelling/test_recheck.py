"""Spans on documents changed after labelling: re-projected with corpus.anchoring.locate, the
labeller's Re-check list (their own only) and the lead's list on the Index health page."""

from django.urls import reverse

from labelling.services.recheck import stale_spans
from tests.factories import VPN_TEXT, add_documents, labelled_question_set, login

FIRST_SENTENCE = VPN_TEXT[: VPN_TEXT.index(".") + 1]


def test_a_span_on_a_changed_paragraph_reanchors_and_one_on_a_deleted_paragraph_is_listed(
    project, member
):
    ann, bob, lead = (
        member("labeller", username="ann"),
        member("labeller", username="bob"),
        member("lead"),
    )
    labelled_question_set(project, ann=ann, bob=bob, lead=lead)
    # vpn changes after labelling: a new first line, the last two sentences deleted.
    add_documents(project, ("vpn", "Intro line.\n\n" + FIRST_SENTENCE))

    spans = stale_spans(project=project, viewer=ann, labeller=ann)
    assert [(s.question_id, s.start, s.end, s.proposal) for s in spans] == [
        ("q2", 0, 40, (13, 53)),  # moved by the new first line, found exactly
        ("q2", 100, 150, None),  # its paragraph was deleted
    ]
    assert spans[0].proposed_text == VPN_TEXT[:40] and spans[0].similarity == 1.0

    page = login(ann).get(reverse("labelling:show-recheck", args=[project.slug])).content.decode()
    assert page.count("<tr>") == 3 and "not found" in page and "vpn client install" in page
    # bob sees his own span only, never ann's.
    bobs = login(bob).get(reverse("labelling:show-recheck", args=[project.slug])).content.decode()
    assert bobs.count("<tr>") == 2 and "vpn client install" not in bobs

    health = login(lead).get(reverse("evaluation:show-index-health", args=[project.slug]))
    html = health.content.decode()
    assert "3 spans point at an older version" in html
    assert html.count("not re-anchored</span>") == 1 and "re-anchored at [13, 53)" in html


def test_nothing_to_recheck_without_changes(project, member):
    ann = member("labeller", username="ann")
    labelled_question_set(
        project, ann=ann, bob=member("labeller", username="bob"), lead=member("lead")
    )
    page = login(ann).get(reverse("labelling:show-recheck", args=[project.slug])).content.decode()
    assert "Nothing to re-check" in page
