"""Answer review adjudicated per item (issue 36 item 6): items two reviewers agree on settle
themselves, each differing item is decided on its own, the gold is built item by item, an
undecided item keeps the answer out (never one reviewer's value), and whole-review decisions
made before items existed still stand."""

import json

import pytest
from django.urls import reverse

from answers.models import AnswerAssignment, AnswerItemDecision, CitationJudgement
from answers.services import adjudication, items, review
from answers.services.gold import answers_gold_records, undecided_items
from answers.services.runs import FactInput, import_answers, record_reference_answer
from corpus.models import AccessGroup, Document
from goldeval.formats.answer_gold import read_answer_gold
from goldeval.scoring.answers import faithfulness
from goldset.errors import ServiceError
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents, login

TEXTS = {
    "alpha": "Employees get twenty five days of leave each year.",
    "beta": "Five unused days carry over to the next year.",
    "secret": "The <b>board</b> decides bonuses in March.",
}


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller"),
        "bob": member("labeller"),
        "lead": member("lead"),
        "admin": member("admin"),
    }


@pytest.fixture
def world(project, people):
    """q1 answered in two claims (the first citing alpha and beta), with two reference facts;
    q2 refused; q3's answer cites the restricted document `secret` (Ann and Bob may see it,
    the lead may not). Ann and Bob review every answer."""
    add_documents(project, *TEXTS.items())
    group = AccessGroup.objects.create(project=project, name="board")
    Document.objects.get(project=project, doc_id="secret").access_groups.add(group)
    group.members.add(people["ann"], people["bob"], people["admin"])
    question_set = QuestionSetFactory(project=project, name="staff")
    q1 = QuestionFactory(question_set=question_set, external_id="q1", text="how much <i>leave</i>?")
    QuestionFactory(question_set=question_set, external_id="q2", text="who is the CEO?")
    QuestionFactory(question_set=question_set, external_id="q3", text="when are bonuses?")
    lines = [
        {
            "question_id": "q1",
            "answer": "You get 25 days <script>x</script>. Five carry over.",
            "refused": False,
            "sentences": [
                {"start": 0, "end": 35, "citations": [{"doc_id": "alpha"}, {"doc_id": "beta"}]},
                {"start": 36, "end": 52},
            ],
            "context": [{"doc_id": "alpha"}, {"doc_id": "beta"}],
        },
        {"question_id": "q2", "answer": "", "refused": True, "context": [{"doc_id": "alpha"}]},
        {
            "question_id": "q3",
            "answer": "In March.",
            "refused": False,
            "sentences": [{"start": 0, "end": 9, "citations": [{"doc_id": "secret"}]}],
            "context": [{"doc_id": "secret"}],
        },
    ]
    run = import_answers(question_set=question_set, data=jsonl(*lines), run_name="rag").run
    record_reference_answer(
        question=q1,
        facts=[FactInput("25 days <em>a year</em>"), FactInput("five carry over", False)],
        user=people["lead"],
    )
    review.plan_answer_review(run=run, labellers=[people["ann"], people["bob"]], double_share=1)
    assert AnswerAssignment.objects.count() == 6
    return run


def review_as(run, labeller, question="q1", *, support=("full", "none"), grades=(2, 0),
              facts=("yes", "no"), wrongly_refused=False, split=None):  # fmt: skip
    assignment = AnswerAssignment.objects.get(
        labeller=labeller, answer__run=run, answer__question__external_id=question
    )
    if split is not None:
        review.split_claim(assignment=assignment, labeller=labeller, claim=0, at=split)
    claims = list(assignment.claims.order_by("position"))
    for claim, value in zip(claims, support, strict=False):
        review.record_claim_support(
            assignment=assignment, labeller=labeller, claim=claim.position, support=value
        )
    for claim in claims:
        citations = CitationJudgement.objects.filter(claim=claim).order_by("passage_id")
        for citation, grade in zip(citations, grades, strict=False):
            review.record_citation_grade(
                assignment=assignment,
                labeller=labeller,
                claim=claim.position,
                passage=citation.passage_id,
                grade=grade,
            )
    reference = review.reference_for(assignment)
    if reference is not None and not assignment.answer.refused:
        for fact, present in zip(reference.facts.order_by("position"), facts, strict=True):
            review.record_fact_presence(
                assignment=assignment, labeller=labeller, fact=fact.pk, present=present
            )
    if wrongly_refused:
        review.set_wrongly_refused(assignment=assignment, labeller=labeller, value=True)
    review.finish_answer_review(assignment=assignment, labeller=labeller)
    return assignment


