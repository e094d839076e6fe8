"""Which partial citations support a claim together: recorded in the review, exported as
goldeval reads it, and scored per ALCE's citation precision."""

import json

import pytest
from django.urls import reverse

from answers.models import AnswerAssignment, CitationJudgement, ClaimJudgement
from answers.services import review
from answers.services.gold import answers_gold_records
from answers.services.runs import import_answers
from goldeval.formats.answer_gold import MAX_SUPPORTING_SETS, read_answer_gold
from goldeval.scoring.answers import citation_scores
from goldset.errors import ServiceError
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents, login

TEXTS = {
    "alpha": "Leave is counted in working days for every employee.",
    "beta": "Every employee receives twenty five days of leave.",
    "gamma": "Unused leave days carry over to the next year.",
}


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@pytest.fixture
def run(project):
    add_documents(project, *TEXTS.items())
    question_set = QuestionSetFactory(project=project, name="staff")
    QuestionFactory(question_set=question_set, external_id="q1", text="how much leave?")
    cites = [{"doc_id": doc_id} for doc_id in TEXTS]
    line = {
        "question_id": "q1",
        "answer": "You get 25 working days.",
        "refused": False,
        "sentences": [{"start": 0, "end": 24, "citations": cites}],
        "context": cites,
    }
    return import_answers(question_set=question_set, data=jsonl(line), run_name="rag").run


def reviewed(run, labeller, grades=(1, 1, 1)) -> AnswerAssignment:
    review.plan_answer_review(run=run, labellers=[labeller], double_share=0)
    assignment = AnswerAssignment.objects.get(labeller=labeller)
    review.record_claim_support(assignment=assignment, labeller=labeller, claim=0, support="full")
    citations = CitationJudgement.objects.filter(claim__assignment=assignment).order_by(
        "passage_id"
    )
    for citation, grade in zip(citations, grades, strict=True):
        review.record_citation_grade(
            assignment=assignment,
            labeller=labeller,
            claim=0,
            passage=citation.passage_id,
            grade=grade,
        )
    return assignment


def exported(run):
    data = "".join(json.dumps(r) + "\n" for r in answers_gold_records(run.question_set))
    gold = read_answer_gold(data)
    (answer,) = [r for r in answers_gold_records(run.question_set) if r["kind"] == "answer"]
    return answer, gold.grades_for("q1", answer["answer_key"])


def test_groups_are_recorded_checked_and_removed(run, member):
    ann, lead = member("labeller"), member("lead")
    assignment = reviewed(run, ann)
    review.add_supporting_set(assignment=assignment, labeller=ann, claim=0, citations=[1, 0])
    review.add_supporting_set(assignment=assignment, labeller=ann, claim=0, citations=[2, 0])
    assert ClaimJudgement.objects.get(assignment=assignment).supporting_sets == [[0, 1], [0, 2]]
    for citations, message in [
        ([0], "two or more"),
        ([0, 0], "choose citations of this claim"),
        ([0, 3], "choose citations of this claim"),
        ([-1, 0], "choose citations of this claim"),
        ([0, 1], "already recorded"),
    ]:
        with pytest.raises(ServiceError, match=f"Supporting citations: .*{message}"):
            review.add_supporting_set(
                assignment=assignment, labeller=ann, claim=0, citations=citations
            )
    with pytest.raises(ServiceError, match="no such claim"):
        review.add_supporting_set(assignment=assignment, labeller=ann, claim=5, citations=[0, 1])
    with pytest.raises(ServiceError, match="not yours"):
        review.add_supporting_set(assignment=assignment, labeller=lead, claim=0, citations=[1, 2])
    review.remove_supporting_set(assignment=assignment, labeller=ann, claim=0, group=0)
    assert ClaimJudgement.objects.get(assignment=assignment).supporting_sets == [[0, 2]]
    with pytest.raises(ServiceError, match="already gone"):
        review.remove_supporting_set(assignment=assignment, labeller=ann, claim=0, group=1)
    # A citation regraded "does not support" leaves every group it was part of.
    passage = CitationJudgement.objects.filter(claim__assignment=assignment).order_by("passage_id")[
        2
    ]
    review.record_citation_grade(
        assignment=assignment, labeller=ann, claim=0, passage=passage.passage_id, grade=0
    )
    assert ClaimJudgement.objects.get(assignment=assignment).supporting_sets == []


