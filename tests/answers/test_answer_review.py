"""The answer review: planning (spread, double share, access), each grade, blindness, finishing."""

import json
import re
from html import unescape

import pytest
from django.urls import reverse

from answers.models import (
    Answer,
    AnswerAssignment,
    AnswerSentence,
    CitationJudgement,
    ClaimEvidence,
    ClaimJudgement,
    FactJudgement,
)
from answers.services import review
from answers.services.runs import FactInput, import_answers, record_reference_answer
from corpus.models import AccessGroup
from goldset.errors import ServiceError
from labelling.services.guidelines import save_guideline
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents, login

LEAVE = "Employees receive 25 days of paid annual leave per calendar year."
SALARIES = "Band C pays 52,000 to 61,000 euros per year."


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@pytest.fixture
def run(project):
    add_documents(project, ("leave", LEAVE), ("salaries", SALARIES, ["hr-confidential"]))
    question_set = QuestionSetFactory(project=project, name="staff")
    for number in range(1, 5):
        QuestionFactory(
            question_set=question_set, external_id=f"q{number}", text=f"question {number}"
        )
    cite = {"doc_id": "leave", "start": 0, "end": 46}
    lines = [
        {
            "question_id": "q1",
            "answer": "You get 25 days. Ask HR.",
            "refused": False,
            "sentences": [
                {"start": 0, "end": 16, "citations": [cite, {"doc_id": "leave"}]},
                {"start": 17, "end": 24},
            ],
            "context": [cite],
        },
        {"question_id": "q2", "answer": "", "refused": True},
        {
            "question_id": "q3",
            "answer": "Band C pays 52,000.",
            "refused": False,
            "context": [{"doc_id": "salaries"}],
        },
        {"question_id": "q4", "answer": "No idea.", "refused": True},
    ]
    return import_answers(question_set=question_set, data=jsonl(*lines), run_name="rag").run


def test_planning_spreads_answers_and_keeps_hidden_documents_away(run, member):
    ann, bob = member("labeller"), member("labeller")
    plan = review.plan_answer_review(run=run, labellers=[ann, bob], double_share=0.5)
    # q3 cites a restricted document neither may see: nobody gets it.
    assert plan.unreachable == 1 and plan.answers == 3
    assert not AnswerAssignment.objects.filter(answer__question__external_id="q3").exists()
    # Half of the 4 answers double-labelled (2), minus what was dropped.
    assert plan.assignments == AnswerAssignment.objects.count()
    assert set(AnswerAssignment.objects.values_list("labeller", flat=True)) == {ann.pk, bob.pk}
    # Once Ann may see the restricted document, a top-up plan gives her q3; then nothing is left.
    AccessGroup.objects.get(name="hr-confidential").members.add(ann)
    top_up = review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    assert (top_up.answers, top_up.unreachable) == (1, 0)
    with pytest.raises(ServiceError, match="already assigned"):
        review.plan_answer_review(run=run, labellers=[ann], double_share=0)


def test_claims_default_to_sentences_with_their_citations(run, member):
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    assignment = AnswerAssignment.objects.get(answer__question__external_id="q1")
    claims = list(assignment.claims.values_list("position", "start", "end", "support"))
    assert claims == [(0, 0, 16, ""), (1, 17, 24, "")]
    assert CitationJudgement.objects.filter(claim__assignment=assignment).count() == 2
    assert (
        CitationJudgement.objects.filter(claim__position=1, claim__assignment=assignment).count()
        == 0
    )