def gold_of(run, question="q1"):
    records = answers_gold_records(run.question_set)
    found = [r for r in records if r["kind"] == "answer" and r["question_id"] == question]
    return found[0] if found else None


def compared(run, question="q1"):
    return items.answer_items(run.answers.get(question__external_id=question))


def facts_of(run):
    return {fact.text: str(fact.pk) for fact in run.question_set.questions.get(
        external_id="q1").reference_answers.get().facts.all()}  # fmt: skip


def test_items_the_reviewers_agree_on_settle_without_the_lead(world, people):
    review_as(world, people["ann"])
    review_as(world, people["bob"])
    found = compared(world)
    assert {item.status for item in found.items} == {items.AGREED}
    assert [item.kind for item in found.items] == [
        "support", "citation", "citation", "together", "support", "together", "fact", "fact"
    ]  # fmt: skip
    assert (
        adjudication.answer_disputes(question_set=world.question_set, viewer=people["lead"]) == []
    )
    record = gold_of(world)
    assert [c["support"] for c in record["claims"]] == ["full", "none"]
    assert [c["grade"] for c in record["claims"][0]["citations"]] == [2, 0]


def test_each_differing_item_is_listed_alone_and_the_gold_waits_for_all_of_them(world, people):
    review_as(world, people["ann"], support=("full", "none"), facts=("yes", "no"))
    review_as(world, people["bob"], support=("none", "none"), facts=("partly", "no"))
    (dispute,) = adjudication.answer_disputes(
        question_set=world.question_set, viewer=people["lead"]
    )
    assert [(row.kind, row.claim, row.fact) for row in dispute.rows] == [
        ("claim support", "You get 25 days <script>x</script>.", ""),
        ("fact presence", "", "25 days <em>a year</em>"),
    ]
    names = (people["ann"].username, people["bob"].username)
    assert dict(dispute.rows[0].votes) == {names[0]: "supported", names[1]: "not supported"}
    assert dispute.undecided == 2
    # Undecided: reported as such, and the answer stays out of the gold (not Ann's, not Bob's).
    assert gold_of(world) is None
    ((answer, undecided),) = undecided_items(world.question_set)
    assert [item.key for item in undecided] == [
        "support:0-35",
        f"fact:{facts_of(world)['25 days <em>a year</em>']}",
    ]

    lead = people["lead"]
    adjudication.decide_item(answer=answer, item="support:0-35", value="partial", user=lead)
    assert gold_of(world) is None  # one item still undecided
    fact_key = undecided[1].key
    adjudication.decide_item(answer=answer, item=fact_key, value="yes", user=lead)
    record = gold_of(world)
    # Disputed items from the lead (partial: neither reviewer's), agreed ones from the reviewers.
    assert [c["support"] for c in record["claims"]] == ["partial", "none"]
    assert [c["grade"] for c in record["claims"][0]["citations"]] == [2, 0]
    assert {f["fact_id"]: f["present"] for f in record["facts"]} == {
        facts_of(world)["25 days <em>a year</em>"]: "yes",
        facts_of(world)["five carry over"]: "no",
    }
    assert undecided_items(world.question_set) == []
    assert AnswerItemDecision.objects.filter(answer=answer).count() == 2
    # Deciding again replaces the decision; the scores follow it.
    adjudication.decide_item(answer=answer, item="support:0-35", value="full", user=lead)
    assert AnswerItemDecision.objects.filter(answer=answer).count() == 2
    gold = read_answer_gold(jsonl(*answers_gold_records(world.question_set)))
    grades = gold.grades_for("q1", answer.key)
    assert faithfulness(grades.claims) == 0.5
    # Both reviews are kept as they were.
    assert answer.assignments.get(labeller=people["bob"]).claims.get(position=0).support == "none"


