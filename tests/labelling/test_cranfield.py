"""Cranfield, a real test collection: our BM25 retriever, run through the app, must score what the
reference BM25 run in the data folder scores (nDCG@10 with linear gain 0.352, same settings).

Runs when ../shared/data/cranfield exists (see its README for the id and grade quirks, which
its converter has already dealt with).
"""

import pytest

from corpus.models import Document
from corpus.services import documents, retrieval
from goldeval.formats.gold import Gold, Passage, load_qrels
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from labelling.services.questions import import_beir
from tests.conftest import SHARED_DATA

# CI refuses to start without it (tests/conftest.py).
CRANFIELD = SHARED_DATA / "cranfield"
REFERENCE_NDCG_10 = 0.352

pytestmark = pytest.mark.skipif(not CRANFIELD.is_dir(), reason=f"{CRANFIELD} is not here")


def test_bm25_on_cranfield_matches_the_reference_run(project):
    # The scheme first, so the import itself cuts every document into one whole passage.
    scheme = documents.add_chunking_scheme(project=project, name="documents", strategy="document")
    imported = import_beir(project=project, path=CRANFIELD, set_name="cranfield")
    # Documents 471 and 995 have neither title nor abstract: reported, not imported.
    assert [e.doc_id for e in imported.errors if e.error == "text is empty"] == ["471", "995"]
    assert imported.documents.created == Document.objects.count() == 1398
    assert imported.questions == 225
    retriever = retrieval.add_retriever(
        project=project,
        name="bm25",
        kind="bm25",
        scheme=scheme,
        stem=True,
        stopwords=True,
        k1=0.9,
        b=0.4,
    )
    retrieval.build_index(retriever=retriever)
    questions = list(imported.question_set.questions.order_by("pk"))
    found = retrieval.retrieve(retriever=retriever, questions=[q.text for q in questions], k=100)
    run = Run(
        name="bm25",
        rankings={
            q.external_id: Ranking(passages=[Passage(hit.doc_id) for hit in hits])
            for q, hits in zip(questions, found, strict=True)
        },
    )
    gold = Gold(questions=load_qrels(CRANFIELD / "qrels.tsv"))
    evaluation = evaluate_run(gold=gold, run=run, options=MetricOptions(ks=(10,), gain="linear"))
    assert evaluation.answerable == 225
    assert abs(evaluation.metrics["ndcg@10"] - REFERENCE_NDCG_10) <= 0.02, evaluation.metrics
