"""The gold of a question set in one place: per pool for the Gold page, per question as a gold set
freezes it, spans merged by the one rule (touching spans stay two units)."""

import pytest
from django.utils import timezone

from corpus.models import Document
from labelling.models import Assignment, Candidate, Judgement, Pool, Span
from labelling.services.gold import GoldSpanRow, UnresolvedItem, coalesce_spans, collect_gold
from tests.factories import VPN_TEXT, QuestionFactory, labelled_question_set


def row(start, end, grade, version_id=1):
    return GoldSpanRow(version_id, "vpn", 1, start, end, grade, VPN_TEXT[start:end])


def test_coalescing_merges_spans_sharing_a_character_and_keeps_touching_ones_apart():
    texts = {1: VPN_TEXT, 2: VPN_TEXT}
    merged = coalesce_spans([row(10, 20, 2), row(0, 11, 1), row(20, 30, 1)], texts)
    assert [(s.start, s.end, s.grade) for s in merged] == [(0, 20, 2), (20, 30, 1)]
    assert merged[0].quote == VPN_TEXT[0:20]
    # Another version of the same document is another text: never merged with the first.
    merged = coalesce_spans([row(0, 10, 1, version_id=2), row(5, 15, 2)], texts)
    assert [(s.version_id, s.start, s.end) for s in merged] == [(1, 5, 15), (2, 0, 10)]


@pytest.fixture
def people(member):
    return {name: member("labeller", username=name) for name in ("ann", "bob", "lea")}


def second_pool(question_set, labeller, spans):
    """A second pool of q2 whose one candidate ann grades 1 with the given spans."""
    vpn = Document.objects.get(doc_id="vpn").latest_version
    q2 = question_set.questions.get(external_id="q2")
    pool = Pool.objects.create(question_set=question_set, name="p2", depth=10, state="ready")
    candidate = Candidate.objects.create(
        pool=pool, question=q2, version=vpn, start=0, end=200, shuffle_rank=0
    )
    now = timezone.now()
    assignment = Assignment.objects.create(
        pool=pool, question=q2, slot=1, labeller=labeller, assigned_at=now, completed_at=now
    )
    judgement = Judgement.objects.create(assignment=assignment, candidate=candidate, grade=1)
    for start, end in spans:
        Span.objects.create(
            judgement=judgement, version=vpn, start=start, end=end, quote=VPN_TEXT[start:end]
        )


def test_a_question_of_two_pools_gets_one_line_with_spans_merged_by_the_rule(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"]
    )
    # Pool p has q2 at [0, 40) grade 2 and [100, 150) grade 1; p2 overlaps the first and
    # touches the second.
    second_pool(question_set, people["bob"], [(30, 60), (150, 170)])
    questions, unresolved = collect_gold(question_set=question_set)
    assert unresolved == []
    q2 = next(q for q in questions if q.question_id == "q2")
    assert [(s.start, s.end, s.grade) for s in q2.spans] == [
        (0, 60, 2),
        (100, 150, 1),
        (150, 170, 1),
    ]
    assert q2.judged == [("vpn", 1, 0, 60), ("vpn", 1, 100, 150), ("vpn", 1, 0, 200)]


def test_a_question_no_pool_assigned_blocks(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"]
    )
    QuestionFactory(question_set=question_set, external_id="q9")
    questions, unresolved = collect_gold(question_set=question_set)
    assert [q.question_id for q in questions] == ["q1", "q2", "q3"]
    assert unresolved == [
        UnresolvedItem("q9", "", "question", "not labelled: no pool has assigned it to a labeller")
    ]
