"""Answers round trip: import a run, review it as two labellers, finalise, and the Answers page
equals ``python -m goldeval answers`` on the exported bundle and the run's file."""

import json

import pytest
from django.urls import reverse

from answers.models import AnswerAssignment, CitationJudgement
from answers.services import review
from answers.services.adjudication import answer_agreement, quoted_review
from answers.services.runs import FactInput, import_answers, record_reference_answer
from corpus.models import AccessGroup, Document, Job
from evaluation.models import EvaluationReport
from evaluation.services import gold_sets
from evaluation.services.answer_scores import answers_page
from evaluation.tasks import answer_report
from goldeval.cli import main
from goldeval.formats.answer_gold import ANSWERS_GOLD_FILE, read_answer_gold
from goldeval.scoring.answers_report import LABELS, SCORE_GROUPS
from tests.factories import POLICY_TEXT, labelled_question_set, login


@pytest.fixture
def people(project, member):
    return {
        "ann": member("labeller"),
        "bob": member("labeller"),
        "lead": member("lead"),
        "admin": member("admin"),
    }


def answers_file() -> bytes:
    lines = [
        {
            # Cites the leave document where q1's gold span lies, and vpn, which is wrong.
            "question_id": "q1",
            "answer": "Five days carry over. Use the VPN.",
            "refused": False,
            "sentences": [
                {"start": 0, "end": 21, "citations": [{"doc_id": "leave", "start": 0, "end": 90}]},
                {"start": 22, "end": 34, "citations": [{"doc_id": "vpn"}]},
            ],
            "context": [{"doc_id": "vpn"}, {"doc_id": "leave", "start": 0, "end": 180}],
        },
        {"question_id": "q2", "answer": "Install the client.", "refused": False},
        {"question_id": "q3", "answer": "", "refused": True},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def grade_all(assignment, labeller, *, support="full"):
    for claim in assignment.claims.all():
        review.record_claim_support(
            assignment=assignment, labeller=labeller, claim=claim.position, support=support
        )
        for citation in CitationJudgement.objects.filter(claim=claim):
            grade = 2 if citation.passage.version.document.doc_id == "leave" else 0
            review.record_citation_grade(
                assignment=assignment,
                labeller=labeller,
                claim=claim.position,
                passage=citation.passage_id,
                grade=grade,
            )
    reference = review.reference_for(assignment)
    if reference is not None and not assignment.answer.refused:
        for fact in reference.facts.all():
            present = "yes" if fact.vital else "no"
            review.record_fact_presence(
                assignment=assignment, labeller=labeller, fact=fact.pk, present=present
            )
    review.finish_answer_review(assignment=assignment, labeller=labeller)


@pytest.fixture
def finalised(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    run = import_answers(question_set=question_set, data=answers_file(), run_name="rag").run
    q1 = question_set.questions.get(external_id="q1")
    record_reference_answer(
        question=q1,
        facts=[FactInput("five days carry over"), FactInput("form HR-F-112", vital=False)],
        user=people["lead"],
    )
    review.plan_answer_review(run=run, labellers=[people["ann"], people["bob"]], double_share=1)
    for assignment in AnswerAssignment.objects.all():
        # q2's two reviews disagree on support: not covered until adjudicated.
        disagree = assignment.answer.question.external_id == "q2" and assignment.slot == 2
        grade_all(assignment, assignment.labeller, support="none" if disagree else "full")
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    return gold_set, run


def test_the_bundle_carries_reference_facts_and_the_agreed_grades(finalised):
    gold_set, run = finalised
    files = gold_sets.bundle_files(gold_set)
    assert ANSWERS_GOLD_FILE in gold_set.manifest["files"]
    answer_gold = read_answer_gold(files[ANSWERS_GOLD_FILE])
    assert [fact.text for fact in answer_gold.references["q1"]] == [
        "five days carry over",
        "form HR-F-112",
    ]
    # q1 agreed, q3 (a refusal) agreed, q2 disagreed and is left out.
    assert sorted(question for question, _ in answer_gold.grades) == ["q1", "q3"]
    q1 = next(g for (q, _), g in answer_gold.grades.items() if q == "q1")
    assert [c.support for c in q1.claims] == ["full", "full"]
    assert [[c.grade for c in claim.citations] for claim in q1.claims] == [[2], [0]]


def test_the_answers_page_shows_the_scores_and_equals_the_cli(
    finalised, project, people, tmp_path, capsys
):
    gold_set, run = finalised
    client = login(people["lead"])
    url = reverse("evaluation:show-answers", args=[project.slug, gold_set.pk])
    # The figures are a job's: the page offers to compute them, and shows them once done.
    assert "Compute the answer scores" in client.get(url).content.decode()
    compute = reverse("evaluation:compute-answers", args=[project.slug, gold_set.pk])
    assert client.post(compute).status_code == 302
    job = Job.objects.get(kind="answer_report")
    page = client.get(url).content.decode()
    assert "The answer scores are being computed" in page
    answer_report(job.pk)  # the worker's part, run here (its task, by the name on the row)
    job.refresh_from_db()
    assert job.state == "succeeded", job.message
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 200
    assert "faithfulness (Ragas: claims fully supported by the context)" in page
    assert "faithfulness, graded (a partly supported claim counts ½)" in page
    assert "correctness, Strict Vital (present vital facts only)" in page
    assert "counts as not refused" in page
    assert 'class="claim claim-full"' in page and "on-gold" in page
    assert "Graded by " in page and people["ann"].username in page
    assert "Not covered by human grades." in page  # q2
    assert "form HR-F-112" in page  # a missing okay fact of q1

    # The CLI on the exported bundle and the run's file gives the page's report exactly.
    bundle = tmp_path / "bundle"
    gold_sets.write_bundle(gold_set=gold_set, folder=bundle)
    download = client.get(
        reverse("evaluation:download-answer-run", args=[project.slug, gold_set.pk, run.pk])
    )
    assert download["Content-Disposition"].startswith("attachment;")
    run_file = tmp_path / "rag.jsonl"
    run_file.write_bytes(download.content)
    code = main(["answers", "--gold", str(bundle), "--answers", str(run_file), "--per-question"])
    out = capsys.readouterr()
    assert code == 0, out.err
    cli = json.loads(out.out)
    shown = EvaluationReport.objects.get(gold_set=gold_set).content["report"]
    assert cli == shown
    assert cli == json.loads(json.dumps(answers_page(gold_set=gold_set).report))
    scores = cli["runs"]["rag"]["scores"]
    # q1 only is covered: 2 claims full; citations: leave (2) precise, vpn (0) not.
    assert scores["faithfulness"] == scores["faithfulness_graded"] == 1.0
    assert scores["citation_precision"] == 0.5  # q1: 1 of 2; q2 is not covered, left out
    assert scores["correctness"] == 0.5  # the vital fact present, the okay one missing
    assert cli["runs"]["rag"]["coverage"] == 0.5
    assert "coverage: rag: 1 of 2 answers to grade have human grades" in out.err


def test_the_answers_page_is_for_leads_and_refused_when_something_is_hidden(
    finalised, project, people
):
    gold_set, _ = finalised
    url = reverse("evaluation:show-answers", args=[project.slug, gold_set.pk])
    assert login(people["ann"]).get(url).status_code == 403
    group = AccessGroup.objects.create(project=project, name="legal")
    Document.objects.get(project=project, doc_id="vpn").access_groups.add(group)
    response = login(people["lead"]).get(url)
    assert response.status_code == 403
    page = response.content.decode()
    assert "restricted to access groups you are not in" in page and "Use the VPN" not in page
    assert POLICY_TEXT[:40] not in page


def test_a_lead_decides_a_disagreement_and_the_next_gold_set_covers_it(finalised, project, people):
    gold_set, run = finalised
    question_set = gold_set.question_set
    lead = login(people["lead"])
    url = reverse("answers:list-answer-adjudication", args=[project.slug, question_set.pk])
    page = lead.get(url).content.decode()
    # Support was graded alike on q1 and q3's answers has no claims; q2's disagrees.
    assert "claim support" in page and "to decide" in page
    assert people["ann"].username in page and people["bob"].username in page
    # Issue 33: each decision quotes the claim's words and the grade's words, never offsets.
    assert "Claim <q>Install the client.</q>: <strong>not supported</strong>" in page
    assert "Claim <q>Install the client.</q>: <strong>supported</strong>" in page
    assert "[0, " not in page and "claim [" not in page
    assert login(people["ann"]).get(url).status_code == 403
    q2 = run.answers.get(question__external_id="q2")
    anns = q2.assignments.get(labeller=people["ann"])
    response = lead.post(
        reverse("answers:resolve-answer", args=[project.slug, question_set.pk]),
        {"answer": q2.pk, "chosen": anns.pk},
    )
    assert response.status_code == 302
    page = lead.get(url).content.decode()
    assert f"decided: {people['ann'].username}" in page
    # Both reviews are kept; the next gold set takes Ann's.
    assert q2.assignments.count() == 2
    v2 = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    answer_gold = read_answer_gold(gold_sets.bundle_files(v2)[ANSWERS_GOLD_FILE])
    (q2_grades,) = [g for (q, _), g in answer_gold.grades.items() if q == "q2"]
    assert [c.support for c in q2_grades.claims] == ["full"]
    assert answers_page(gold_set=v2).report["runs"]["rag"]["coverage"] == 1.0


def test_agreement_per_judgement_kind(finalised, people):
    gold_set, _ = finalised
    report = answer_agreement(question_set=gold_set.question_set, viewer=people["lead"])
    # Claim support: q1's two claims full/full, q2's one full/none.
    assert report["claim support"]["items"] == 3
    assert report["claim support"]["percent"] == pytest.approx(2 / 3)
    assert report["claim support"]["confusion"][2][0] == 1
    # Citations (q1: leave 2/2, vpn 0/0) and facts (q1: yes/yes, no/no) all agree.
    assert report["citation grade"]["items"] == 2 and report["citation grade"]["percent"] == 1.0
    assert report["fact presence"]["items"] == 2 and report["fact presence"]["percent"] == 1.0


def test_the_answers_page_names_the_questions_a_run_left_out(finalised, project, people):
    gold_set, run = finalised
    # A second run of the same question set that leaves q3 (unanswerable) out.
    thin = b"".join(line + b"\n" for line in answers_file().splitlines()[:2])
    import_answers(question_set=gold_set.question_set, data=thin, run_name="thin")
    client = login(people["lead"])
    url = reverse("evaluation:show-answers", args=[project.slug, gold_set.pk])
    assert client.post(reverse("evaluation:compute-answers", args=[project.slug, gold_set.pk]))
    answer_report(Job.objects.filter(kind="answer_report").latest("pk").pk)
    page = client.get(url).content.decode()
    assert "Missing from thin (1): <code>q3</code>." in page
    assert "Missing from rag" not in page
    runs = EvaluationReport.objects.get(gold_set=gold_set).content["report"]["runs"]
    assert runs["thin"]["missing_questions"] == ["q3"] and runs["rag"]["missing_questions"] == []
    # q3 is the only unanswerable question: rag refused it; thin, missing it, did not.
    assert runs["rag"]["scores"]["refusal_recall"] == 1.0
    assert runs["thin"]["scores"]["refusal_recall"] == 0.0
    # Issue 33: the page says how a missing question counts, not only that it is missing.
    assert "In thin's column it scores 0 on citation precision, citation recall" in page


def test_the_answers_page_says_why_a_human_graded_score_has_no_value(finalised, project, people):
    # Issue 33: human-graded scores stayed "—" until a new gold set, with no word why.
    gold_set, _ = finalised
    question_set = gold_set.question_set
    # Other words than rag's, so rag's agreed grades (kept by answer key) do not apply.
    data = answers_file().replace(b"the VPN.", b"our VPN.").replace(b"the client", b"a client")
    data = data.replace(b'"answer": "", "refused": true', b'"answer": "No idea.", "refused": true')
    later = import_answers(question_set=question_set, data=data, run_name="later").run
    review.plan_answer_review(run=later, labellers=[people["ann"]], double_share=0)
    for assignment in AnswerAssignment.objects.filter(answer__run=later):
        grade_all(assignment, people["ann"])
    client = login(people["lead"])
    compute = reverse("evaluation:compute-answers", args=[project.slug, gold_set.pk])
    assert client.post(compute).status_code == 302
    answer_report(Job.objects.filter(kind="answer_report").latest("pk").pk)
    response = client.get(reverse("evaluation:show-answers", args=[project.slug, gold_set.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    runs = EvaluationReport.objects.get(gold_set=gold_set).content["report"]["runs"]
    assert runs["later"]["scores"]["faithfulness"] is None
    assert runs["rag"]["scores"]["faithfulness"] is not None
    assert 'id="why-no-value"' in page and "A dash (—) is a score with no value." in page
    assert "3 answer reviews finished since v1 was finalised" in page
    assert page.count(">human-graded</span>") == 8  # one per human-graded score
    # Issue 33 item 10: the scores grouped and explained, and a legend for the drill-down.
    for title in ("Faithfulness", "Citations", "Correctness", "Refusal", "Evidence position"):
        assert f'scope="rowgroup">{title} <span class="muted">' in page
    assert "TREC 2024 RAG nuggets" in page and "lost in the middle" in page
    assert 'id="drill-legend"' in page and "overlaps a gold span of the question" in page
    # Once a new version takes them in, the page no longer asks for one.
    v2 = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    assert client.post(reverse("evaluation:compute-answers", args=[project.slug, v2.pk]))
    answer_report(Job.objects.filter(kind="answer_report").latest("pk").pk)
    page = client.get(reverse("evaluation:show-answers", args=[project.slug, v2.pk])).content
    assert b"finished since" not in page
    runs = EvaluationReport.objects.get(gold_set=v2).content["report"]["runs"]
    assert runs["later"]["scores"]["faithfulness"] is not None


def test_a_gold_set_without_reviews_says_when_they_count(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    import_answers(question_set=question_set, data=answers_file(), run_name="rag")
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    client = login(people["lead"])
    client.post(reverse("evaluation:compute-answers", args=[project.slug, gold_set.pk]))
    answer_report(Job.objects.filter(kind="answer_report").latest("pk").pk)
    page = client.get(reverse("evaluation:show-answers", args=[project.slug, gold_set.pk]))
    text = page.content.decode()
    assert page.status_code == 200 and 'id="no-judgements"' in text
    assert "reviews and facts count from the next version finalised after them" in text


def test_a_quoted_review_quotes_claims_citations_and_facts(finalised):
    _, run = finalised
    assignment = run.answers.get(question__external_id="q1").assignments.get(slot=1)
    quoted = quoted_review(assignment)
    first = quoted["claims"][0]
    assert first["quote"] == "Five days carry over." and first["support"] == "supported"
    (citation,) = first["citations"]
    assert citation["doc_id"] == "leave" and citation["grade"] == "supports"
    assert (
        citation["quote"]
        and citation["quote"]
        in assignment.answer.passages.filter(role="citation").first().version.text
    )
    assert quoted["facts"] == [
        {"quote": "five days carry over", "present": "present"},
        {"quote": "form HR-F-112", "present": "missing"},
    ]


def test_every_answer_score_sits_in_one_named_group():
    grouped = [score for _, _, scores in SCORE_GROUPS for score in scores]
    assert sorted(grouped) == sorted(LABELS) and len(grouped) == len(set(grouped))


@pytest.mark.parametrize("support", ["full", "none"])
def test_the_same_answer_in_two_runs_finalises_with_one_line_or_none(finalised, people, support):
    # Found under issue 33: two runs both refusing q3 with "" gave answers-gold.jsonl two lines
    # for one answer key, and finalising failed ("this answer is graded twice").
    gold_set, _ = finalised
    question_set = gold_set.question_set
    twin = import_answers(question_set=question_set, data=answers_file(), run_name="twin").run
    review.plan_answer_review(run=twin, labellers=[people["ann"]], double_share=0)
    for assignment in AnswerAssignment.objects.filter(answer__run=twin):
        grade_all(assignment, people["ann"], support=support)
    v2 = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    answer_gold = read_answer_gold(gold_sets.bundle_files(v2)[ANSWERS_GOLD_FILE])
    graded = {question for question, _ in answer_gold.grades}
    # q3's refusal has no claims: both runs agree on it whatever the support given.
    assert "q3" in graded
    # q1: agreed "full" in rag; the twin agrees with "full" and differs with "none".
    assert ("q1" in graded) == (support == "full")
