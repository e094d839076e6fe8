"""The Gold and Adjudication pages read stored gold decisions (`labelling.services.gold_state`):
what they show must be exactly what deciding every item again shows, for every viewer, and
stay so after each kind of write."""

import json
import random
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from corpus.models import AccessGroup, Document
from labelling.models import (
    Assignment,
    Candidate,
    Change,
    ChangeSubject,
    EscalatedItem,
    ItemState,
    ItemStateStale,
    Judgement,
    Pool,
    Resolution,
    Span,
    Verdict,
)
from labelling.services import adjudication, exclusion, gold, gold_state, lead_pages, leases
from labelling.services import judgements as grading
from labelling.services.gold import group_unresolved, next_to_decide, resolve_gold
from labelling.services.judgement_import import import_judgements
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents, login

TEXT = (
    "Employees may carry over five days of leave. Requests go through form HR-F-112. "
    "Laptops are replaced every four years. Bikes bought for commuting are refunded. "
) * 3


def _world(project, member, seed: int):
    """A generated set: two pools, documents open to all, to a group one lead is in, to a group
    of labellers only; double labels, an open slot, grades that agree and differ, "can't tell"
    verdicts, resolutions, an excluded question."""
    rng = random.Random(seed)
    labellers = [member("labeller", username=f"lab{seed}{i}") for i in range(4)]
    lead_in = member("lead", username=f"leadin{seed}")
    lead_out = member("lead", username=f"leadout{seed}")
    add_documents(
        project,
        ("open-a", TEXT),
        ("open-b", TEXT.replace("five", "six")),
        ("hr", TEXT.replace("four", "three"), ("hr",)),
        ("board", TEXT.replace("Bikes", "Cars"), ("board",)),
    )
    AccessGroup.objects.get(project=project, name="hr").members.add(lead_in, *labellers[:3])
    AccessGroup.objects.get(project=project, name="board").members.add(*labellers[1:])
    versions = [d.latest_version for d in Document.objects.filter(project=project)]
    question_set = QuestionSetFactory(project=project, name=f"set{seed}")
    pools = [
        Pool.objects.create(question_set=question_set, name=f"p{n}", state="ready")
        for n in range(2)
    ]
    now = timezone.now()
    questions = [QuestionFactory(question_set=question_set, external_id=f"q{n}") for n in range(9)]
    for n, question in enumerate(questions):
        pool = pools[n % 3 == 0]
        slots = [rng.choice(labellers)]
        if rng.random() < 0.6:
            slots.append(rng.choice([lab for lab in labellers if lab != slots[0]]))
        if rng.random() < 0.15:
            slots.append(None)  # an open slot
        assignments = [
            Assignment.objects.create(
                pool=pool,
                question=question,
                slot=slot,
                labeller=labeller,
                assigned_at=now if labeller else None,
                completed_at=now if labeller and rng.random() < 0.8 else None,
            )
            for slot, labeller in enumerate(slots, start=1)
        ]
        for rank, start in enumerate(rng.sample(range(200), rng.randint(2, 5))):
            version = rng.choice(versions)
            candidate = Candidate.objects.create(
                pool=pool,
                question=question,
                version=version,
                start=start,
                end=start + 60,
                shuffle_rank=rank,
            )
            for assignment in assignments:
                if assignment.labeller is None or rng.random() < 0.15:
                    continue
                grade = rng.choice((0, 1, 2))
                judgement = Judgement.objects.create(
                    assignment=assignment, candidate=candidate, grade=grade
                )
                if grade:
                    s = start + rng.randrange(0, 20)
                    Span.objects.create(
                        judgement=judgement,
                        version=version,
                        start=s,
                        end=s + 30,
                        quote=version.text[s : s + 30],
                    )
            if rng.random() < 0.2:
                Resolution.objects.create(
                    pool=pool, question=question, candidate=candidate, grade=1, resolved_by=lead_in
                )
        for assignment in assignments:
            if assignment.completed_at and rng.random() < 0.4:
                Verdict.objects.create(
                    assignment=assignment,
                    outcome=rng.choice(("answerable", "unanswerable", "cant_tell")),
                )
        if rng.random() < 0.15:
            Resolution.objects.create(
                pool=pool, question=question, outcome="answerable", resolved_by=lead_in
            )
    questions[-1].excluded_at = now
    questions[-1].save(update_fields=["excluded_at"])
    if seed % 2 == 0:  # a document changed after it was labelled: its gold spans are marked
        add_documents(project, ("open-b", TEXT.replace("five", "seven") + " New rule."))
        assert Document.objects.get(project=project, doc_id="open-b").latest_version.version == 2
    return question_set, (lead_in, lead_out), labellers


