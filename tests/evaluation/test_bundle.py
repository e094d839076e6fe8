"""The bundle's files, byte for byte: the export is a contract with other tools, so a change in
any byte must be a decision, never a side effect of moving code."""

import datetime
import hashlib

import pytest
from django.utils import timezone

from corpus.models import Document
from corpus.services import documents
from evaluation.services import finalise_gold_set
from labelling.models import Assignment, Candidate, Guideline, Judgement, Pool, Span, Verdict
from tests.factories import (
    VPN_TEXT,
    ProjectFactory,
    QuestionFactory,
    add_documents,
    labelled_question_set,
)

FIXED_NOW = datetime.datetime(2025, 3, 4, 5, 6, 7, tzinfo=datetime.UTC)

# SHA-256 of every file of the fixture's bundle, as the app wrote them before the bundle writer
# moved to evaluation/bundle.py.
GOLDEN = {
    "beir/corpus.jsonl": "5fa2acaa3e0e2e1a19a75b513931a6c94521ee0e89a77261b2685c2e4e8ad56c",
    "beir/qrels/test.tsv": "60976c51be685ffa11c7c8178c3b8aa21f99d777fa54060620b745e533cc2e99",
    "beir/queries.jsonl": "b8cfc0827d3a5aa3a2eadd5c489a4ee7d372b0c3841d84df49e922018fee0619",
    "corpus.jsonl": "41b753ba2537031803fd6f2f22c2f0fa8727737dc0a8c29f32f6c610ce5c0099",
    "gold.jsonl": "809bae0fc88a23cf9995172b741c3ea4bb5ca2d57171b420d6c9b4c01565f87a",
    "judgements.csv": "753c1a8038d4a4e5b49b841a9c5c6fa1aba21b2726f9c7603225128910660658",
    "manifest.json": "1e7b4dbce966f578ebfac0abd49a5dab9593f278c0f9e9189778b25bae2450cc",
    "qrels-fixed-100.trec": "8ea40c05d8ad6b154a303a244eb5552f7e6ba884adc0f1bf2d976f74b57ac2a8",
    "qrels-whole.trec": "4ccb1c0d0eb26ee5dc7a080ecb1fefa44fc296b671f0a2a2c46ea8726a4ecc1c",
    "qrels.trec": "c429082b98d9d61e45489bf7075edb37cdd32c0574267bcbf75ff393c3c01d32",
}


@pytest.fixture
def frozen_time(monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: FIXED_NOW)


def golden_question_set(people):
    """labelled_question_set with every shape the writer handles: a restricted document, two
    chunking schemes, an id needing percent-encoding, a document changed after labelling, a
    second pool whose span overlaps the first pool's, and a question with no candidate."""
    project = ProjectFactory(slug="golden", name="Golden")
    for user, role in ((people["ann"], "labeller"), (people["bob"], "labeller")):
        project.memberships.create(user=user, role=role)
    project.memberships.create(user=people["lead"], role="lead")
    project.memberships.create(user=people["admin"], role="admin")
    documents.add_chunking_scheme(
        project=project, name="fixed-100", strategy="fixed", unit="chars", size=100, overlap=0
    )
    documents.add_chunking_scheme(project=project, name="whole", strategy="document")
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )
    Document.objects.filter(project=project, doc_id="vpn").update(doc_id="vpn guide 100%")
    vpn = Document.objects.get(project=project, doc_id="vpn guide 100%").latest_version
    q2 = question_set.questions.get(external_id="q2")
    second = Pool.objects.create(question_set=question_set, name="p2", depth=10, state="ready")
    candidate = Candidate.objects.create(
        pool=second, question=q2, version=vpn, start=30, end=90, shuffle_rank=0
    )
    assignment = Assignment.objects.create(
        pool=second, question=q2, slot=1, labeller=people["bob"], assigned_at=FIXED_NOW,
        completed_at=FIXED_NOW,
    )  # fmt: skip
    guideline = Guideline.objects.create(project=project, version=3, text="Grade the evidence.")
    judgement = Judgement.objects.create(
        assignment=assignment, candidate=candidate, grade=1, guideline=guideline
    )
    Span.objects.create(judgement=judgement, version=vpn, start=30, end=90, quote=VPN_TEXT[30:90])
    q4 = QuestionFactory(question_set=question_set, external_id="q 4", text="nothing found")
    empty = Assignment.objects.create(
        pool=second, question=q4, slot=1, labeller=people["ann"], assigned_at=FIXED_NOW,
        completed_at=FIXED_NOW,
    )  # fmt: skip
    Verdict.objects.create(assignment=empty, outcome="answerable", guideline=guideline)
    add_documents(project, ("vpn guide 100%", "Intro line.\n\n" + VPN_TEXT))
    return question_set


def test_a_bundle_built_by_the_app_is_byte_for_byte_the_golden_one(
    db, frozen_time, django_user_model
):
    people = {
        name: django_user_model.objects.create_user(username=username)
        for name, username in (("ann", "ann"), ("bob", "bob"), ("lead", "lea"), ("admin", "ada"))
    }
    question_set = golden_question_set(people)
    gold_set = finalise_gold_set(question_set=question_set, user=people["admin"])
    files = {
        name: bytes(content) for name, content in gold_set.files.values_list("name", "content")
    }
    digests = {name: hashlib.sha256(content).hexdigest() for name, content in files.items()}
    assert digests == GOLDEN
