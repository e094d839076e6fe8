"""Every gold span on a changed document reaches someone who can decide it (issue 33 item 3):
a resolution's evidence on every lead's Re-check page (leads who may see the document), the
Gold page marks each such span with a link, finalising counts how it keeps them; and "the
facts changed" is an outcome of its own, apart from "it moved" (item 4)."""

from django.urls import reverse

from labelling.models import Change, Span, SpanRecheck
from tests.factories import (
    FEE_V2,
    change_fee_documents,
    fee_question_set,
    login,
)


def _people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lead"),
        "paylead": member("lead", username="paylead"),
    }


def _changed(project, member):
    people = _people(member)
    question_set = fee_question_set(
        project,
        ann=people["ann"],
        bob=people["bob"],
        lead=people["lead"],
        group_lead=people["paylead"],
    )
    change_fee_documents(project, bands=True)
    return people, question_set


def _resolution_span(doc_id):
    return Span.objects.get(resolution__isnull=False, version__document__doc_id=doc_id)


def _recheck_page(client, project):
    return client.get(reverse("labelling:show-recheck", args=[project.slug])).content.decode()


def _gold_page(client, project, question_set):
    url = reverse("labelling:show-gold", args=[project.slug, question_set.pk])
    return client.get(url).content.decode()


def _answer(client, project, span_id, **data):
    url = reverse("labelling:answer-recheck", args=[project.slug, span_id])
    return client.post(url, data, follow=True)


def test_a_resolution_span_is_on_every_lead_s_recheck_who_may_see_its_document(project, member):
    people, _ = _changed(project, member)
    fee_span, band_span = _resolution_span("fees"), _resolution_span("bands")

    page = _recheck_page(login(people["lead"]), project)
    assert "Resolutions on changed documents" in page
    assert f'id="span-{fee_span.pk}"' in page and "refunds 40 percent of the gym fee" in page
    assert "<del>40</del>" in page and "<ins>50</ins>" in page and "the facts changed" in page
    assert "Keep it: the facts changed" in page and "Open the decision" in page
    # The restricted document's resolution: not there, not even its quote.
    assert f'id="span-{band_span.pk}"' not in page and "52,000" not in page

    # The lead in the access group sees both; the resolution's maker is no condition.
    page = _recheck_page(login(people["paylead"]), project)
    assert f'id="span-{fee_span.pk}"' in page and f'id="span-{band_span.pk}"' in page
    assert "<del>52,000</del>" in page and "<ins>55,000</ins>" in page

    # Labellers see their own evidence, never a lead's decision (blind labelling).
    for name in ("ann", "bob"):
        page = _recheck_page(login(people[name]), project)
        assert "Resolutions on changed documents" not in page
        assert "refunds 40 percent" not in page
        assert f'id="span-{fee_span.pk}"' not in page
    assert "Bikes bought for commuting" in _recheck_page(login(people["ann"]), project)


def test_who_may_not_decide_a_resolution_span_gets_404_and_nothing_is_written(project, member):
    people, _ = _changed(project, member)
    band_span = _resolution_span("bands")
    fee_span = _resolution_span("fees")
    for name, span in (("ann", fee_span), ("bob", band_span), ("lead", band_span)):
        client = login(people[name])
        assert _answer(client, project, span.pk, outcome="confirmed").status_code == 404
        remark = client.get(reverse("labelling:remark-span", args=[project.slug, span.pk]))
        assert remark.status_code == 404 and span.quote not in remark.content.decode()
    assert not SpanRecheck.objects.exists()


def test_a_lead_keeps_a_resolution_whose_facts_changed_and_the_gold_takes_the_new_words(
    project, member
):
    from labelling.services.gold import resolve_gold

    people, question_set = _changed(project, member)
    fee_span = _resolution_span("fees")
    lead = login(people["lead"])

    page = _answer(lead, project, fee_span.pk, outcome="confirmed").content.decode()
    assert "Recorded as &#x27;the facts changed&#x27;" in page
    answer = SpanRecheck.objects.get(span=fee_span)
    assert answer.outcome == "facts_changed" and answer.made_by == people["lead"]
    assert answer.quote == "refunds 50 percent of the gym fee"
    # A lead's answer has no labeller's assignment: no labeller's history gets a row.
    assert not Change.objects.filter(subject="recheck").exists()

    gold = {r.question.external_id: r for r in resolve_gold(question_set=question_set).questions}
    (span,) = gold["q1"].spans
    start = FEE_V2.index("refunds 50")
    assert (span.version, span.start, span.end, span.quote) == (
        2,
        start,
        start + len("refunds 50 percent of the gym fee"),
        "refunds 50 percent of the gym fee",
    )
    assert span.changed == "facts_changed" and span.by_lead

    page = _recheck_page(lead, project)
    assert '<span class="badge warn">the facts changed</span>' in page


