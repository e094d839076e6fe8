"""The misses report of a labelled production sample (production/services/misses.py and
its page), computed from the pool labellers graded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from corpus.services import documents, retrieval
from labelling.models import Assignment, Candidate, Judgement, Span, Verdict
from production.services import draws as production
from production.services import sampling as sampling_services
from production.services.misses import sample_misses
from production.services.traces import receive_traces
from tests.conftest import wait_for_job
from tests.factories import (
    POLICY_TEXT,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    add_documents,
    login,
)

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
TRAVEL = "Travel costs are paid back monthly after the trip report is filed."


def trace(i, question, retrieved, **extra):
    return {
        "trace_id": f"t-{i}",
        "occurred_at": (NOW - timedelta(hours=i + 1)).isoformat(),
        "user": "someone",
        "question": question,
        "retrieved": retrieved,
        **extra,
    }


def label(pool, labeller, relevant: dict[str, str | None]):
    """Grade every candidate: 2 (the whole passage as evidence) when it is in the document the
    question's evidence is in, else 0; None marks the question unanswerable."""
    now = timezone.now()
    for question in pool.question_set.questions.all():
        assignment = Assignment.objects.create(
            pool=pool, question=question, labeller=labeller, assigned_at=now, completed_at=now
        )
        doc = relevant[question.external_id]
        for candidate in Candidate.objects.filter(pool=pool, question=question).select_related(
            "version__document"
        ):
            good = candidate.version.document.doc_id == doc
            judgement = Judgement.objects.create(
                assignment=assignment, candidate=candidate, grade=2 if good else 0
            )
            if good:
                start, end = candidate.start, candidate.end
                Span.objects.create(
                    judgement=judgement,
                    version=candidate.version,
                    start=start,
                    end=end,
                    quote=candidate.version.text[start:end],
                )
        if doc is None:
            Verdict.objects.create(assignment=assignment, outcome="unanswerable")