def test_every_grade_and_finishing(run, member):
    ann, lead = member("labeller"), member("lead")
    record_reference_answer(
        question=run.question_set.questions.get(external_id="q1"),
        facts=[FactInput("25 days"), FactInput("ask HR", vital=False)],
        user=lead,
    )
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    assignment = AnswerAssignment.objects.get(answer__question__external_id="q1")
    with pytest.raises(
        ServiceError, match="Grade a claim's support and a citation's grade and a reference fact"
    ):
        review.finish_answer_review(assignment=assignment, labeller=ann)
    review.record_claim_support(assignment=assignment, labeller=ann, claim=0, support="full")
    review.record_claim_support(assignment=assignment, labeller=ann, claim=1, support="none")
    for citation in CitationJudgement.objects.filter(claim__assignment=assignment):
        review.record_citation_grade(
            assignment=assignment, labeller=ann, claim=0, passage=citation.passage_id, grade=2
        )
    reference = review.reference_for(assignment)
    for fact in reference.facts.all():
        review.record_fact_presence(
            assignment=assignment, labeller=ann, fact=fact.pk, present="yes"
        )
    assignment.refresh_from_db()
    assert assignment.reference == reference
    # A new reference version leaves this review on the version it graded.
    record_reference_answer(
        question=assignment.answer.question, facts=[FactInput("25 days a year")], user=lead
    )
    assert review.reference_for(assignment) == reference
    done = review.finish_answer_review(assignment=assignment, labeller=ann)
    assert done.done_at is not None
    assert sorted(
        ClaimJudgement.objects.filter(assignment=assignment).values_list("support", flat=True)
    ) == ["full", "none"]
    assert FactJudgement.objects.filter(assignment=assignment).count() == 2
    with pytest.raises(ServiceError, match="citation"):
        review.record_citation_grade(
            assignment=assignment, labeller=ann, claim=0, passage=1, grade=3
        )
    with pytest.raises(ServiceError, match="not yours"):
        review.record_claim_support(assignment=assignment, labeller=lead, claim=0, support="full")


def test_a_refusal_is_marked_wrong_with_one_key(run, member):
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    refused = AnswerAssignment.objects.get(answer__question__external_id="q2")
    review.set_wrongly_refused(assignment=refused, labeller=ann, value=True)
    refused.refresh_from_db()
    assert refused.wrongly_refused
    assert review.finish_answer_review(assignment=refused, labeller=ann).done_at
    answered = AnswerAssignment.objects.get(answer__question__external_id="q1")
    with pytest.raises(ServiceError, match="did not refuse"):
        review.set_wrongly_refused(assignment=answered, labeller=ann, value=True)


def test_a_refusal_without_sentences_has_no_claims_to_grade(run, member, project):
    # Issue 33: "No idea." (refused, no sentences given) was split and graded as a claim. The
    # same holds for a refusal stored before the fix, with a sentence Goldset split itself.
    old = Answer.objects.get(run=run, question__external_id="q2")
    old.text = "I don't know."
    old.sentences_given = False
    old.save(update_fields=["text", "sentences_given"])
    AnswerSentence.objects.create(answer=old, position=0, start=0, end=13)
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    client = login(ann)
    for external_id in ("q2", "q4"):
        assignment = AnswerAssignment.objects.get(answer__question__external_id=external_id)
        assert not assignment.claims.exists()
        assert review.missing_grades(assignment) == []
        page = client.get(reverse("answers:review-answer", args=[project.slug, assignment.pk]))
        text = page.content.decode()
        assert page.status_code == 200 and "The system refused to answer" in text
        assert "<h2>Claims</h2>" not in text and "Everything is graded." in text
        assert "No claim to grade" in text and "0 of 0" not in text
        finish = reverse("answers:finish-answer-review", args=[project.slug, assignment.pk])
        assert client.post(finish).status_code == 302
        assignment.refresh_from_db()
        assert assignment.done_at is not None