def test_a_decision_must_be_of_a_differing_item_and_a_known_value(world, people):
    review_as(world, people["ann"], grades=(2, 0))
    review_as(world, people["bob"], grades=(1, 0))
    answer = world.answers.get(question__external_id="q1")
    (row,) = adjudication.answer_disputes(question_set=world.question_set, viewer=people["lead"])[
        0
    ].rows
    assert row.kind == "citation grade" and row.doc_id == "alpha"
    lead = people["lead"]
    with pytest.raises(ServiceError, match="agree"):
        adjudication.decide_item(answer=answer, item="support:0-35", value="full", user=lead)
    with pytest.raises(ServiceError, match="Choose one of"):
        adjudication.decide_item(answer=answer, item=row.item.key, value="7", user=lead)
    adjudication.decide_item(answer=answer, item=row.item.key, value="1", user=lead)
    assert gold_of(world)["claims"][0]["citations"][0]["grade"] == 1


def test_a_whole_review_decision_made_before_items_is_carried_over(world, people):
    """Whole-review decisions are read as they are (no data migration): each item they would
    settle takes the chosen review's value, unless the lead decided that item on its own."""
    review_as(world, people["ann"], support=("full", "none"), facts=("yes", "no"))
    bobs = review_as(world, people["bob"], support=("none", "full"), facts=("partly", "no"))
    answer = bobs.answer
    adjudication.resolve_answer(answer=answer, chosen=bobs, user=people["lead"])
    found = compared(world)
    assert [i.status for i in found.items if i.kind == "support"] == ["chosen review"] * 2
    record = gold_of(world)
    assert [c["support"] for c in record["claims"]] == ["none", "full"]
    # An item decided on its own wins over the whole-review choice.
    adjudication.decide_item(answer=answer, item="support:36-52", value="none", user=people["lead"])
    assert [c["support"] for c in gold_of(world)["claims"]] == ["none", "none"]
    fact = facts_of(world)["25 days <em>a year</em>"]
    assert {f["fact_id"]: f["present"] for f in gold_of(world)["facts"]}[fact] == "partly"


def test_claims_split_differently_wait_for_a_whole_review_choice(world, people):
    review_as(world, people["ann"], facts=("yes", "no"))
    bobs = review_as(
        world, people["bob"], support=("full", "full", "none"), split=8, facts=("no", "no")
    )
    found = compared(world)
    assert found.split_differs
    assert [i.kind for i in found.undecided] == ["fact", "split"]
    assert gold_of(world) is None
    (dispute,) = adjudication.answer_disputes(
        question_set=world.question_set, viewer=people["lead"]
    )
    assert dispute.split_differs and [row.kind for row in dispute.rows] == ["fact presence"]
    adjudication.resolve_answer(answer=bobs.answer, chosen=bobs, user=people["lead"])
    # Bob's claims stand; the fact the two differ on takes Bob's value as the chosen review's.
    record = gold_of(world)
    assert [(c["start"], c["end"], c["support"]) for c in record["claims"]] == [
        (0, 7, "full"),
        (8, 35, "full"),
        (36, 52, "none"),
    ]
    fact = facts_of(world)["25 days <em>a year</em>"]
    assert {f["fact_id"]: f["present"] for f in record["facts"]}[fact] == "no"


def test_the_refusal_call_is_an_item_of_its_own(world, people):
    review_as(world, people["ann"], "q2", wrongly_refused=True)
    review_as(world, people["bob"], "q2")
    answer = world.answers.get(question__external_id="q2")
    (dispute,) = adjudication.answer_disputes(
        question_set=world.question_set, viewer=people["lead"]
    )
    (row,) = dispute.rows
    assert row.kind == "refusal" and [c.keys for c in row.choices] == ["y", "n"]
    assert gold_of(world, "q2") is None
    adjudication.decide_item(answer=answer, item="refusal", value="wrong", user=people["lead"])
    assert gold_of(world, "q2")["wrongly_refused"] is True