# Each response masks the CSRF token afresh (a form field, the htmx header): not content.
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"|"X-CSRFToken": "[^"]*"')
QUERIES = [
    ("show-gold", ""),
    ("show-gold", "?page=2"),
    ("show-gold", "?page=3&rows=2"),
    ("show-gold", "?rows=3"),
    ("show-gold", "?kind=disagreement"),
    ("show-gold", "?kind=waiting&page=2"),
    ("show-gold", "?kind=unreachable"),
    ("list-adjudication", ""),
    ("list-adjudication", "?page=2"),
    ("list-adjudication", "?page=4"),
]


def _pages(client, project, question_set, *, stored: bool, monkeypatch) -> dict:
    """Each page, small enough to have several pages, from the stored decisions or not."""
    bodies = {}
    with monkeypatch.context() as patch:
        patch.setattr(lead_pages, "GROUPS_PER_PAGE", 2)
        patch.setattr(lead_pages, "QUESTIONS_PER_PAGE", 3)
        patch.setattr(lead_pages, "ADJUDICATION_QUESTIONS_PER_PAGE", 2)
        patch.setattr(lead_pages, "_stored", lambda min_span_f1, _stored: stored)
        for name, query in QUERIES:
            url = reverse(f"labelling:{name}", args=[project.slug, question_set.pk]) + query
            response = client.get(url)
            assert response.status_code == 200, url
            bodies[name + query] = CSRF.sub("", response.content.decode())
    return bodies


def _same_pages(project, question_set, leads, monkeypatch) -> None:
    for lead in leads:
        client = login(lead)
        stored = _pages(client, project, question_set, stored=True, monkeypatch=monkeypatch)
        again = _pages(client, project, question_set, stored=False, monkeypatch=monkeypatch)
        for key, body in again.items():
            assert stored[key] == body, (lead.username, key)


@pytest.mark.parametrize("seed", range(5))
def test_stored_decisions_show_the_same_pages_as_deciding_everything_again(
    project, member, monkeypatch, seed
):
    question_set, leads, _ = _world(project, member, seed)
    _same_pages(project, question_set, leads, monkeypatch)
    # The stored rows exist, and a lead outside a group counts none of its documents' items.
    assert ItemState.objects.filter(pool__question_set=question_set).exists()
    hidden = Document.objects.get(project=project, doc_id="board")
    for lead in leads:
        states = gold_state.visible(question_set=question_set, viewer=lead)
        assert not states.items.filter(document=hidden).exists()


def _a_judged_item(question_set):
    return (
        Judgement.objects.filter(
            assignment__pool__question_set=question_set,
            assignment__question__excluded_at__isnull=True,
            assignment__labeller__isnull=False,
        )
        .select_related("assignment", "candidate__version", "assignment__labeller")
        .order_by("pk")
        .first()
    )


def _revision(judgement, subject=ChangeSubject.JUDGEMENT, candidate=True) -> int:
    return Change.objects.filter(
        assignment=judgement.assignment,
        subject=subject,
        candidate=judgement.candidate if candidate else None,
    ).count()


def test_every_kind_of_write_keeps_the_stored_decisions_current(project, member, monkeypatch):
    question_set, leads, labellers = _world(project, member, 7)
    _same_pages(project, question_set, leads, monkeypatch)  # stores every decision
    assert not ItemStateStale.objects.exists()
    judgement = _a_judged_item(question_set)
    assignment, labeller = judgement.assignment, judgement.assignment.labeller
    key = (assignment.pool_id, assignment.question_id)

    def wrote(what) -> None:
        stale = set(ItemStateStale.objects.values_list("pool_id", "question_id"))
        assert key in stale, f"{what} marked nothing stale"
        _same_pages(project, question_set, leads, monkeypatch)
        assert not ItemStateStale.objects.exists(), f"{what}: the page left it stale"

    new_grade = (judgement.grade + 1) % 3
    grading.record_grade(
        assignment=assignment,
        candidate_id=judgement.candidate_id,
        labeller=labeller,
        grade=new_grade,
        revision=_revision(judgement),
    )
    wrote("a grade")
    stored = ItemState.objects.get(candidate=judgement.candidate)
    judgement.refresh_from_db()
    assert judgement.grade == new_grade and stored.kind  # the row was recomputed

    grading.record_grade(
        assignment=assignment,
        candidate_id=judgement.candidate_id,
        labeller=labeller,
        grade=2,
        revision=_revision(judgement),
    )
    version = judgement.candidate.version
    start = judgement.candidate.start
    grading.add_span(
        assignment=assignment,
        candidate_id=judgement.candidate_id,
        labeller=labeller,
        version_id=version.pk,
        start=start,
        end=start + 10,
        quote=version.text[start : start + 10],
        revision=_revision(judgement),
    )
    wrote("a span")

    grading.undo_last_change(assignment=assignment, labeller=labeller)
    wrote("an undo")

    grading.record_verdict(
        assignment=assignment,
        labeller=labeller,
        outcome="cant_tell",
        reason="the policy is unclear",
        revision=_revision(judgement, ChangeSubject.VERDICT, candidate=False),
    )
    wrote("a verdict")

    adjudication.resolve(
        pool=assignment.pool,
        question=assignment.question,
        candidate=judgement.candidate,
        user=leads[0],
        grade=0,
    )
    wrote("a resolution")
    adjudication.resolve(
        pool=assignment.pool,
        question=assignment.question,
        candidate=None,
        user=leads[0],
        outcome="unanswerable",
    )
    wrote("a verdict's resolution")

    exclusion.exclude_question(question=assignment.question, user=leads[0], reason="dupe")
    wrote("an exclusion")
    exclusion.include_question(question=assignment.question, user=leads[0])
    wrote("an inclusion")

    data = json.dumps(
        {
            "question_id": assignment.question.external_id,
            "labeller": "imported",
            "doc_id": version.document.doc_id,
            "start": start,
            "end": start + 40,
            "grade": 2,
        }
    ).encode()
    result = import_judgements(
        project=project, name="j.jsonl", data=data, set_name=question_set.name
    )
    assert result.judgements == 1, result.errors
    imported = Judgement.objects.get(assignment__labeller__username="imported")
    key = (imported.assignment.pool_id, imported.assignment.question_id)
    wrote("an import")


def test_a_grade_marks_its_question_stale_in_one_insert(
    project, member, django_assert_max_num_queries
):
    """The grading request stays O(1 item): the hook is one statement, whatever the set's size."""
    question_set, _, _ = _world(project, member, 3)
    assignment = Assignment.objects.filter(pool__question_set=question_set).first()
    with django_assert_max_num_queries(1):
        gold_state.mark_stale(pool_id=assignment.pool_id, question_id=assignment.question_id)


@pytest.mark.parametrize("seed", range(3))
def test_the_next_item_to_decide_follows_the_same_order_from_the_stored_decisions(
    project, member, seed
):
    question_set, leads, _ = _world(project, member, seed)
    for lead in leads:
        queue = adjudication.adjudication_queue(question_set=question_set, viewer=lead)
        grouped = group_unresolved(resolve_gold(question_set=question_set, viewer=lead).unresolved)
        for from_gold, order in ((False, queue), (True, [e for g in grouped for e in g.entries])):
            keys = [_key(e) for e in order]
            for n, key in enumerate(keys):
                expected = next((k for k in keys[n + 1 :] + keys[:n] if k != key), None)
                found = next_to_decide(
                    question_set=question_set,
                    viewer=lead,
                    pool_id=key[0],
                    question_id=key[1],
                    candidate_id=key[2],
                    from_gold=from_gold,
                )
                assert (found and _key(found)) == expected, (lead.username, from_gold, key)


def _key(entry) -> tuple:
    return (entry.pool.pk, entry.question.pk, entry.candidate.pk if entry.candidate else None)


# Escalation, calibration and leases (main's writes since the store) ------------------------


def _answer(assignment, labeller, grades: dict, outcome="answerable") -> None:
    """Grade each candidate, then give the verdict that finishes the question (through the
    services, so completion, escalation and the hook run as on the grading page)."""
    for candidate, grade in grades.items():
        grading.record_grade(
            assignment=assignment,
            candidate_id=candidate.pk,
            labeller=labeller,
            grade=grade,
            revision=grading._revision(assignment, ChangeSubject.JUDGEMENT, candidate),
        )
    grading.record_verdict(
        assignment=assignment,
        labeller=labeller,
        outcome=outcome,
        reason="",
        revision=grading.verdict_revision(assignment),
    )
    assignment.refresh_from_db()
    assert assignment.completed_at is not None


def _same_as_mains_queue(question_set, leads) -> None:
    """The stored Adjudication page on one page holds main's queue (`adjudication_queue` with
    every section, as its view reads it): the same entries, sections and order."""
    for lead in leads:
        queue = adjudication.adjudication_queue(
            question_set=question_set,
            include_resolved=True,
            include_single_by_access=True,
            include_escalated_waiting=True,
            viewer=lead,
        )
        listing = lead_pages.adjudication_page(question_set=question_set, viewer=lead)
        sections = lead_pages._split(queue)
        shown = (
            listing.open_entries,
            listing.resolved_entries,
            listing.single_entries,
            listing.third_entries,
        )
        totals = (
            listing.open_total,
            listing.resolved_total,
            listing.single_total,
            listing.third_total,
        )
        for mains, stored, total in zip(sections, shown, totals, strict=True):
            assert [_key(e) for e in stored] == [_key(e) for e in mains], lead.username
            assert [(e.kind, e.reason, e.distance, e.moves) for e in stored] == [
                (e.kind, e.reason, e.distance, e.moves) for e in mains
            ]
            assert total == len(mains)


def _same_next(question_set, leads) -> None:
    for lead in leads:
        keys = [
            _key(e) for e in adjudication.adjudication_queue(question_set=question_set, viewer=lead)
        ]
        for n, key in enumerate(keys):
            expected = next((k for k in keys[n + 1 :] + keys[:n] if k != key), None)
            found = next_to_decide(
                question_set=question_set,
                viewer=lead,
                pool_id=key[0],
                question_id=key[1],
                candidate_id=key[2],
            )
            assert (found and _key(found)) == expected, (lead.username, key)


@pytest.mark.parametrize("seed", (1, 2))
def test_escalation_calibration_and_a_released_lease_keep_the_same_pages(
    project, member, monkeypatch, seed
):
    question_set, leads, labellers = _world(project, member, seed)
    project.escalate_on = "two_apart"
    project.lease_minutes = 30
    project.save(update_fields=["escalate_on", "lease_minutes"])
    pool = Pool.objects.filter(question_set=question_set).order_by("pk").first()
    by_doc = {d.doc_id: d.latest_version for d in Document.objects.filter(project=project)}
    question = QuestionFactory(question_set=question_set, external_id="q-esc")
    # c1 and c3 on a document everyone sees (overlapping other questions' passages, so the
    # queue's "questions it can move" counts more than one), c2 on hr's (lead_out never sees).
    c1, c2, c3 = (
        Candidate.objects.create(
            pool=pool, question=question, version=by_doc[doc], start=s, end=s + 60, shuffle_rank=r
        )
        for r, (doc, s) in enumerate((("open-a", 40), ("hr", 10), ("open-a", 150)))
    )
    now = timezone.now()
    first, second = (
        Assignment.objects.create(
            pool=pool, question=question, slot=slot, labeller=labeller, assigned_at=now
        )
        for slot, labeller in ((1, labellers[1]), (2, labellers[2]))
    )
    key = (pool.pk, question.pk)

    def wrote(what) -> None:
        stale = set(ItemStateStale.objects.values_list("pool_id", "question_id"))
        assert key in stale, f"{what} marked nothing stale"
        _same_pages(project, question_set, leads, monkeypatch)
        assert not ItemStateStale.objects.exists(), f"{what}: the page left it stale"
        _same_as_mains_queue(question_set, leads)
        _same_next(question_set, leads)

    _same_pages(project, question_set, leads, monkeypatch)  # stores every decision
    _answer(first, labellers[1], {c1: 0, c2: 2, c3: 1})
    wrote("the first labeller finishing")
    _answer(second, labellers[2], {c1: 2, c2: 0, c3: 1})
    third = Assignment.objects.get(pool=pool, question=question, slot=3)
    assert third.labeller == labellers[0]  # the one other labeller who sees both documents
    assert set(EscalatedItem.objects.values_list("candidate_id", flat=True)) == {c1.pk, c2.pk}
    wrote("the escalation (a third slot)")
    for lead in leads:  # both passages wait for the third labeller, c2 only for who sees it
        listing = lead_pages.adjudication_page(question_set=question_set, viewer=lead)
        expected = {c1.pk, c2.pk} if lead == leads[0] else {c1.pk}
        assert {e.candidate.pk for e in listing.third_entries} == expected

    _answer(third, labellers[0], {c1: 1, c2: 1}, outcome="unanswerable")
    wrote("the third vote")
    entries = lead_pages.adjudication_page(question_set=question_set, viewer=leads[0])
    assert not entries.third_entries
    assert {c1.pk, c2.pk} <= {e.candidate.pk for e in entries.open_entries if e.candidate}

    # The lead decides both; the question is decided (c3 agreed, the first two's verdicts).
    for candidate in (c1, c2):
        adjudication.resolve(
            pool=pool, question=question, candidate=candidate, user=leads[0], grade=1
        )
    wrote("the resolutions")
    verdict = ItemState.objects.get(pool=pool, question=question, candidate=None)
    assert verdict.kind in gold_state.DECIDED

    # A calibration answer on the decided question is no vote: nothing stored changes.
    before = sorted(
        ItemState.objects.filter(question=question).values_list(
            "candidate_id", "kind", "resolved", "single_by_access", "distance", "escalated"
        ),
        key=str,
    )
    calibrating = Assignment.objects.create(
        pool=pool,
        question=question,
        slot=0,
        labeller=labellers[3],
        assigned_at=now,
        purpose="calibration",
    )
    _answer(calibrating, labellers[3], {c1: 2, c3: 0}, outcome="unanswerable")
    wrote("a calibration answer")
    after = sorted(
        ItemState.objects.filter(question=question).values_list(
            "candidate_id", "kind", "resolved", "single_by_access", "distance", "escalated"
        ),
        key=str,
    )
    assert after == before

    # A lease that lapses with nothing graded releases its slot; taking it back holds it again.
    lease_question = QuestionFactory(question_set=question_set, external_id="q-lease")
    Candidate.objects.create(
        pool=pool, question=lease_question, version=by_doc["open-a"], start=45, end=90
    )
    Assignment.objects.create(
        pool=pool, question=lease_question, slot=1, labeller=labellers[1], assigned_at=now
    )
    held = Assignment.objects.create(
        pool=pool,
        question=lease_question,
        slot=2,
        labeller=labellers[3],
        assigned_at=now,
        lease_expires_at=now - timedelta(minutes=1),
    )
    key = (pool.pk, lease_question.pk)
    gold_state.mark_stale(pool_id=pool.pk, question_id=lease_question.pk)
    _same_pages(project, question_set, leads, monkeypatch)
    assert leases.release_lapsed_leases(project=project) == 1
    held.refresh_from_db()
    assert held.labeller is None
    wrote("a released lease")
    assert leases.retake_lapsed(assignment_id=held.pk, labeller=labellers[3])
    wrote("a lapsed slot taken back")


def test_the_stored_pages_never_read_the_votes_once_nothing_is_stale(project, member, monkeypatch):
    """With every decision stored and no document changed, a Gold or Adjudication page is built
    from the stored rows alone: the votes' reader (`gather_votes`) is not called, whatever the
    set's size."""
    question_set, leads, _ = _world(project, member, 1)  # odd seed: no document changed
    _same_pages(project, question_set, leads, monkeypatch)  # stores every decision
    assert not ItemStateStale.objects.exists()

    def no_votes(**kwargs):
        raise AssertionError("a stored page read the votes")

    for module in (gold, adjudication):
        monkeypatch.setattr(module, "gather_votes", no_votes)
    for lead in leads:
        client = login(lead)
        for name, query in QUERIES:
            url = reverse(f"labelling:{name}", args=[project.slug, question_set.pk]) + query
            assert client.get(url).status_code == 200, url


def test_the_stored_version_moves_with_every_refresh_that_writes(project, member):
    question_set, _, _ = _world(project, member, 3)
    gold_state.refresh(question_set=question_set)
    first = gold_state.version(question_set=question_set)
    gold_state.refresh(question_set=question_set)  # nothing stale: nothing written
    assert gold_state.version(question_set=question_set) == first
    pool_id, question_id = (
        ItemState.objects.filter(pool__question_set=question_set, candidate__isnull=True)
        .order_by("pk")
        .values_list("pool_id", "question_id")
        .first()
    )
    gold_state.mark_stale(pool_id=pool_id, question_id=question_id)
    gold_state.refresh(question_set=question_set)  # the same rows again, new ids
    rewritten = gold_state.version(question_set=question_set)
    assert rewritten[0] == first[0] and rewritten[1] > first[1]
    # A refresh that only deletes (the question is no longer assigned) moves the count.
    Assignment.objects.filter(pool_id=pool_id, question_id=question_id).delete()
    gold_state.mark_stale(pool_id=pool_id, question_id=question_id)
    gold_state.refresh(question_set=question_set)
    assert gold_state.version(question_set=question_set)[0] == first[0] - 1