def test_the_review_page_saves_each_grade_and_is_blind(run, member, project):
    ann, bob = member("labeller"), member("labeller")
    review.plan_answer_review(run=run, labellers=[ann, bob], double_share=1)
    mine = AnswerAssignment.objects.get(answer__question__external_id="q1", labeller=ann)
    theirs = AnswerAssignment.objects.get(answer__question__external_id="q1", labeller=bob)
    client = login(ann)
    page = client.get(reverse("answers:review-answer", args=[project.slug, mine.pk]))
    text = page.content.decode()
    assert page.status_code == 200 and "You get 25 days." in text and "Employees receive" in text
    url = reverse("answers:grade-answer", args=[project.slug, mine.pk])
    response = client.post(
        url, {"kind": "support", "claim": 0, "value": "partial"}, HTTP_HX_REQUEST="true"
    )
    reply = response.content.decode()
    # The htmx reply is the status bar's message and progress only: the page already shows
    # the choice.
    assert response.status_code == 200 and reply.startswith('<p id="review-status"')
    assert "Still to grade: a claim&#x27;s support, a citation&#x27;s grade." in reply
    assert '<p id="review-progress"' in reply and "<strong>1 of 4</strong> decisions made" in reply
    assert "<form" not in reply and "You get 25 days." not in reply
    assert ClaimJudgement.objects.get(assignment=mine, position=0).support == "partial"
    bad = client.post(url, {"kind": "citation", "claim": 0, "passage": 1, "value": "5"})
    assert bad.status_code == 400 and "A citation is graded 2, 1 or 0." in bad.content.decode()
    # Bob's review of the same answer is not Ann's to see or change, and nothing says it exists.
    assert (
        client.get(reverse("answers:review-answer", args=[project.slug, theirs.pk])).status_code
        == 404
    )
    other = reverse("answers:grade-answer", args=[project.slug, theirs.pk])
    assert client.post(other, {"kind": "support", "claim": 0, "value": "full"}).status_code == 404
    assert ClaimJudgement.objects.get(assignment=theirs, position=0).support == ""
    listing = client.get(
        reverse("answers:list-answer-reviews", args=[project.slug])
    ).content.decode()
    assert "question 1" in listing and "second" not in listing.lower()
    # A grade kept in this browser by another account (sent now, after a new login) is refused
    # as such, so the page keeps it for its own account; the same grade sent twice is saved once.
    kept = {"kind": "support", "claim": 0, "value": "full", "labeller": str(bob.pk)}
    refused = client.post(url, kept, HTTP_HX_REQUEST="true")
    assert refused.status_code == 403 and refused["X-Goldset-Refused"] == "other-account"
    assert ClaimJudgement.objects.get(assignment=mine, position=0).support == "partial"
    for _ in range(2):
        again = client.post(url, {**kept, "labeller": str(ann.pk)}, HTTP_HX_REQUEST="true")
        assert again.status_code == 200
    assert ClaimJudgement.objects.get(assignment=mine, position=0).support == "full"


def test_a_review_whose_passage_became_hidden_is_not_shown(run, member, project):
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    mine = AnswerAssignment.objects.get(answer__question__external_id="q1")
    group = AccessGroup.objects.get(name="hr-confidential")
    group.documents.add(mine.answer.passages.first().version.document)
    client = login(ann)
    assert (
        client.get(reverse("answers:review-answer", args=[project.slug, mine.pk])).status_code
        == 404
    )


def test_a_lead_plans_the_review_from_the_answers_page(run, member, project):
    lead, ann = member("lead"), member("labeller")
    client = login(lead)
    url = reverse("answers:plan-answer-review", args=[project.slug, run.question_set.pk])
    response = client.post(url, {"run": run.pk, "labellers": [ann.pk], "double_percent": "0"})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "3 reviews planned for 3 answers; 1 answers cite documents none of them may see." in page


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"labellers": "ann", "double_percent": "10"}, "Answer run: "),
        ({"double_percent": "10"}, "Labellers: "),
        ({"labellers": "ann", "double_percent": "0.5"}, "Double-labelled share (%): "),
        ({"labellers": "ann", "double_percent": "150"}, "Double-labelled share (%): "),
        ({"labellers": "ann"}, "Double-labelled share (%): "),
    ],
)
def test_the_answer_review_plan_follows_the_passage_plans_convention(
    run, member, project, data, message
):
    # Issue 33: labellers ticked and the share in percent, as the passage plan; a bad value is
    # refused with the field named, nothing planned.
    lead, ann = member("lead"), member("labeller")
    client = login(lead)
    page = client.get(
        reverse("answers:list-answer-runs", args=[project.slug, run.question_set.pk])
    ).content.decode()
    assert 'type="checkbox" name="labellers"' in page and "Double-labelled share (%)" in page
    url = reverse("answers:plan-answer-review", args=[project.slug, run.question_set.pk])
    data = {"run": run.pk, **data} if message != "Answer run: " else dict(data)
    if data.get("labellers") == "ann":
        data["labellers"] = [ann.pk]
    response = client.post(url, data, follow=True)
    assert response.status_code == 200 and message in response.content.decode()
    assert not AnswerAssignment.objects.exists()