@pytest.fixture
def labelled(worker):
    project = ProjectFactory(slug="acme", k_sent_to_model=1)
    lead, ann = UserFactory(), UserFactory()
    MembershipFactory(project=project, user=lead, role="lead")
    MembershipFactory(project=project, user=ann)
    add_documents(project, ("leave", POLICY_TEXT), ("travel", TRAVEL))
    scheme = documents.add_chunking_scheme(
        project=project, name="w", strategy="fixed", size=400, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    leave, travel = {"doc_id": "leave", "rank": 1}, {"doc_id": "travel", "rank": 2}
    receive_traces(
        project=project,
        items=[
            trace(0, "how many days of annual leave carry over", [leave], refused=False),
            trace(1, "when are travel costs paid back", [leave, travel], refused=False),
            trace(2, "gym discount?", [leave], answer="Ten percent.", refused=False),
        ],
    )
    spec = sampling_services.check_rule(filters={}, strategy="uniform", size=10)
    rule = sampling_services.save_sampling_rule(project=project, user=lead, name="w", spec=spec)
    made = production.draw_and_open(rule=rule, end=NOW)
    job = wait_for_job(made.pool.job)
    made.pool.refresh_from_db()
    assert made.pool.state == "ready", job.message
    label(made.pool, ann, {"t-0": "leave", "t-1": "travel", "t-2": None})
    return {"sample": made.sample, "lead": lead, "ann": ann}


def test_the_report_names_misses_estimates_and_unanswerable_answers(labelled):
    report = sample_misses(sample=labelled["sample"], viewer=labelled["lead"])
    assert (report.questions, report.decided, report.answerable, report.unanswerable) == (
        3,
        3,
        2,
        1,
    )
    (missed,) = report.missed
    assert missed.question.trace_id == "t-1"
    (miss,) = missed.misses
    assert miss.span.doc_id == "travel" and miss.production_rank == 2  # below k = 1
    assert ("bm25", 1) in miss.found_by
    assert report.recall.mean == pytest.approx(0.5)  # uniform: every weight the same
    assert report.mrr.mean == pytest.approx((1 + 0.5) / 2)
    assert [q.trace_id for q in report.answered_unanswerable] == ["t-2"]


def test_the_misses_page_shows_it_to_leads_only(labelled):
    url = reverse(
        "production:show-misses", kwargs={"slug": "acme", "sample_id": labelled["sample"].pk}
    )
    assert login(labelled["ann"]).get(url).status_code == 403
    browser = login(labelled["lead"])
    page = browser.get(url).content.decode()
    if "being computed" in page:  # a real worker computes it: the page follows the job
        from corpus.models import Job

        wait_for_job(Job.objects.get(kind="misses_report"))
        page = browser.get(url).content.decode()
    assert "when are travel costs paid back" in page
    assert "production had it at rank 2, below k" in page and "bm25 found it at rank 1" in page
    assert "gym discount?" in page
    assert "recall@1" in page and "0.500" in page
    assert "someone" not in page


def test_promotion_adds_misses_to_the_next_version_and_leaves_v1_alone(labelled):
    from evaluation.models import GoldSet
    from evaluation.services.gold_sets import finalise_gold_set, load_gold_set
    from production.models import PromotedQuestion
    from production.services.misses import promote_sample
    from tests.factories import labelled_question_set

    sample, lead = labelled["sample"], labelled["lead"]
    admin, bob = UserFactory(), UserFactory()
    MembershipFactory(project=sample.project, user=admin, role="admin")
    MembershipFactory(project=sample.project, user=bob)
    hr = labelled_question_set(sample.project, ann=labelled["ann"], bob=bob, lead=lead)
    v1 = finalise_gold_set(question_set=hr, user=admin)
    v1_manifest, v1_checksum = dict(v1.manifest), v1.checksum

    url = reverse("production:promote-sample", kwargs={"slug": "acme", "sample_id": sample.pk})
    assert login(lead).get(url).status_code == 403  # admins promote
    response = login(admin).post(url, {"target": hr.pk, "only_misses": "1"}, follow=True)
    text = response.content.decode()
    assert "Added 2 questions to hr: v2 will hold them when it is finalised; v1 stays" in text
    promoted = PromotedQuestion.objects.filter(question__question_set=hr).select_related(
        "question", "sampled_trace__trace"
    )
    assert sorted(p.sampled_trace.trace.trace_id for p in promoted) == ["t-1", "t-2"]
    assert {p.question.text for p in promoted} == {
        "when are travel costs paid back",
        "gym discount?",
    }
    # Again: nothing twice.
    assert promote_sample(sample=sample, target=hr, user=admin, only_misses=True) == []

    v2 = finalise_gold_set(question_set=hr, user=admin)
    assert v2.number == 2
    production = v2.manifest["production_questions"]
    assert [(p["trace_id"], p["sample"], p["rule"], p["rule_version"]) for p in production] == [
        ("t-1", sample.pk, "w", 1),
        ("t-2", sample.pk, "w", 1),
    ]
    gold = load_gold_set(v2)
    travel = gold.questions["t-1"]
    assert travel.answerable and {s.doc_id for s in travel.spans} == {"travel"}
    assert gold.questions["t-2"].answerable is False
    v1 = GoldSet.objects.get(pk=v1.pk)
    assert v1.manifest == v1_manifest and v1.checksum == v1_checksum
    assert "t-1" not in load_gold_set(v1).questions
    assert "production_questions" not in v1.manifest


def test_production_offsets_are_read_in_their_version_and_placed_on_the_gold_s(labelled):
    """t-1's gold is "paid back monthly" in travel v1; travel then gets a v2 with a preface.
    Production's offsets are in the version a passage names, else the one current when the
    trace occurred, and are re-anchored onto v1 before they meet the gold."""
    from corpus.models import DocumentVersion
    from production.models import Trace

    sample, lead = labelled["sample"], labelled["lead"]
    span = Span.objects.get(judgement__candidate__question__external_id="t-1")
    start = TRAVEL.index("paid back monthly")
    Span.objects.filter(pk=span.pk).update(start=start, end=start + 17, quote="paid back monthly")
    preface = "A preface the policy team added in December, before the travel rules. "
    add_documents(sample.project, ("travel", preface + TRAVEL))
    assert DocumentVersion.objects.filter(document__doc_id="travel").count() == 2
    trace = Trace.objects.get(trace_id="t-1")

    def recall_of_t1(retrieved, occurred_at=None):
        Trace.objects.filter(pk=trace.pk).update(
            retrieved=retrieved, occurred_at=occurred_at or trace.occurred_at
        )
        report = sample_misses(sample=sample, viewer=lead)
        row = next(r for r in report.per_question if r.question.trace_id == "t-1")
        return row.recall, report.unplaced

    in_v2 = {
        "doc_id": "travel",
        "rank": 1,
        "start": len(preface) + start,
        "end": len(preface) + start + 17,
    }
    in_v1 = {"doc_id": "travel", "rank": 1, "start": start, "end": start + 17}
    # Named v2: re-anchored onto v1, it reaches the span (its raw offsets would not).
    assert recall_of_t1([{**in_v2, "version": 2}]) == (1.0, 0)
    # No version, the trace older than v2: the offsets are v1's (the oldest, here).
    assert recall_of_t1([in_v1]) == (1.0, 0)
    # No version, the trace after v2 arrived: the offsets are v2's, placed on v1.
    later = timezone.now() + timedelta(hours=1)
    assert recall_of_t1([in_v2], occurred_at=later) == (1.0, 0)
    # v1's offsets read in v2 are the preface, which v1 does not have: it reaches nothing.
    assert recall_of_t1([in_v1], occurred_at=later) == (0.0, 1)
