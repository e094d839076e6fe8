"""A reference fact linked to evidence on a document that changed since reaches the leads who
may see the document, with the linked text against the text now (issue 33 item 3, the class:
answer-gold evidence anchors into documents too), and finalising counts such links."""

from django.urls import reverse

from answers.services import runs
from labelling.services.gold import question_gold_spans
from tests.factories import change_fee_documents, fee_question_set, login


def _world(project, member):
    people = {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lead"),
        "paylead": member("lead", username="paylead"),
    }
    question_set = fee_question_set(
        project,
        ann=people["ann"],
        bob=people["bob"],
        lead=people["lead"],
        group_lead=people["paylead"],
    )
    questions = {q.external_id: q for q in question_set.questions.all()}
    for question_id, fact in (("q1", "Half the gym fee is refunded."), ("q3", "Band C: 55k.")):
        question = questions[question_id]
        (span,) = question_gold_spans(question=question, viewer=people["paylead"])
        runs.record_reference_answer(
            question=question,
            facts=[runs.FactInput(text=fact, spans=(runs.span_of(span),))],
            user=people["paylead"],
        )
    change_fee_documents(project, bands=True)
    return people, question_set, questions


def test_leads_see_fact_links_to_changed_documents_they_may_see_with_the_diff(project, member):
    people, question_set, questions = _world(project, member)
    url = reverse("answers:list-answer-runs", args=[project.slug, question_set.pk])

    html = login(people["lead"]).get(url).content.decode()
    assert "1 reference-fact link to evidence on changed documents" in html
    assert "Half the gym fee is refunded." in html and "the facts changed" in html
    assert "<del>40</del>" in html and "<ins>50</ins>" in html
    edit = reverse(
        "answers:edit-reference-answer", args=[project.slug, question_set.pk, questions["q1"].pk]
    )
    assert f'href="{edit}"' in html
    # The restricted document's link: not its fact's link, its quote, nor a count with it.
    assert "52,000" not in html and "2 reference-fact links" not in html

    html = login(people["paylead"]).get(url).content.decode()
    assert "2 reference-fact links to evidence on changed documents" in html
    assert "<del>52,000</del>" in html and "<ins>55,000</ins>" in html

    page = login(people["lead"]).get(edit).content.decode()
    assert "1 reference-fact link to evidence on changed documents" in page
    assert "refunds 40 percent of the gym fee" in page and "Re-link its facts" not in page


def test_labellers_never_reach_the_fact_links(project, member):
    people, question_set, _ = _world(project, member)
    url = reverse("answers:list-answer-runs", args=[project.slug, question_set.pk])
    response = login(people["ann"]).get(url)
    assert response.status_code == 403 and "gym fee" not in response.content.decode()


def test_finalising_counts_fact_links_to_changed_documents(project, member):
    from evaluation.services.gold_sets import finalise_gold_set

    people, question_set, _ = _world(project, member)
    gold_set = finalise_gold_set(question_set=question_set, user=member("admin"))
    assert gold_set.manifest["spans_on_changed_documents"]["fact_links"] == 2
    url = reverse("evaluation:show-gold-set", args=[project.slug, gold_set.pk])
    html = login(people["paylead"]).get(url).content.decode()
    assert "2 reference-fact links still point at an older version of their document" in html


def test_no_fact_link_section_without_changes(project, member):
    people = {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lead"),
    }
    question_set = fee_question_set(project, **people)
    q1 = question_set.questions.get(external_id="q1")
    (span,) = question_gold_spans(question=q1, viewer=people["lead"])
    runs.record_reference_answer(
        question=q1,
        facts=[runs.FactInput(text="Some of it.", spans=(runs.span_of(span),))],
        user=people["lead"],
    )
    url = reverse("answers:list-answer-runs", args=[project.slug, question_set.pk])
    html = login(people["lead"]).get(url).content.decode()
    assert "reference-fact link" not in html


def test_the_answers_page_lists_each_included_question_with_its_newest_reference(project, member):
    people, question_set, questions = _world(project, member)
    runs.record_reference_answer(
        question=questions["q1"],
        facts=[runs.FactInput(text="Half."), runs.FactInput(text="Yearly.", vital=False)],
        user=people["lead"],
    )
    rows = runs.reference_rows(question_set=question_set)
    shown = {row["question"]["external_id"]: row["reference"] for row in rows}
    assert [row["question"]["pk"] for row in rows] == sorted(
        q.pk for q in question_set.questions.included()
    )
    newest = runs.current_reference(questions["q1"])
    assert shown["q1"] == {
        "question_id": questions["q1"].pk,
        "version": newest.version,
        "facts": newest.facts.count(),
    }
    assert (shown["q1"]["version"], shown["q1"]["facts"]) == (2, 2)
    assert shown["q3"]["version"] == 1 and shown["q3"]["facts"] == 1
    assert all(
        shown[q.external_id] is None
        for q in question_set.questions.included()
        if q.external_id not in ("q1", "q3")
    )
    url = reverse("answers:list-answer-runs", args=[project.slug, question_set.pk])
    html = login(people["lead"]).get(url).content.decode()
    assert "<td>2</td>\n  <td>v2</td>" in html  # q1: two facts, version 2