def test_only_partial_citations_form_a_group_and_the_cap_holds(run, member):
    ann = member("labeller")
    assignment = reviewed(run, ann, grades=(1, 2, 1))
    with pytest.raises(ServiceError, match="only citations graded partly"):
        review.add_supporting_set(assignment=assignment, labeller=ann, claim=0, citations=[0, 1])
    claim = ClaimJudgement.objects.get(assignment=assignment)
    claim.supporting_sets = [[0, 1]] * MAX_SUPPORTING_SETS
    claim.save()
    with pytest.raises(ServiceError, match=f"at most {MAX_SUPPORTING_SETS}"):
        review.add_supporting_set(assignment=assignment, labeller=ann, claim=0, citations=[2, 0])


def test_the_control_shows_only_with_two_partials_and_only_to_the_reviewer(run, member, project):
    ann, bob, lead = member("labeller"), member("labeller"), member("lead")
    assignment = reviewed(run, ann, grades=(1, 2, 0))
    page_url = reverse("answers:review-answer", args=[project.slug, assignment.pk])
    url = reverse("answers:mark-supporting-citations", args=[project.slug, assignment.pk])
    client = login(ann)
    question = "Which partly-supporting citations support this claim together?"
    assert question not in client.get(page_url).content.decode()
    passages = CitationJudgement.objects.filter(claim__assignment=assignment).order_by("passage_id")
    for citation in passages:
        review.record_citation_grade(
            assignment=assignment, labeller=ann, claim=0, passage=citation.passage_id, grade=1
        )
    page = client.get(page_url).content.decode()
    assert question in page and "each partial citation counts as needed" in page
    response = client.post(url, {"claim": 0, "citation": ["0", "2"]})
    assert response.status_code == 302
    page = client.get(page_url).content.decode()
    assert "Together support it: <code>alpha</code> + <code>gamma</code>" in page
    assert ClaimJudgement.objects.get(assignment=assignment).supporting_sets == [[0, 2]]
    for data, message in [
        ({"claim": 0, "citation": ["1"]}, "tick two or more citations"),
        ({"claim": 0, "citation": ["x", "1"]}, "Supporting citations: choose citations"),
        ({"claim": "", "citation": ["0", "1"]}, "Which claim?"),
        ({"claim": 0, "remove": "9"}, "already gone"),
        ({"claim": 0, "remove": "x"}, "already gone"),
    ]:
        bad = client.post(url, data)
        assert bad.status_code == 400 and message in bad.content.decode()
    # Nobody else may see or change the review's groups: another labeller, the lead.
    for other in (bob, lead):
        assert login(other).post(url, {"claim": 0, "citation": ["0", "1"]}).status_code == 404
        assert login(other).get(page_url).status_code == 404
    assert client.post(url, {"claim": 0, "remove": "0"}).status_code == 302
    assert ClaimJudgement.objects.get(assignment=assignment).supporting_sets == []
    # Only POST, and only logged in.
    assert client.get(url).status_code == 405


def test_three_partials_where_any_two_would_do_score_zero_of_three(run, member):
    """ALCE: each citation is irrelevant when it does not support the claim alone and the
    other two still do without it, so precision is 0/3 while recall stays 1."""
    ann = member("labeller")
    assignment = reviewed(run, ann)
    for group in ([0, 1], [0, 2], [1, 2]):
        review.add_supporting_set(assignment=assignment, labeller=ann, claim=0, citations=group)
    review.finish_answer_review(assignment=assignment, labeller=ann)
    answer, grades = exported(run)
    assert answer["claims"][0]["supporting_sets"] == [[0, 1], [0, 2], [1, 2]]
    assert [set(group) for group in grades.claims[0].supporting_sets] == [
        {0, 1},
        {0, 2},
        {1, 2},
    ]
    assert citation_scores(grades.claims) == (0.0, 1.0)


def test_one_recorded_pair_makes_the_third_citation_irrelevant(run, member):
    ann = member("labeller")
    assignment = reviewed(run, ann)
    review.add_supporting_set(assignment=assignment, labeller=ann, claim=0, citations=[0, 1])
    review.finish_answer_review(assignment=assignment, labeller=ann)
    answer, grades = exported(run)
    precision, recall = citation_scores(grades.claims)
    assert (round(precision, 4), recall) == (round(2 / 3, 4), 1.0)


