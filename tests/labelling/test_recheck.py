"""Spans on documents changed after labelling: re-projected with goldeval.text.anchoring.locate, the
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
    assert page.count('<tr id="span-') == 2 and "not found" in page and "vpn client install" in page
    # bob sees his own span only, never ann's.
    bobs = login(bob).get(reverse("labelling:show-recheck", args=[project.slug])).content.decode()
    assert bobs.count('<tr id="span-') == 1 and "vpn client install" not in bobs

    health = login(lead).get(reverse("health:show-index-health", args=[project.slug]))
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


def _changed_vpn(project, member):
    people = {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead"),
    }
    question_set = labelled_question_set(project, **people)
    add_documents(project, ("vpn", "Intro line.\n\n" + FIRST_SENTENCE))
    spans = {
        (s.start, s.end): s.span_id
        for s in stale_spans(project=project, viewer=people["ann"], labeller=people["ann"])
    }
    return people, question_set, spans


def _answer(client, project, span_id, **data):
    url = reverse("labelling:answer-recheck", args=[project.slug, span_id])
    return client.post(url, data, follow=True)


def _gold_spans(question_set, question_id):
    from labelling.services.gold import resolve_gold

    (row,) = [
        r
        for r in resolve_gold(question_set=question_set).questions
        if r.question.external_id == question_id
    ]
    return [(s.doc_id, s.version, s.start, s.end, s.quote) for s in row.spans]


def test_confirming_and_saying_gone_are_stored_with_history_and_the_gold_takes_them(
    project, member
):
    from labelling.models import Change, SpanRecheck

    people, question_set, spans = _changed_vpn(project, member)
    assert _gold_spans(question_set, "q2") == [
        ("vpn", 1, 0, 40, VPN_TEXT[:40]),
        ("vpn", 1, 100, 150, VPN_TEXT[100:150]),
    ]
    ann = login(people["ann"])
    page = _answer(ann, project, spans[(0, 40)], outcome="confirmed").content.decode()
    assert "Confirmed: it only moved; the gold now takes the evidence" in page
    page = _answer(ann, project, spans[(100, 150)], outcome="gone").content.decode()
    assert "this evidence is gone from the new version" in page
    assert page.count("Confirm the new place</button>") == 0
    assert '<span class="badge">gone</span>' in page

    confirmed = SpanRecheck.objects.get(span_id=spans[(0, 40)])
    assert (confirmed.outcome, confirmed.version.version, confirmed.start, confirmed.end) == (
        "confirmed",
        2,
        13,
        53,
    )
    assert confirmed.quote == VPN_TEXT[:40] and confirmed.made_by == people["ann"]
    gone = SpanRecheck.objects.get(span_id=spans[(100, 150)])
    assert gone.outcome == "gone" and gone.start is None
    history = Change.objects.filter(subject="recheck").order_by("pk")
    assert [c.action for c in history] == ["re-check: confirmed", "re-check: gone"]
    assert history[0].before["answer"] is None and history[0].after["answer"]["start"] == 13
    assert all(c.made_by == people["ann"] for c in history)
    # The gold takes the answers: the confirmed span on version 2, the gone one no more.
    assert _gold_spans(question_set, "q2") == [("vpn", 2, 13, 53, VPN_TEXT[:40])]
    health = (
        login(people["lead"])
        .get(reverse("health:show-index-health", args=[project.slug]))
        .content.decode()
    )
    assert "confirmed: it moved at [13, 53)" in health and "gone: no longer in the gold" in health
    # The same answer again writes nothing more.
    _answer(ann, project, spans[(0, 40)], outcome="confirmed")
    assert Change.objects.filter(subject="recheck").count() == 2


def test_marking_again_in_the_new_text_is_checked_against_it(project, member):
    from labelling.models import SpanRecheck

    people, question_set, spans = _changed_vpn(project, member)
    ann = login(people["ann"])
    span_id = spans[(100, 150)]
    form = ann.get(reverse("labelling:remark-span", args=[project.slug, span_id]))
    html = form.content.decode()
    assert form.status_code == 200 and "It was not found in the new text" in html
    assert 'data-start="0">Intro line.' in html

    # Nothing found to confirm; a quote that is not the text at those offsets: nothing stored.
    page = _answer(ann, project, span_id, outcome="confirmed").content.decode()
    assert "Your quote was not found in the new text" in page
    page = _answer(
        ann, project, span_id, outcome="re-marked", start="0", end="11", quote="Intro lime."
    ).content.decode()
    assert "does not match the new version" in page and "Mark the evidence again" in page
    page = _answer(ann, project, span_id, outcome="re-marked", start="x").content.decode()
    assert "must be a whole number" in page
    assert not SpanRecheck.objects.exists()

    _answer(ann, project, span_id, outcome="re-marked", start="0", end="11", quote="Intro line.")
    row = SpanRecheck.objects.get(span_id=span_id)
    assert (row.outcome, row.version.version, row.start, row.end) == ("re-marked", 2, 0, 11)
    assert ("vpn", 2, 0, 11, "Intro line.") in _gold_spans(question_set, "q2")


def test_a_labeller_answers_for_their_own_spans_only(project, member):
    from labelling.models import Change, SpanRecheck

    people, _, spans = _changed_vpn(project, member)
    anns = spans[(0, 40)]
    for who in ("bob", "lead"):
        client = login(people[who])
        assert _answer(client, project, anns, outcome="confirmed").status_code == 404
        remark = client.get(reverse("labelling:remark-span", args=[project.slug, anns]))
        assert remark.status_code == 404 and "vpn client install" not in remark.content.decode()
    assert not SpanRecheck.objects.exists() and not Change.objects.filter(subject="recheck")


def test_a_gold_set_finalised_after_the_answers_carries_them(project, member):
    from evaluation.services.gold_sets import finalise_gold_set, load_gold_set

    people, question_set, spans = _changed_vpn(project, member)
    ann = login(people["ann"])
    _answer(ann, project, spans[(0, 40)], outcome="confirmed")
    _answer(ann, project, spans[(100, 150)], outcome="gone")
    gold_set = finalise_gold_set(question_set=question_set, user=member("admin"))
    gold = load_gold_set(gold_set)
    q2 = gold.questions["q2"]
    assert [(s.doc_id, s.start, s.end) for s in q2.spans] == [("vpn", 13, 53)]


def test_a_reanchored_span_whose_words_changed_shows_a_word_diff_escaped(project, member):
    ann, lead = member("labeller", username="ann"), member("lead")
    labelled_question_set(project, ann=ann, bob=member("labeller", username="bob"), lead=lead)
    # The first sentence keeps its place but its second word gains hostile markup.
    first_word = "the"
    add_documents(project, ("vpn", FIRST_SENTENCE.replace("Install the", "Install <u>the", 1)))

    moved_or_changed = [
        s for s in stale_spans(project=project, viewer=ann, labeller=ann) if s.proposal
    ]
    assert moved_or_changed and all(s.facts_changed for s in moved_or_changed)

    page = login(ann).get(reverse("labelling:show-recheck", args=[project.slug])).content.decode()
    assert "the facts changed" in page
    assert f"<del>{first_word}</del>" in page and f"<ins>&lt;u&gt;{first_word}</ins>" in page
    assert "<u>" not in page

    html = (
        login(lead).get(reverse("health:show-index-health", args=[project.slug])).content.decode()
    )
    assert "the facts changed" in html and f"<del>{first_word}</del>" in html
    assert "<u>" not in html


def test_a_span_that_only_moved_is_not_called_changed(project, member):
    people, _, _ = _changed_vpn(project, member)
    page = login(people["ann"]).get(reverse("labelling:show-recheck", args=[project.slug]))
    html = page.content.decode()
    assert "moved, same words" in html and "the facts changed" not in html
