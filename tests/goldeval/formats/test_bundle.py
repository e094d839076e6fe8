"""The bundle's files, byte for byte: the export is a contract with other tools, so a change in
any byte must be a decision, never a side effect of moving code."""

import datetime
import hashlib
import json
from dataclasses import dataclass

import pytest
from django.utils import timezone

from corpus.models import Document
from corpus.services import documents
from evaluation.services.gold_sets import finalise_gold_set
from goldeval.formats.bundle import BundleInfo, CorpusVersion, Vote, build_bundle
from goldeval.text.chunking import ChunkSpec
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
# moved to goldeval/formats/bundle.py; issue 17 added documents.jsonl (so manifest.json lists it)
# and changed no other file; issue 32 writes beir/qrels/test.tsv's ids as they are ("vpn guide
# 100%" and "q 4", as beir/corpus.jsonl and beir/queries.jsonl hold them), so the TSV and the
# manifest listing it changed, and no other file; issue 33 counts the gold spans on changed
# documents in the manifest (spans_on_changed_documents: the fixture's changed document), so the
# manifest changed, and no other file.
GOLDEN = {
    "beir/corpus.jsonl": "5fa2acaa3e0e2e1a19a75b513931a6c94521ee0e89a77261b2685c2e4e8ad56c",
    "beir/qrels/test.tsv": "39193c778e58a14ed3067d82b153107eb78452a3f9fc052fef64d9eca1241d0f",
    "beir/queries.jsonl": "b8cfc0827d3a5aa3a2eadd5c489a4ee7d372b0c3841d84df49e922018fee0619",
    "corpus.jsonl": "41b753ba2537031803fd6f2f22c2f0fa8727737dc0a8c29f32f6c610ce5c0099",
    "gold.jsonl": "809bae0fc88a23cf9995172b741c3ea4bb5ca2d57171b420d6c9b4c01565f87a",
    "judgements.csv": "753c1a8038d4a4e5b49b841a9c5c6fa1aba21b2726f9c7603225128910660658",
    "documents.jsonl": "94abf9fb85fa5b4a207928474586499544606fb08a24e50eb958058689f659cf",
    "manifest.json": "06892bfefe22f8d8bc13b62e9554494f777eb1c8589c10597da0b796b3def8ac",
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
        pool=second,
        question=q2,
        slot=1,
        labeller=people["bob"],
        assigned_at=FIXED_NOW,
        completed_at=FIXED_NOW,
    )
    guideline = Guideline.objects.create(project=project, version=3, text="Grade the evidence.")
    judgement = Judgement.objects.create(
        assignment=assignment, candidate=candidate, grade=1, guideline=guideline
    )
    Span.objects.create(judgement=judgement, version=vpn, start=30, end=90, quote=VPN_TEXT[30:90])
    q4 = QuestionFactory(question_set=question_set, external_id="q 4", text="nothing found")
    empty = Assignment.objects.create(
        pool=second,
        question=q4,
        slot=1,
        labeller=people["ann"],
        assigned_at=FIXED_NOW,
        completed_at=FIXED_NOW,
    )
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
    # The changed document's two gold spans, kept as labelled (nobody re-checked them).
    assert gold_set.manifest["spans_on_changed_documents"] == {
        "spans": 2,
        "moved": 0,
        "re_marked": 0,
        "facts_changed": 0,
        "not_rechecked": 2,
        "fact_links": 0,
    }
    assert digests == GOLDEN


# --- the writer itself, on plain data ------------------------------------------------------------


@dataclass
class PlainSpan:
    doc_id: str
    version: int
    start: int
    end: int
    grade: int
    quote: str = ""


@dataclass
class PlainQuestion:
    question_id: str
    text: str
    answerable: bool
    spans: list
    judged: list


TEXT = "alpha beta gamma delta"  # fixed-6 chars chunks: [0,5) [6,12) [12,18) [18,22)