def test_the_gold_page_marks_every_span_on_a_changed_document_with_a_link(project, member):
    people, question_set = _changed(project, member)
    fee_span = _resolution_span("fees")
    html = _gold_page(login(people["lead"]), project, question_set)
    # q1 (a resolution, not yet re-checked) and q2 (ann's, moved): both marked and counted.
    assert "2 gold spans on changed documents kept: 0 re-anchored" in html
    assert "0 with the facts changed, 0 marked again in the new version, 2 not re-checked" in html
    assert html.count('class="changed-span"') == 2
    assert "changed document: not re-checked" in html
    assert "in v2 now <q>refunds 50 percent of the gym fee</q>: the facts changed" in html
    assert "in v2 it moved, same words" in html  # ann's bikes span, not yet re-checked
    assert "<del>40</del>" in html and "<ins>50</ins>" in html
    recheck = reverse("labelling:show-recheck", args=[project.slug])
    assert f'href="{recheck}#span-{fee_span.pk}"' in html
    health = reverse("health:show-index-health", args=[project.slug])
    assert f'href="{health}#changed-spans"' in html
    # The restricted document's span: no mark, no quote, no count for this lead.
    assert "52,000" not in html and "55,000" not in html

    html = _gold_page(login(people["paylead"]), project, question_set)
    assert "3 gold spans on changed documents kept" in html and "<del>52,000</del>" in html

    # Once answered, the mark says how: ann confirms her moved span, the lead the changed one.
    bikes = Span.objects.get(
        judgement__assignment__labeller=people["ann"], quote__startswith="Bikes"
    )
    _answer(login(people["ann"]), project, bikes.pk, outcome="confirmed")
    _answer(login(people["lead"]), project, fee_span.pk, outcome="confirmed")
    html = _gold_page(login(people["lead"]), project, question_set)
    assert "2 gold spans on changed documents kept: 1 re-anchored (moved, same words)" in html
    assert "1 with the facts changed" in html and "0 not re-checked" in html
    assert "changed document: the facts changed" in html
    assert "changed document: re-anchored: it moved, same words" in html


def test_a_labeller_confirming_changed_words_records_the_facts_changed_with_history(
    project, member
):
    people = _people(member)
    fee_question_set(project, ann=people["ann"], bob=people["bob"], lead=people["lead"])
    change_fee_documents(project)
    ann = login(people["ann"])
    spans = {s.quote: s for s in Span.objects.filter(judgement__assignment__labeller=people["ann"])}
    page = _answer(ann, project, spans["40 percent"].pk, outcome="confirmed").content.decode()
    assert "the facts changed" in page
    moved = spans["Bikes bought for commuting are refunded in full."]
    page = _answer(ann, project, moved.pk, outcome="confirmed").content.decode()
    assert "Confirmed: it only moved" in page
    outcomes = dict(SpanRecheck.objects.values_list("span__quote", "outcome"))
    assert outcomes == {
        "40 percent": "facts_changed",
        "Bikes bought for commuting are refunded in full.": "confirmed",
    }
    actions = sorted(Change.objects.filter(subject="recheck").values_list("action", flat=True))
    assert actions == ["re-check: confirmed", "re-check: facts_changed"]
    # Index health tells the two apart too.
    html = (
        login(people["lead"])
        .get(reverse("health:show-index-health", args=[project.slug]))
        .content.decode()
    )
    assert "the facts changed at [" in html and "confirmed: it moved at [" in html
    assert "a resolution: a lead answers" in html


def test_finalising_counts_the_spans_on_changed_documents_in_the_manifest_and_page(project, member):
    from evaluation.services.gold_sets import finalise_gold_set

    people, question_set = _changed(project, member)
    _answer(login(people["lead"]), project, _resolution_span("fees").pk, outcome="confirmed")
    gold_set = finalise_gold_set(question_set=question_set, user=member("admin"))
    assert gold_set.manifest["spans_on_changed_documents"] == {
        "spans": 3,
        "moved": 0,
        "re_marked": 0,
        "facts_changed": 1,
        "not_rechecked": 2,
        "fact_links": 0,
    }
    url = reverse("evaluation:show-gold-set", args=[project.slug, gold_set.pk])
    html = login(people["paylead"]).get(url).content.decode()
    assert "3 gold spans on changed documents kept: 0 re-anchored (moved, same words), 1 with" in (
        html
    )
    assert "2 not re-checked" in html and "spans_on_changed_documents" in html
    # A lead the bundle hides a document from gets no count that includes it.
    html = login(people["lead"]).get(url).content.decode()
    assert "on changed documents kept" not in html


