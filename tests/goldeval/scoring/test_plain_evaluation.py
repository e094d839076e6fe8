"""Issue 14, item 15 on the evaluation page: a glossary of its figures, run-against-run deltas
with the CLI's paired randomization test, and why a built-in BM25 retriever and the bundle's
bm25-baseline differ when both are shown."""

import hashlib

import pytest
from django.urls import reverse

from corpus.services import documents, retrieval
from evaluation import scoreboard
from evaluation.models import EvaluationRun
from evaluation.services import gold_sets, reports
from tests.factories import labelled_question_set, login

GOOD = (
    '{"question_id": "q1", "results": [{"doc_id": "leave", "start": 0, "end": 100}]}\n'
    '{"question_id": "q2", "results": [{"doc_id": "vpn", "start": 0, "end": 40}]}\n'
)
BAD = (
    '{"question_id": "q1", "results": [{"doc_id": "vpn", "start": 0, "end": 50}]}\n'
    '{"question_id": "q2", "results": [{"doc_id": "leave", "start": 0, "end": 40}]}\n'
)


def stored_run(gold_set, name, content, **fields):
    data = content.encode()
    return EvaluationRun.objects.create(
        gold_set=gold_set,
        name=name,
        file_name=f"{name}.jsonl",
        content=data,
        sha256=hashlib.sha256(data).hexdigest(),
        questions=2,
        **fields,
    )


@pytest.fixture
def board_world(project, member):
    ann, bob, lead = member("labeller"), member("labeller"), member("lead", username="lea")
    question_set = labelled_question_set(project, ann=ann, bob=bob, lead=lead)
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=lead)
    scheme = documents.add_chunking_scheme(
        project=project, name="w50", strategy="fixed", size=50, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(
        project=project, name="bm25", kind="bm25", scheme=scheme, stem=False, k1=1.2
    )
    stored_run(gold_set, "good", GOOD, source="upload")
    stored_run(gold_set, "bm25", BAD, source="retriever", retriever=bm25)
    return {"gold_set": gold_set, "lead": lead}


def test_deltas_against_a_reference_run_carry_a_p_value(project, board_world):
    gold_set = board_world["gold_set"]
    records = list(EvaluationRun.objects.of_gold_set(gold_set))
    board = scoreboard.evaluate_gold_set(gold_set=gold_set, records=records, baseline=False)
    deltas = scoreboard.run_deltas(board, permutations=2000)
    assert deltas.reference == "good"
    assert deltas.metrics == ["recall@5", "ndcg@5", "precision@5", "mrr@10"]
    (row,) = deltas.rows
    assert row.name == "bm25"
    recall = row.cells[0]
    assert recall.delta == pytest.approx(-0.75)  # good: q1 1, q2 0.5; bm25 reaches nothing
    # Two questions (differences -1 and -0.5): 2 of the 4 sign patterns are as extreme.
    assert recall.p_value == pytest.approx(0.5, abs=0.05) and not recall.significant
    other = scoreboard.run_deltas(board, reference="bm25", permutations=2000)
    assert other.reference == "bm25" and other.rows[0].cells[0].delta == pytest.approx(0.75)
    assert (
        scoreboard.run_deltas(
            scoreboard.evaluate_gold_set(gold_set=gold_set, records=records[:1], baseline=False)
        )
        is None
    )


def test_the_page_explains_its_figures_and_the_two_bm25s(project, board_world):
    gold_set = board_world["gold_set"]
    # The page renders stored figures: the jobs that store runs compute these.
    reports.compute_report(gold_set=gold_set, choice=reports.default_choice(gold_set))
    runs_only = reports.Choice(
        run_ids=tuple(sorted(r.pk for r in gold_set.runs.all())),
        baseline=False,
        k=project.k_sent_to_model,
    )
    reports.compute_report(gold_set=gold_set, choice=runs_only)
    page = login(board_world["lead"]).get(
        reverse("evaluation:show-evaluation", args=[project.slug]), {"gold_set": gold_set.pk}
    )
    body = page.content.decode()
    assert "What the figures mean" in body
    for term in ("recall@k", "precision@k", "ndcg@k", "judged@k", "refusal accuracy"):
        assert f"<dt>{term}" in body, term
    assert "Run against run" in body and "paired randomization test" in body
    assert "−0.750" in body and "p 0." in body
    assert "Why bm25 and bm25-baseline differ." in body
    assert "it ranks passages (Fixed size with overlap, 50 words, overlap 0)" in body
    assert "stemming off (baseline: on)" in body and "k1 1.2 (baseline: 0.9)" in body
    assert "English stopwords kept (baseline: removed)" in body
    assert "3 questions." in body
    without_baseline = login(board_world["lead"]).get(
        reverse("evaluation:show-evaluation", args=[project.slug]),
        {"gold_set": gold_set.pk, "shown": "1", "run": [r.pk for r in gold_set.runs.all()]},
    )
    body = without_baseline.content.decode()
    assert "Run against run" in body
    assert "Why bm25 and bm25-baseline differ." not in body