def plain_bundle(questions, votes=()):
    return build_bundle(
        info=BundleInfo(
            project="p",
            question_set="s",
            number=2,
            created_by="ada",
            created_at=FIXED_NOW,
            min_span_f1=0.5,
            guideline_versions=[1, 3],
        ),
        questions=questions,
        corpus=[CorpusVersion("d", 1, "D", TEXT, "h1"), CorpusVersion("d", 2, "D", TEXT, "h2")],
        texts={("d", 1): TEXT, ("d", 2): TEXT},
        schemes={"six": ChunkSpec(strategy="fixed", unit="chars", size=6, overlap=0)},
        votes=list(votes),
    )


def test_chunk_qrels_count_chunks_sharing_a_character_with_a_span_not_touching_ones():
    question = PlainQuestion(
        "q", "?", True, [PlainSpan("d", 1, 6, 12, 2)], [("d", 1, 12, 14), ("x", 1, 0, 3)]
    )
    bundle = plain_bundle([question])
    # [6, 12) is chunk 1 exactly; the judged [12, 14) touches chunk 1 and is in chunk 2; the
    # judged passage of an unknown version is left out of chunk qrels, not of document qrels.
    assert bundle.files["qrels-six.trec"] == b"q 0 d#1 2\nq 0 d#2 0\n"
    assert bundle.files["qrels.trec"] == b"q 0 d 2\nq 0 x 0\n"
    assert bundle.manifest["corpus"]["documents"] == 1
    assert bundle.manifest["corpus"]["versions"] == 2
    assert bundle.manifest["files"]["beir/corpus.jsonl"]["bytes"] == len(
        bundle.files["beir/corpus.jsonl"]
    )
    assert bundle.checksum == hashlib.sha256(bundle.files["manifest.json"]).hexdigest()


def test_the_manifest_says_whether_the_gold_rule_counted_the_ai_judge_only_when_told():
    question = PlainQuestion("q", "?", True, [PlainSpan("d", 1, 6, 12, 2)], [])
    silent = plain_bundle([question])
    assert "ai_judge_vote" not in silent.manifest
    counted = {
        "counted": True,
        "judge": "qwen",
        "votes_counted": 3,
        "models": ["m-1"],
        "prompt_versions": [1, 2],
    }
    info = BundleInfo(
        project="p",
        question_set="s",
        number=2,
        created_by="ada",
        created_at=FIXED_NOW,
        min_span_f1=0.5,
        ai_judge_vote=counted,
    )
    bundle = build_bundle(
        info=info,
        questions=[question],
        corpus=[CorpusVersion("d", 1, "D", TEXT, "h1")],
        texts={("d", 1): TEXT},
        schemes={},
        votes=[],
    )
    assert bundle.manifest["ai_judge_vote"] == counted
    assert json.loads(bundle.files["manifest.json"])["ai_judge_vote"] == counted
    # The gold itself does not depend on it.
    assert bundle.files["gold.jsonl"] == plain_bundle([question]).files["gold.jsonl"]


def test_votes_become_spreadsheet_safe_cells():
    votes = [
        Vote(
            question_id="q",
            pool="p",
            kind="judgement",
            source="labeller",
            labeller="ann",
            recorded_at=FIXED_NOW,
            doc_id="d",
            version=1,
            start=0,
            end=9,
            grade=1,
            spans=((4, 9), (0, 2)),
            note="=cmd()",
            guideline_version=3,
        ),
        Vote(
            question_id="q",
            pool="p",
            kind="verdict",
            source="labeller",
            labeller="ann",
            recorded_at=FIXED_NOW,
            outcome="unanswerable",
        ),
    ]
    csv_text = plain_bundle([], votes).files["judgements.csv"].decode()
    assert csv_text.splitlines()[1:] == [
        'q,p,judgement,labeller,ann,d,1,0,9,1,,"[[0, 2], [4, 9]]",\'=cmd(),3,'
        "2025-03-04T05:06:07+00:00",
        "q,p,verdict,labeller,ann,,,,,,unanswerable,,,,2025-03-04T05:06:07+00:00",
    ]