def test_a_gold_set_without_changed_documents_says_nothing_of_them(project, member):
    from evaluation.services.gold_sets import finalise_gold_set

    people = _people(member)
    question_set = fee_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    gold_set = finalise_gold_set(question_set=question_set, user=member("admin"))
    assert "spans_on_changed_documents" not in gold_set.manifest
    html = _gold_page(login(people["lead"]), project, question_set)
    assert "on changed documents kept" not in html and 'class="changed-span"' not in html


def test_confirmed_answers_stored_before_are_told_apart_by_the_migration(project, member):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("labelling.migrations.0017_recheck_facts_changed")
    people = _people(member)
    fee_question_set(project, ann=people["ann"], bob=people["bob"], lead=people["lead"])
    change_fee_documents(project)
    fee, bikes = _resolution_span("fees"), Span.objects.get(quote__startswith="Bikes")
    from corpus.models import Document

    newest = Document.objects.get(doc_id="fees").latest_version
    for span, quote in ((fee, "refunds 50 percent of the gym fee"), (bikes, bikes.quote)):
        start = FEE_V2.index(quote)
        SpanRecheck.objects.create(
            span=span,
            outcome="confirmed",
            version=newest,
            start=start,
            end=start + len(quote),
            quote=quote,
            made_by=people["lead"],
        )
    migration.tell_facts_changed(apps, None)
    assert dict(SpanRecheck.objects.values_list("span_id", "outcome")) == {
        fee.pk: "facts_changed",
        bikes.pk: "confirmed",
    }


def test_a_labeller_s_answer_does_not_move_a_lead_s_resolution(project, member):
    from labelling.services.gold import resolve_gold

    people, question_set = _changed(project, member)
    ann_span = Span.objects.get(judgement__assignment__labeller=people["ann"], quote="40 percent")
    _answer(login(people["ann"]), project, ann_span.pk, outcome="gone")
    assert SpanRecheck.objects.get(span=ann_span).outcome == "gone"
    gold = {r.question.external_id: r for r in resolve_gold(question_set=question_set).questions}
    (span,) = gold["q1"].spans
    # Still the lead's evidence on version 1, waiting for a lead's answer.
    assert (span.version, span.quote, span.changed) == (
        1,
        "refunds 40 percent of the gym fee",
        "not_rechecked",
    )


def test_a_lead_marks_a_resolution_s_evidence_again_and_opens_the_decision(project, member):
    from labelling.services.gold import resolve_gold

    people, question_set = _changed(project, member)
    fee_span = _resolution_span("fees")
    lead = login(people["lead"])
    page = lead.get(reverse("labelling:remark-span", args=[project.slug, fee_span.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and "how much of the gym fee?" in html
    assert "refunds 40 percent of the gym fee" in html

    quote = "50 percent of the gym fee"
    start = FEE_V2.index(quote)
    _answer(
        lead,
        project,
        fee_span.pk,
        outcome="re-marked",
        start=str(start),
        end=str(start + len(quote)),
        quote=quote,
    )
    assert SpanRecheck.objects.get(span=fee_span).outcome == "re-marked"
    gold = {r.question.external_id: r for r in resolve_gold(question_set=question_set).questions}
    (span,) = gold["q1"].spans
    assert (span.version, span.quote, span.changed) == (2, quote, "re_marked")

    # "Open the decision" reaches the item's decision page.
    recheck = _recheck_page(lead, project)
    decision = reverse(
        "labelling:resolve-item",
        args=[
            project.slug,
            question_set.pk,
            fee_span.resolution.pool_id,
            fee_span.resolution.question_id,
            fee_span.resolution.candidate_id,
        ],
    )
    assert f'href="{decision}"' in recheck
    assert lead.get(decision).status_code == 200


def test_old_quotes_and_word_diffs_of_changed_documents_are_escaped(project, member):
    from tests.factories import add_documents

    people = _people(member)
    question_set = fee_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    add_documents(
        project,
        ("fees", FEE_V2.replace("refunds 50 percent", "refunds <i> percent")),
    )
    lead = login(people["lead"])
    for html in (_gold_page(lead, project, question_set), _recheck_page(lead, project)):
        assert "<i>" not in html
        assert "<del>40</del>" in html and "<ins>&lt;i&gt;</ins>" in html