def test_agreement_per_judgement_kind_with_intervals(world, people):
    review_as(world, people["ann"], support=("full", "none"), grades=(2, 0), facts=("yes", "no"))
    review_as(world, people["bob"], support=("none", "none"), grades=(2, 0), facts=("yes", "no"))
    review_as(world, people["ann"], "q2", wrongly_refused=True)
    review_as(world, people["bob"], "q2")
    report = adjudication.answer_agreement(question_set=world.question_set, viewer=people["lead"])
    assert list(report) == ["claim support", "citation grade", "fact presence", "refusal"]
    assert report["claim support"]["items"] == 2
    assert report["claim support"]["percent"] == pytest.approx(0.5)
    low, high = report["claim support"]["percent_ci"]
    assert 0 <= low <= 0.5 <= high <= 1
    assert report["citation grade"]["items"] == 2 and report["citation grade"]["percent"] == 1
    assert report["fact presence"]["items"] == 2
    assert report["refusal"]["items"] == 1 and report["refusal"]["percent"] == 0


def test_a_lead_who_may_not_see_a_cited_document_sees_neither_its_items_nor_counts(world, people):
    review_as(world, people["ann"], "q3", support=("full",), grades=(2,))
    review_as(world, people["bob"], "q3", support=("none",), grades=(0,))
    lead_report = adjudication.answer_agreement(
        question_set=world.question_set, viewer=people["lead"]
    )
    assert lead_report["claim support"]["items"] == 0
    assert lead_report["citation grade"]["items"] == 0
    assert (
        adjudication.answer_disputes(question_set=world.question_set, viewer=people["lead"]) == []
    )
    (dispute,) = adjudication.answer_disputes(
        question_set=world.question_set, viewer=people["admin"]
    )
    assert [row.kind for row in dispute.rows] == ["claim support", "citation grade"]


# Views ----------------------------------------------------------------------------------------


def urls(run, project):
    args = [project.slug, run.question_set.pk]
    return (
        reverse("answers:list-answer-adjudication", args=args),
        reverse("answers:decide-answer-item", args=args),
    )


def test_only_leads_and_admins_see_and_decide(world, people, project):
    review_as(world, people["ann"])
    review_as(world, people["bob"], support=("none", "none"))
    page, decide = urls(world, project)
    answer = world.answers.get(question__external_id="q1")
    for role in ("ann", "bob"):
        client = login(people[role])
        assert client.get(page).status_code == 403
        data = {"answer": answer.pk, "item": "support:0-35", "value": "full"}
        assert client.post(decide, data).status_code == 403
    assert not AnswerItemDecision.objects.exists()
    for role in ("lead", "admin"):
        assert login(people[role]).get(page).status_code == 200


def test_the_page_lists_items_escaped_and_a_decision_goes_on_to_the_next(world, people, project):
    review_as(world, people["ann"], facts=("yes", "no"))
    review_as(world, people["bob"], support=("none", "none"), facts=("partly", "no"))
    page, decide = urls(world, project)
    client = login(people["lead"])
    html = client.get(page).content.decode()
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert "<em>a year</em>" not in html and "&lt;em&gt;a year&lt;/em&gt;" in html
    assert "2 items to decide." in html
    assert 'data-key="f 2"' in html and 'data-key="y 2"' in html
    answer = world.answers.get(question__external_id="q1")
    fact = facts_of(world)["25 days <em>a year</em>"]
    response = client.post(
        decide,
        {
            "answer": answer.pk,
            "item": "support:0-35",
            "value": "full",
            "next": f"item-{answer.pk}-fact-{fact}",
        },
    )
    assert response.status_code == 302
    assert response["Location"].endswith(f"#item-{answer.pk}-fact-{fact}")
    assert AnswerItemDecision.objects.get(answer=answer).value == "full"
    assert "1 item to decide." in client.get(page).content.decode()


def test_bad_input_is_a_clear_message_never_a_500(world, people, project):
    review_as(world, people["ann"])
    review_as(world, people["bob"], support=("none", "none"))
    page, decide = urls(world, project)
    client = login(people["lead"])
    answer = world.answers.get(question__external_id="q1")
    response = client.post(
        decide, {"answer": answer.pk, "item": "support:0-35", "value": "maybe"}, follow=True
    )
    assert response.status_code == 200
    assert "q1: Choose one of: supported, partly, not supported." in response.content.decode()
    response = client.post(
        decide, {"answer": answer.pk, "item": "nonsense", "value": "full"}, follow=True
    )
    assert "q1: The reviewers agree on that item, or it is gone" in response.content.decode()
    response = client.post(
        decide, {"answer": answer.pk, "item": "support:0-35", "value": "full", "next": 'x"y'}
    )
    assert response.status_code == 302 and response["Location"] == page
    assert client.post(decide, {"answer": "x", "item": "a", "value": "b"}).status_code == 404
    assert AnswerItemDecision.objects.get(answer=answer).value == "full"


