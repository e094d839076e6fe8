"""Answer adjudication per item in real Chromium (issue 36 item 6): two reviews of an answer
differ on a claim's support and on a fact; the lead decides both with keys only, and the
answer, left out of the gold while they were undecided, scores what the lead decided."""

import json
import re

import pytest
from playwright.sync_api import expect

from answers.models import AnswerAssignment, AnswerItemDecision, CitationJudgement
from answers.services import review
from answers.services.gold import answers_gold_records
from answers.services.runs import FactInput, import_answers, record_reference_answer
from goldeval.formats.answer_gold import read_answer_gold
from goldeval.scoring.answers import correctness, faithfulness
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    QuestionFactory,
    QuestionSetFactory,
    UserFactory,
    add_documents,
)

pytestmark = pytest.mark.e2e


def reviewed(assignment, labeller, *, first_claim: str, first_fact: str) -> None:
    for claim, support in zip(
        assignment.claims.order_by("position"), (first_claim, "full"), strict=True
    ):
        review.record_claim_support(
            assignment=assignment, labeller=labeller, claim=claim.position, support=support
        )
    for citation in CitationJudgement.objects.filter(claim__assignment=assignment):
        review.record_citation_grade(
            assignment=assignment,
            labeller=labeller,
            claim=citation.claim.position,
            passage=citation.passage_id,
            grade=2,
        )
    facts = review.reference_for(assignment).facts.order_by("position")
    for fact, present in zip(facts, (first_fact, "no"), strict=True):
        review.record_fact_presence(
            assignment=assignment, labeller=labeller, fact=fact.pk, present=present
        )
    review.finish_answer_review(assignment=assignment, labeller=labeller)


def make_world():
    project = ProjectFactory(slug="acme", name="Acme gold")
    lina, omar, lead = (UserFactory(username=name) for name in ("lina", "omar", "lead"))
    for user in (lina, omar):
        MembershipFactory(project=project, user=user, role="labeller")
    MembershipFactory(project=project, user=lead, role="lead")
    add_documents(project, ("leave", "Employees get 25 days of paid leave each year."))
    question_set = QuestionSetFactory(project=project, name="staff")
    question = QuestionFactory(question_set=question_set, external_id="q1", text="how much leave?")
    answer = {
        "question_id": "q1",
        "answer": "You get 25 days. Ask <b>HR</b>.",
        "refused": False,
        "sentences": [
            {"start": 0, "end": 16, "citations": [{"doc_id": "leave"}]},
            {"start": 17, "end": 31},
        ],
        "context": [{"doc_id": "leave"}],
    }
    run = import_answers(question_set=question_set, data=json.dumps(answer), run_name="rag").run
    record_reference_answer(
        question=question, facts=[FactInput("25 days"), FactInput("per year", False)], user=lead
    )
    review.plan_answer_review(run=run, labellers=[lina, omar], double_share=1)
    reviewed(
        AnswerAssignment.objects.get(labeller=lina), lina, first_claim="full", first_fact="yes"
    )
    reviewed(AnswerAssignment.objects.get(labeller=omar), omar, first_claim="none", first_fact="no")
    return question_set, run.answers.get()


def scores(question_set, answer):
    gold = read_answer_gold(
        "".join(json.dumps(r) + "\n" for r in answers_gold_records(question_set))
    )
    grades = gold.grades_for("q1", answer.key)
    if grades is None:
        return None
    (facts,) = gold.references.values()
    return faithfulness(grades.claims), correctness(facts, grades.facts).correctness


def test_a_lead_decides_two_items_with_keys_and_the_scores_follow(
    transactional_db, live_server, page
):
    question_set, answer = make_world()
    assert scores(question_set, answer) is None  # two items undecided: not in the gold
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    log_in(page, live_server, "lead", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/sets/{question_set.pk}/answers/adjudication/")
    expect(page.locator('#answer-agreement tr[data-kind="claim support"]')).to_contain_text("2")
    expect(page.locator("#undecided-count")).to_contain_text("2 items to decide.")
    rows = page.locator("#answer-items [data-row]")
    expect(rows).to_have_count(2)
    # The answer's text is shown as text, never as markup; the first row is the current one.
    expect(page.locator(".answer-disagreement blockquote")).to_have_text(
        "You get 25 days. Ask <b>HR</b>."
    )
    expect(rows.nth(0)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(rows.nth(0)).to_contain_text("claim support")

    # The claim: partly supported (neither reviewer's call); the page goes on to the fact.
    page.keyboard.press("p")
    page.wait_for_url(re.compile(r"#item-\d+-fact-\d+$"))
    expect(page.locator("#undecided-count")).to_contain_text("1 item to decide.")
    expect(rows.nth(1)).to_have_class(re.compile(r"\bcurrent\b"))
    # The fact: partly present.
    page.keyboard.press("p")
    expect(page.locator("#undecided-count")).to_contain_text("Every item is decided.")
    expect(page.locator("#answer-items .badge.ok").first).to_be_visible()

    decisions = dict(AnswerItemDecision.objects.filter(answer=answer).values_list("item", "value"))
    fact = review.reference_for(answer.assignments.first()).facts.get(position=0)
    assert decisions == {"support:0-16": "partial", f"fact:{fact.pk}": "partly"}
    # Claims partial + full (agreed): faithfulness 1/2; facts partly (0.5) + no (agreed): 0.25.
    assert scores(question_set, answer) == (0.5, 0.25)

    # Changed with a key again, the scores follow.
    page.keyboard.press("k")
    page.keyboard.press("f")
    page.wait_for_url(re.compile(rf"#item-{answer.pk}-support-0-16$"))
    expect(page.locator(f"#item-{answer.pk}-support-0-16-full")).to_be_checked()
    assert scores(question_set, answer) == (1.0, 0.25)
    assert problems == []