def test_a_full_double_share_in_percent_gives_every_answer_two_reviews(run, member, project):
    lead, ann, bob = member("lead"), member("labeller"), member("labeller")
    url = reverse("answers:plan-answer-review", args=[project.slug, run.question_set.pk])
    data = {"run": run.pk, "labellers": [ann.pk, bob.pk], "double_percent": "100"}
    assert login(lead).post(url, data).status_code == 302
    # q3 cites a document neither may see; the three others get two reviews each.
    assert AnswerAssignment.objects.count() == 6


def test_a_labeller_splits_a_claim_and_joins_it_again(run, member, project):
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    mine = AnswerAssignment.objects.get(answer__question__external_id="q1")
    review.record_claim_support(assignment=mine, labeller=ann, claim=0, support="full")
    client = login(ann)
    page = client.get(reverse("answers:review-answer", args=[project.slug, mine.pk]))
    assert "… get | 25 …" in page.content.decode()
    # "You get 25 days." split after "get" (offset 7): two claims, both to grade again, each
    # with the sentence's two citations; the next claim moves down.
    response = client.post(
        reverse("answers:split-answer-claim", args=[project.slug, mine.pk]),
        {"claim": 0, "at": 7},
    )
    assert response.status_code == 302
    claims = list(
        mine.claims.order_by("position").values_list("position", "start", "end", "support")
    )
    assert claims == [(0, 0, 7, ""), (1, 8, 16, ""), (2, 17, 24, "")]
    assert CitationJudgement.objects.filter(claim__assignment=mine, claim__position=1).count() == 2
    with pytest.raises(ServiceError, match="between two of its words"):
        review.split_claim(assignment=mine, labeller=ann, claim=0, at=1)
    # Claims of two sentences never join; the split ones do.
    with pytest.raises(ServiceError, match="one sentence"):
        review.join_claims(assignment=mine, labeller=ann, claim=1)
    response = client.post(
        reverse("answers:split-answer-claim", args=[project.slug, mine.pk]),
        {"claim": 0, "join": "1"},
    )
    assert response.status_code == 302
    claims = list(mine.claims.order_by("position").values_list("position", "start", "end"))
    assert claims == [(0, 0, 16), (1, 17, 24)]
    bad = client.post(
        reverse("answers:split-answer-claim", args=[project.slug, mine.pk]), {"claim": "x"}
    )
    assert bad.status_code == 400 and "Which claim?" in bad.content.decode()