def test_a_claim_without_groups_exports_no_supporting_sets(run, member):
    ann = member("labeller")
    assignment = reviewed(run, ann, grades=(2, 1, 0))
    review.finish_answer_review(assignment=assignment, labeller=ann)
    answer, grades = exported(run)
    assert "supporting_sets" not in answer["claims"][0]
    assert grades.claims[0].supporting_sets == ()


def test_splitting_a_claim_clears_its_groups(run, member):
    ann = member("labeller")
    assignment = reviewed(run, ann)
    review.add_supporting_set(assignment=assignment, labeller=ann, claim=0, citations=[0, 1])
    review.split_claim(assignment=assignment, labeller=ann, claim=0, at=7)
    assert [c.supporting_sets for c in ClaimJudgement.objects.filter(assignment=assignment)] == [
        [],
        [],
    ]


def test_reviews_differing_only_in_groups_go_to_the_lead_who_decides(run, member, project):
    ann, bob, lead = member("labeller"), member("labeller"), member("lead")
    review.plan_answer_review(run=run, labellers=[ann, bob], double_share=1)
    for labeller, groups in ((ann, [[0, 1], [0, 2], [1, 2]]), (bob, [])):
        assignment = AnswerAssignment.objects.get(labeller=labeller)
        review.record_claim_support(
            assignment=assignment, labeller=labeller, claim=0, support="full"
        )
        for citation in CitationJudgement.objects.filter(claim__assignment=assignment):
            review.record_citation_grade(
                assignment=assignment,
                labeller=labeller,
                claim=0,
                passage=citation.passage_id,
                grade=1,
            )
        for group in groups:
            review.add_supporting_set(
                assignment=assignment, labeller=labeller, claim=0, citations=group
            )
        review.finish_answer_review(assignment=assignment, labeller=labeller)
    # Same grades, different groups: not agreed, so not covered until the lead decides.
    assert [r for r in answers_gold_records(run.question_set) if r["kind"] == "answer"] == []
    url = reverse("answers:list-answer-adjudication", args=[project.slug, run.question_set.pk])
    page = login(lead).get(url).content.decode()
    assert "Together support it: <code>alpha</code> + <code>beta</code>" in page
    response = login(lead).post(
        reverse("answers:resolve-answer", args=[project.slug, run.question_set.pk]),
        {"answer": run.answers.get().pk, "chosen": AnswerAssignment.objects.get(labeller=ann).pk},
    )
    assert response.status_code == 302
    answer, grades = exported(run)
    assert answer["claims"][0]["supporting_sets"] == [[0, 1], [0, 2], [1, 2]]
    assert citation_scores(grades.claims) == (0.0, 1.0)


def test_the_bundle_scores_an_app_review_per_alce_and_the_answers_page_says_so(project, member):
    from corpus.models import Job
    from evaluation.services import gold_sets
    from evaluation.tasks import answer_report
    from goldeval.formats.answer_gold import ANSWERS_GOLD_FILE
    from tests.factories import labelled_question_set

    ann, bob, lead, admin = member("labeller"), member("labeller"), member("lead"), member("admin")
    question_set = labelled_question_set(project, ann=ann, bob=bob, lead=lead)
    cites = [
        {"doc_id": "leave", "start": 0, "end": 40},
        {"doc_id": "leave", "start": 40, "end": 80},
        {"doc_id": "vpn", "start": 0, "end": 50},
    ]
    line = {
        "question_id": "q1",
        "answer": "Five days carry over.",
        "refused": False,
        "sentences": [{"start": 0, "end": 21, "citations": cites}],
        "context": cites,
    }
    run = import_answers(question_set=question_set, data=jsonl(line), run_name="rag").run
    assignment = reviewed(run, ann)
    for group in ([0, 1], [0, 2], [1, 2]):
        review.add_supporting_set(assignment=assignment, labeller=ann, claim=0, citations=group)
    review.finish_answer_review(assignment=assignment, labeller=ann)
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=admin)
    gold = read_answer_gold(gold_sets.bundle_files(gold_set)[ANSWERS_GOLD_FILE])
    (grades,) = gold.grades.values()
    assert citation_scores(grades.claims) == (0.0, 1.0)
    client = login(lead)
    assert client.post(reverse("evaluation:compute-answers", args=[project.slug, gold_set.pk]))
    answer_report(Job.objects.get(kind="answer_report").pk)  # the worker's part, run here
    page = client.get(reverse("evaluation:show-answers", args=[project.slug, gold_set.pk]))
    assert page.status_code == 200
    assert "Citation precision of answers reviewed here follows ALCE exactly" in (
        page.content.decode()
    )
