"""The Gold and Adjudication pages read stored gold decisions (`labelling.services.gold_state`):
what they show must be exactly what deciding every item again shows, for every viewer, and
stay so after each kind of write."""

import json
import random
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from corpus.models import AccessGroup, Document
from labelling.models import (
    Assignment,
    Candidate,
    Change,
    ChangeSubject,
    ItemState,
    ItemStateStale,
    Judgement,
    Pool,
    Resolution,
    Span,
    Verdict,
)
from labelling.services import adjudication, exclusion, gold_state, lead_pages
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
        states = gold_state.visible_states(question_set=question_set, viewer=lead)
        assert not states.filter(document=hidden).exists()


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