def test_evidence_for_a_claim_is_a_span_of_a_context_passage(run, member, project):
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    mine = AnswerAssignment.objects.get(answer__question__external_id="q1")
    context = mine.answer.passages.get(role="context")  # leave [0, 46)
    version = context.version_id
    client = login(ann)
    url = reverse("answers:mark-claim-evidence", args=[project.slug, mine.pk])
    quote = "25 days of paid annual leave"
    start = context.version.text.index(quote)
    response = client.post(
        url,
        {"claim": 0, "version": version, "start": start, "end": start + len(quote), "quote": quote},
    )
    assert response.status_code == 302 and response["Location"].endswith("#claim-0")
    (evidence,) = ClaimEvidence.objects.filter(claim__assignment=mine)
    assert (evidence.start, evidence.quote) == (start, quote)
    page = client.get(reverse("answers:review-answer", args=[project.slug, mine.pk]))
    assert f"<q>{quote}</q>" in page.content.decode()
    # Outside the passage sent ([0, 46)), or a quote that is not the text: refused, not stored.
    outside = client.post(
        url, {"claim": 0, "version": version, "start": 47, "end": 60, "quote": "x"}
    )
    assert outside.status_code == 400
    assert "inside a passage the system was given" in outside.content.decode()
    wrong = client.post(
        url, {"claim": 0, "version": version, "start": 0, "end": 5, "quote": "Hello"}
    )
    assert wrong.status_code == 400 and "does not match" in wrong.content.decode()
    assert ClaimEvidence.objects.count() == 1
    client.post(url, {"claim": 0, "remove": evidence.pk})
    assert not ClaimEvidence.objects.exists()


def test_the_review_page_has_the_grading_pages_panel_bar_and_keys(run, member, project):
    """The grading page's pieces (issue 33 item 10): the project's guideline beside the work,
    rendered safely; the status bar with its progress and save state; a key for every choice,
    listed under ?."""
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    mine = AnswerAssignment.objects.get(answer__question__external_id="q1")
    client = login(ann)
    url = reverse("answers:review-answer", args=[project.slug, mine.pk])
    text = client.get(url).content.decode()
    assert 'class="guideline-panel"' in text and "No guideline yet." in text
    save_guideline(
        project=project,
        text="Claims need **support**. <script>alert(1)</script>",
        user=member("lead"),
    )
    text = client.get(url).content.decode()
    assert 'Guideline <span class="muted">v1</span>' in text
    assert "<strong>support</strong>" in text and "<script>alert" not in text
    assert '<p id="save-state" class="save-state" data-state="saved"' in text
    # q1: two claims and two citations to decide, no reference facts yet.
    assert "<strong>0 of 4</strong> decisions made" in text
    to_go = AnswerAssignment.objects.filter(labeller=ann).count()
    assert f"0 done, {to_go} to go" in text and to_go > 1 and 'id="keys-help"' in text
    radios = re.findall(r'<input type="radio"[^>]*>', text)
    assert len(radios) == 12 and all("data-key=" in radio for radio in radios)
    review.record_claim_support(assignment=mine, labeller=ann, claim=0, support="full")
    text = client.get(url).content.decode()
    assert "<strong>1 of 4</strong> decisions made" in text


def test_a_second_reviewer_sees_nothing_of_the_first(run, member, project):
    """Blind as grading: the page of the second review of an answer shows none of the first
    one's choices, groups, evidence, progress or finished state."""
    ann, bob = member("labeller"), member("labeller")
    review.plan_answer_review(run=run, labellers=[ann, bob], double_share=1)
    mine = AnswerAssignment.objects.get(answer__question__external_id="q1", labeller=ann)
    theirs = AnswerAssignment.objects.get(answer__question__external_id="q1", labeller=bob)
    for claim, support in ((0, "partial"), (1, "none")):
        review.record_claim_support(assignment=mine, labeller=ann, claim=claim, support=support)
    for citation in CitationJudgement.objects.filter(claim__assignment=mine):
        review.record_citation_grade(
            assignment=mine, labeller=ann, claim=0, passage=citation.passage_id, grade=1
        )
    review.add_supporting_set(assignment=mine, labeller=ann, claim=0, citations=[0, 1])
    context = mine.answer.passages.get(role="context")
    review.add_claim_evidence(
        assignment=mine,
        labeller=ann,
        claim=0,
        version=context.version_id,
        start=0,
        end=9,
        quote="Employees",
    )
    review.finish_answer_review(assignment=mine, labeller=ann)
    text = login(bob).get(reverse("answers:review-answer", args=[project.slug, theirs.pk]))
    text = text.content.decode()
    assert "<strong>0 of 4</strong> decisions made" in text
    assert " checked" not in text and "Together support it" not in text
    assert "<q>Employees</q>" not in text and 'class="badge ok">done' not in text
    assert ann.username not in text
    done = AnswerAssignment.objects.filter(labeller=bob, done_at__isnull=False).count()
    assert f"{done} done," in text and done == 0