def test_an_answer_citing_a_hidden_document_is_404_to_decide(world, people, project):
    review_as(world, people["ann"], "q3", support=("full",), grades=(2,))
    review_as(world, people["bob"], "q3", support=("none",), grades=(0,))
    page, decide = urls(world, project)
    answer = world.answers.get(question__external_id="q3")
    lead = login(people["lead"])
    html = lead.get(page).content.decode()
    assert "In March." not in html and "bonuses" not in html and f"item-{answer.pk}-" not in html
    data = {"answer": answer.pk, "item": "support:0-9", "value": "full"}
    assert lead.post(decide, data).status_code == 404
    assert login(people["admin"]).post(decide, data).status_code == 302
    assert AnswerItemDecision.objects.get(answer=answer).decided_by == people["admin"]


def test_a_lead_who_reviewed_the_answer_never_sees_the_other_review(world, people, project):
    review_as(world, people["ann"])
    bobs = review_as(world, people["bob"], support=("none", "none"))
    # The lead wrote the second review (planned as a reviewer, say).
    AnswerAssignment.objects.filter(pk=bobs.pk).update(labeller=people["lead"])
    page, decide = urls(world, project)
    lead = login(people["lead"])
    html = lead.get(page).content.decode()
    assert people["ann"].username not in html and f"item-{bobs.answer_id}-" not in html
    report = adjudication.answer_agreement(question_set=world.question_set, viewer=people["lead"])
    assert report["claim support"]["items"] == 0
    data = {"answer": bobs.answer_id, "item": "support:0-35", "value": "full"}
    assert lead.post(decide, data).status_code == 404
    resolve = reverse("answers:resolve-answer", args=[project.slug, world.question_set.pk])
    assert lead.post(resolve, {"answer": bobs.answer_id, "chosen": bobs.pk}).status_code == 404
    # Another lead (here the admin) decides it.
    assert login(people["admin"]).post(decide, data).status_code == 302


def test_groups_of_citations_are_an_item_decided_by_whose_groups_stand(world, people):
    anns = review_as(world, people["ann"], grades=(1, 1))
    bobs = review_as(world, people["bob"], grades=(1, 1))
    lead = people["lead"]
    review.add_supporting_set(assignment=anns, labeller=people["ann"], claim=0, citations=[0, 1])
    answer = anns.answer
    (dispute,) = adjudication.answer_disputes(question_set=world.question_set, viewer=lead)
    (row,) = dispute.rows
    assert row.kind == "citations that support the claim together"
    assert dict(row.votes) == {
        people["ann"].username: "citation 1 + citation 2",
        people["bob"].username: "no group",
    }
    assert [c.keys for c in row.choices] == ["1", "2"]
    assert gold_of(world) is None
    adjudication.decide_item(answer=answer, item=row.item.key, value=str(anns.slot), user=lead)
    assert gold_of(world)["claims"][0]["supporting_sets"] == [[0, 1]]
    with pytest.raises(ServiceError, match="groups"):
        adjudication.decide_item(answer=answer, item=row.item.key, value="3", user=lead)
    # A citation graded 0 on Bob's review too: the lead decides it 0, and the group it was in
    # no longer supports the claim, as the review page drops it.
    review.record_citation_grade(
        assignment=bobs,
        labeller=people["bob"],
        claim=0,
        passage=CitationJudgement.objects.filter(claim__assignment=bobs)
        .order_by("passage_id")
        .first()
        .passage_id,
        grade=0,
    )
    (dispute,) = adjudication.answer_disputes(question_set=world.question_set, viewer=lead)
    (citation,) = [r for r in dispute.rows if r.kind == "citation grade"]
    adjudication.decide_item(answer=answer, item=citation.item.key, value="0", user=lead)
    record = gold_of(world)
    assert record["claims"][0]["citations"][0]["grade"] == 0
    assert "supporting_sets" not in record["claims"][0]