def test_writes_come_back_to_the_row_they_were_made_on(run, member, project):
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    mine = AnswerAssignment.objects.get(answer__question__external_id="q1")
    for citation in CitationJudgement.objects.filter(claim__assignment=mine):
        review.record_citation_grade(
            assignment=mine, labeller=ann, claim=0, passage=citation.passage_id, grade=1
        )
    client = login(ann)
    page = reverse("answers:review-answer", args=[project.slug, mine.pk])
    supporting = client.post(
        reverse("answers:mark-supporting-citations", args=[project.slug, mine.pk]),
        {"claim": 0, "citation": [0, 1]},
    )
    assert supporting.status_code == 302 and supporting["Location"] == f"{page}#supporting-0"
    split = client.post(
        reverse("answers:split-answer-claim", args=[project.slug, mine.pk]), {"claim": 1, "at": 20}
    )
    assert split.status_code == 302 and split["Location"] == f"{page}#claim-1"
    # Removing evidence from a form that names no claim: back to the page's top, not a 500.
    context = mine.answer.passages.get(role="context")
    for claim in ({}, {"claim": "x"}):
        added = review.add_claim_evidence(
            assignment=mine,
            labeller=ann,
            claim=0,
            version=context.version_id,
            start=0,
            end=9,
            quote="Employees",
        )
        response = client.post(
            reverse("answers:mark-claim-evidence", args=[project.slug, mine.pk]),
            {"remove": added.pk, **claim},
        )
        assert response.status_code == 302 and response["Location"] == page
    assert not ClaimEvidence.objects.exists()


def test_finishing_opens_the_next_review_and_says_so_in_the_status_bar(run, member, project):
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    refused = AnswerAssignment.objects.get(answer__question__external_id="q2")
    client = login(ann)
    response = client.post(
        reverse("answers:finish-answer-review", args=[project.slug, refused.pk]), follow=True
    )
    following = AnswerAssignment.objects.filter(labeller=ann, done_at__isnull=True).order_by("pk")
    assert response.redirect_chain[-1][0] == reverse(
        "answers:review-answer", args=[project.slug, following.first().pk]
    )
    text = response.content.decode()
    assert re.search(r'<p id="review-status"[^>]*>Answer review saved\. Still to grade', text)
    assert '<ul class="messages"' not in text  # said once, in the bar


def test_context_passages_carry_their_offsets_in_the_document_text(run, member, project):
    """A context passage that starts inside its document is shown (rendered as the grading
    page shows text) with each segment at its offset in the version's text, so a selection there
    is saved where it is, not counted from the passage's start."""
    ann = member("labeller")
    review.plan_answer_review(run=run, labellers=[ann], double_share=0)
    mine = AnswerAssignment.objects.get(answer__question__external_id="q1")
    context = mine.answer.passages.get(role="context")
    context.start = LEAVE.index("25 days")
    context.save(update_fields=["start"])
    body = login(ann).get(reverse("answers:review-answer", args=[project.slug, mine.pk]))
    section = body.content.decode().split('id="review-context"')[1].split("</section>")[0]
    segments = re.findall(r'<span class="(seg[^"]*)" data-start="(\d+)">(.*?)</span>', section)
    assert segments and int(segments[0][1]) == context.start
    for _classes, start, text in segments:
        assert LEAVE[int(start) : int(start) + len(unescape(text))] == unescape(text)
    assert "".join(unescape(t) for _c, _s, t in segments) == LEAVE[context.start : context.end]
