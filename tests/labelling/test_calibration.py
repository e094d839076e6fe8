"""Calibration (issue 36 item 4): decided questions mixed blind into labellers' queues, never
counted anywhere else, and each labeller's figures against the lead's decisions."""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils.timezone import now

from corpus.models import AccessGroup, Document
from evaluation.services import gold_sets
from labelling import calibration as stats
from labelling.models import (
    Assignment,
    AssignmentPurpose,
    Candidate,
    Guideline,
    Pool,
)
from labelling.services import adjudication, calibration, judgements
from labelling.services.assignments import next_assignment, progress_by_labeller
from labelling.services.gold import resolve_gold
from labelling.services.votes import gather_votes
from labelling.views.grading import grade_url
from tests.factories import QuestionFactory, ReadyPoolFactory, labelled_question_set, login


class Fixed(random.Random):
    """A draw whose `random()` is always ``value`` (choices stay seeded)."""

    def __init__(self, value: float):
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "cara": member("labeller", username="cara"),
        "lead": member("lead", username="lead"),
        "admin": member("admin", username="admin"),
    }


@pytest.fixture
def world(project, people):
    """`labelled_question_set` (q1's vpn passage decided 0 by the lead, under a guideline whose
    section "Vendor documents" the note names), and an open slot of another set waiting to be
    claimed: real work for cara."""
    Guideline.objects.create(
        project=project,
        version=1,
        text="# Relevance\n\nGrade what answers.\n\n## Vendor documents\n\nA vendor's manual "
        "answers **no** HR question. <script>alert(1)</script>\n\n## Dates\n\nDates matter.",
        created_by=people["lead"],
    )
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    pool = Pool.objects.get(question_set=question_set)
    q1 = question_set.questions.get(external_id="q1")
    vpn = Candidate.objects.get(pool=pool, question=q1, version__document__doc_id="vpn")
    adjudication.resolve(
        pool=pool,
        question=q1,
        candidate=vpn,
        user=people["lead"],
        grade=0,
        note="Not relevant: see Vendor documents. <b>bold</b>",
    )
    # In a set of its own, so the hr gold set is not waiting for it.
    other = ReadyPoolFactory(question_set__project=project)
    open_slot = Assignment.objects.create(
        pool=other, question=QuestionFactory(question_set=other.question_set), slot=1
    )
    return {"set": question_set, "pool": pool, "q1": q1, "vpn": vpn, "open_slot": open_slot}


def serve_cara(project, people, value=0.0):
    return next_assignment(project=project, labeller=people["cara"], rng=Fixed(value))


def answer(assignment, labeller, grades: dict[int, int], verdict="answerable"):
    """Grade each candidate pk, then give the verdict: the question is finished."""
    for candidate_id, grade in grades.items():
        revision = judgements._revision(
            assignment, "judgement", Candidate.objects.get(pk=candidate_id)
        )
        judgements.record_grade(
            assignment=assignment,
            candidate_id=candidate_id,
            labeller=labeller,
            grade=grade,
            revision=revision,
            seconds=12.0,
        )
    judgements.record_verdict(
        assignment=assignment,
        labeller=labeller,
        outcome=verdict,
        reason="",
        revision=judgements.verdict_revision(assignment),
    )
    assignment.refresh_from_db()
    assert assignment.completed_at is not None


def cara_answers(project, people, world, vpn_grade=2):
    calibration.set_share(project=project, percent=50, user=people["lead"])
    served = serve_cara(project, people)
    candidates = Candidate.objects.filter(pool=world["pool"], question=world["q1"])
    grades = {c.pk: (vpn_grade if c.pk == world["vpn"].pk else 0) for c in candidates}
    answer(served, people["cara"], grades)
    return served


# The share and the draw -------------------------------------------------------------------


def test_the_share_is_a_whole_percentage_up_to_half(project, people):
    assert calibration.share_percent(project) == 0
    for bad in (-1, 51, 100):
        with pytest.raises(calibration.CalibrationError, match="0 to 50"):
            calibration.set_share(project=project, percent=bad, user=people["lead"])
    calibration.set_share(project=project, percent=20, user=people["lead"])
    assert calibration.share_percent(project) == 20


def test_without_a_share_next_question_claims_real_work(project, people, world):
    got = serve_cara(project, people)
    assert got.pk == world["open_slot"].pk and got.purpose == AssignmentPurpose.WORK


def test_with_the_share_as_probability_a_decided_question_comes_instead(project, people, world):
    calibration.set_share(project=project, percent=30, user=people["lead"])
    assert serve_cara(project, people, value=0.31).pk == world["open_slot"].pk  # 31 ≥ 30
    Assignment.objects.filter(pk=world["open_slot"].pk).update(labeller=None, assigned_at=None)
    got = serve_cara(project, people, value=0.29)
    assert got.purpose == AssignmentPurpose.CALIBRATION
    # The decided question cara never held, in the same pool, a slot of no one else's.
    assert (got.pool_id, got.question_id, got.slot) == (world["pool"].pk, world["q1"].pk, 0)
    assert got.labeller == people["cara"] and got.assigned_at is not None
    # Held like any other: in her queue, counted, with the claim in its history.
    assert got in Assignment.objects.open_for(people["cara"])
    assert list(got.changes.values_list("action", "after")) == [("claim", {"labeller": "cara"})]
    # One at a time: while it is open, "next" is her own open work, as for any question.
    assert serve_cara(project, people).pk == got.pk
    assert Assignment.objects.calibration().count() == 1


def test_only_questions_the_labeller_never_held_and_may_see(project, people, world):
    # ann and bob labelled q1: nothing is eligible for them.
    for name in ("ann", "bob"):
        assert calibration.eligible_questions(project=project, labeller=people[name]) == []
    assert calibration.eligible_questions(project=project, labeller=people["cara"]) == [
        (world["pool"].pk, world["q1"].pk)
    ]
    # A decided passage cara may not see gives her nothing to be measured on.
    group = AccessGroup.objects.create(project=project, name="it-only")
    Document.objects.get(project=project, doc_id="vpn").access_groups.add(group)
    assert calibration.eligible_questions(project=project, labeller=people["cara"]) == []
    group.members.add(people["cara"])
    assert calibration.eligible_questions(project=project, labeller=people["cara"]) != []
    # Nor a question with an open slot (calibration never takes real work's place).
    Assignment.objects.create(pool=world["pool"], question=world["q1"], slot=3)
    assert calibration.eligible_questions(project=project, labeller=people["cara"]) == []


def test_never_when_no_real_work_waits(project, people, world):
    calibration.set_share(project=project, percent=50, user=people["lead"])
    world["open_slot"].delete()
    # "Nothing left" stays nothing left: a question appearing then would give it away.
    assert serve_cara(project, people) is None
    assert not Assignment.objects.calibration().exists()


# Never counted twice ----------------------------------------------------------------------


def gold_files(gold_set) -> dict[str, bytes]:
    return {n: c for n, c in gold_sets.bundle_files(gold_set).items() if n != "manifest.json"}


def stable_manifest(gold_set) -> dict:
    volatile = {"gold_set", "number", "created_at", "checksum", "files"}  # v1, v2
    return {k: v for k, v in gold_set.manifest.items() if k not in volatile}


def test_calibration_answers_never_reach_votes_gold_progress_or_exports(project, people, world):
    question_set = world["set"]
    before_votes = [
        (q.question.pk, [(i.candidate.pk, [j.pk for j in i.judgements]) for i in q.items])
        for q in gather_votes(question_set=question_set)
    ]
    before_gold = resolve_gold(question_set=question_set)
    before_agreement = adjudication.agreement_report(question_set=question_set, n_boot=50)
    before_progress = [
        (u.username, p) for u, p in progress_by_labeller(project=project, viewer=people["lead"])
    ]
    before_slots = list(Pool.objects.filter(pk=world["pool"].pk).with_slot_counts().values())
    first = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])

    served = cara_answers(project, people, world)
    assert served.judgements.count() == 2 and hasattr(served, "verdict")

    after_votes = [
        (q.question.pk, [(i.candidate.pk, [j.pk for j in i.judgements]) for i in q.items])
        for q in gather_votes(question_set=question_set)
    ]
    assert after_votes == before_votes
    assert resolve_gold(question_set=question_set) == before_gold
    assert adjudication.agreement_report(question_set=question_set, n_boot=50) == before_agreement
    assert [
        (u.username, p) for u, p in progress_by_labeller(project=project, viewer=people["lead"])
    ] == before_progress
    assert (
        list(Pool.objects.filter(pk=world["pool"].pk).with_slot_counts().values()) == before_slots
    )
    second = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    assert gold_files(second) == gold_files(first)  # byte for byte, votes file included
    assert stable_manifest(second) == stable_manifest(first)
    assert b"cara" not in b"".join(gold_sets.bundle_files(second).values())


def test_a_leads_pages_neither_list_nor_move_a_calibration_question(project, people, world):
    served = cara_answers(project, people, world)
    lead = login(people["lead"])
    listing = lead.get(reverse("labelling:list-assignments", args=[project.slug]))
    assert served.pk not in [a.pk for a in listing.context["rows"]]
    assert "cara" not in [u.username for u, _ in listing.context["by_labeller"]]
    url = reverse("labelling:show-assignment", args=[project.slug, served.pk])
    assert lead.get(url).status_code == 404
    unassign = reverse("labelling:unassign-assignment", args=[project.slug, served.pk])
    assert lead.post(unassign).status_code == 404


# Figures ----------------------------------------------------------------------------------


def test_figures_on_an_example_worked_by_hand():
    monday = datetime(2026, 11, 2, 9, tzinfo=UTC)
    pairs = [(0, 0), (1, 2), (2, 2), (0, 1), (2, 1), (1, 1)]  # (gold, grade)
    items = [
        stats.CalibrationItem(
            gold=gold,
            grade=grade,
            seconds=10.0 * (i + 1),
            answered_at=monday + timedelta(days=3 * i),
        )
        for i, (gold, grade) in enumerate(pairs)
    ]
    figures = stats.figures(list(reversed(items)), n_boot=200)
    assert figures.items == 6
    assert figures.percent.value == pytest.approx(0.5)
    # p_o 1/2; gold marginals 2,2,2 and grades 1,3,2 of 6: p_e = (2+6+4)/36 = 1/3.
    assert figures.kappa.value == pytest.approx((1 / 2 - 1 / 3) / (1 - 1 / 3))  # 0.25
    assert figures.kappa.has_interval
    # Quadratic: observed 3/6 (three steps of one), expected 7/6: 1 − (1/2)/(7/6) = 4/7.
    assert figures.kappa_quadratic.value == pytest.approx(4 / 7)
    # grade − gold: 0, +1, 0, +1, −1, 0 → +1/6, lenient, and its interval holds 0.
    assert figures.bias.mean.value == pytest.approx(1 / 6)
    assert figures.bias.leaning == "lenient" and not figures.bias.clear
    assert figures.bias.mean.low < 0 < figures.bias.mean.high
    assert figures.median_seconds == pytest.approx(35.0)
    assert figures.confusion == [[1, 1, 0], [0, 1, 1], [0, 1, 1]]
    # Drift: answered in order, the first three agree 2 of 3 times, the last three 1 of 3.
    assert [(h.label, h.items, h.percent.value) for h in figures.halves] == [
        ("first half", 3, pytest.approx(2 / 3)),
        ("second half", 3, pytest.approx(1 / 3)),
    ]
    assert [(w.label, w.items) for w in figures.weeks] == [
        ("2026-W45", 3),
        ("2026-W46", 2),
        ("2026-W47", 1),
    ]


def test_a_strict_labeller_with_a_clear_lean():
    now = datetime(2026, 11, 2, tzinfo=UTC)
    items = [
        stats.CalibrationItem(gold=2, grade=grade, seconds=1.0, answered_at=now)
        for grade in (1, 1, 0, 1, 1, 1, 0, 1)
    ]
    bias = stats.figures(items, n_boot=200).bias
    assert bias.mean.value == pytest.approx(-10 / 8)
    assert bias.leaning == "strict" and bias.clear
    assert stats.figures([], n_boot=0).bias.leaning == "even"


def test_the_grade_counted_is_the_one_given_before_the_gold_was_shown(project, people, world):
    served = cara_answers(project, people, world, vpn_grade=2)
    # Seeing the lead's 0 on her page, cara changes her grade: the figures keep her answer.
    judgements.record_grade(
        assignment=served,
        candidate_id=world["vpn"].pk,
        labeller=people["cara"],
        grade=0,
        revision=judgements._revision(served, "judgement", world["vpn"]),
    )
    (row,) = calibration.calibration_by_labeller(project=project, viewer=people["lead"], n_boot=50)
    assert row.labeller == people["cara"] and row.questions == 1
    assert [(item.candidate.pk, item.grade, item.gold) for item in row.items] == [
        (world["vpn"].pk, 2, 0)
    ]
    assert row.figures.bias.mean.value == 2.0
    assert row.figures.median_seconds == 12.0


def test_the_guideline_behind_a_decision(project, people, world):
    served = cara_answers(project, people, world)
    (item,) = calibration.calibration_by_labeller(
        project=project, viewer=people["cara"], labeller=people["cara"], n_boot=0
    )[0].disagreements
    assert item.assignment == served
    basis = calibration.guideline_basis(item.resolution, project)
    assert basis.version.version == 1
    assert len(basis.sections) == 1
    assert "Vendor documents" in basis.sections[0] and "<strong>no</strong>" in basis.sections[0]
    assert "Dates" not in basis.sections[0]
    # The guideline's Markdown, rendered as the guideline page does: raw HTML stays text.
    assert "<script>" not in basis.sections[0] and "&lt;script&gt;" in basis.sections[0]


# Pages ------------------------------------------------------------------------------------


def test_my_calibration_shows_the_gold_only_once_the_question_is_finished(project, people, world):
    calibration.set_share(project=project, percent=50, user=people["lead"])
    served = serve_cara(project, people)
    cara = login(people["cara"])
    mine = reverse("labelling:show-my-calibration", args=[project.slug])
    judgements.record_grade(
        assignment=served,
        candidate_id=world["vpn"].pk,
        labeller=people["cara"],
        grade=2,
        revision=0,
    )
    page = cara.get(mine).content.decode()
    assert 'id="calibration-empty"' in page and "Vendor documents" not in page
    rest = Candidate.objects.filter(pool=world["pool"], question=world["q1"]).exclude(
        pk=world["vpn"].pk
    )
    answer(served, people["cara"], {c.pk: 0 for c in rest})
    page = cara.get(mine).content.decode()
    assert 'id="my-calibration"' in page
    assert "You graded it <strong>2</strong>; the lead decided <strong>0</strong>" in page
    # The lead's note is text, never markup; the guideline's section is its rendered Markdown.
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page
    assert "A vendor&#x27;s manual answers <strong>no</strong>" in page or (
        "answers <strong>no</strong> HR question" in page
    )
    assert "?version=1" in page
    # No other labeller, nor who decided.
    for name in ("ann", "bob", "lead"):
        assert f">{name}<" not in page.split("</header>", 1)[1]


def test_a_labellers_page_is_their_own_and_the_leads_page_is_everyones(project, people, world):
    cara_answers(project, people, world)
    ann_page = (
        login(people["ann"])
        .get(reverse("labelling:show-my-calibration", args=[project.slug]))
        .content.decode()
    )
    assert 'id="calibration-empty"' in ann_page and "cara" not in ann_page
    lead_url = reverse("labelling:show-calibration", args=[project.slug])
    page = login(people["lead"]).get(lead_url).content.decode()
    assert '<th scope="row">cara</th>' in page
    assert login(people["ann"]).get(lead_url).status_code == 403
    # Another project's members learn nothing of it.
    stranger = login(people["cara"])
    other = reverse("labelling:show-calibration", args=["no-such-project"])
    assert stranger.get(other).status_code == 404
    assert (
        stranger.get(reverse("labelling:show-my-calibration", args=["no-such-project"])).status_code
        == 404
    )


def test_a_lead_outside_a_group_sees_nothing_of_its_decided_passages(project, people, world):
    cara_answers(project, people, world)
    outsider = people["lead"]
    group = AccessGroup.objects.create(project=project, name="it-only")
    group.members.add(people["cara"], people["admin"])
    Document.objects.get(project=project, doc_id="vpn").access_groups.add(group)
    assert calibration.calibration_by_labeller(project=project, viewer=outsider) == []
    assert calibration.calibration_by_labeller(project=project, viewer=people["admin"]) != []


def test_the_lead_sets_the_share_on_the_page(project, people):
    lead = login(people["lead"])
    url = reverse("labelling:show-calibration", args=[project.slug])
    response = lead.post(url, {"percent": "80"})
    assert response.status_code == 400 and "50" in response.content.decode()
    assert calibration.share_percent(project) == 0
    assert lead.post(url, {"percent": "abc"}).status_code == 400
    assert lead.post(url, {"percent": "25"}).status_code == 302
    assert calibration.share_percent(project) == 25


def test_the_grading_page_and_queue_say_nothing_of_calibration(project, people, world):
    calibration.set_share(project=project, percent=50, user=people["lead"])
    served = serve_cara(project, people)
    work = world["open_slot"]
    Assignment.objects.filter(pk=work.pk).update(labeller=people["cara"], assigned_at=now())
    cara = login(people["cara"])

    def body(url):
        page = cara.get(url).content.decode()
        return page.split("</header>", 1)[1].lower()  # the menu links "My calibration"

    for assignment in (served, work):
        assert "calib" not in body(grade_url(assignment, project.slug))
        assert "purpose" not in body(grade_url(assignment, project.slug))
    queue = body(reverse("labelling:show-queue", args=[project.slug]))
    assert "calib" not in queue
    assert queue.count("<tr>") == 3  # the header and both questions, alike


def test_a_second_labeller_is_never_someone_who_answered_it_for_calibration(project, people, world):
    from labelling.services.assignments import add_second_labellers

    q2, q3 = (world["set"].questions.get(external_id=q) for q in ("q2", "q3"))
    Assignment.objects.create(
        pool=world["pool"],
        question=q2,
        slot=0,
        labeller=people["cara"],
        purpose=AssignmentPurpose.CALIBRATION,
    )
    add_second_labellers(pool=world["pool"], labellers=[people["cara"]], double_count=3)
    seconds = dict(
        Assignment.objects.work()
        .filter(pool=world["pool"], slot=2)
        .values_list("question__external_id", "labeller__username")
    )
    # q2's second slot waits for someone else; cara labels q3.
    assert seconds == {"q1": "bob", "q2": None, "q3": "cara"}


def test_a_leavers_unstarted_calibration_question_goes_and_no_slot_opens(project, people, world):
    from labelling.admin import _release_unstarted

    calibration.set_share(project=project, percent=50, user=people["lead"])
    served = serve_cara(project, people)
    assert served.purpose == AssignmentPurpose.CALIBRATION
    _release_unstarted(people["cara"], by=people["admin"])
    assert not Assignment.objects.filter(pk=served.pk).exists()
    assert not Assignment.objects.work().filter(pool=world["pool"], slot=0).exists()
    assert not Assignment.objects.filter(labeller__isnull=True, slot=0).exists()


class Nth(Fixed):
    """Always draws (`random()` 0), and always chooses the nth of the choices."""

    def __init__(self, nth: int):
        super().__init__(0.0)
        self.nth = nth

    def choice(self, seq):
        return seq[self.nth % len(seq)]


# Races: row locks, so PostgreSQL only. ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_next_questions_at_once_open_one_calibration_question(project, people, world):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite has no row locks; CI runs this on PostgreSQL.")
    # A second decided question, so each request could pick a different one.
    q2 = world["set"].questions.get(external_id="q2")
    candidate = Candidate.objects.filter(pool=world["pool"], question=q2).first()
    adjudication.resolve(
        pool=world["pool"], question=q2, candidate=candidate, user=people["lead"], grade=2
    )
    calibration.set_share(project=project, percent=50, user=people["lead"])
    for _ in range(4):
        Assignment.objects.calibration().delete()
        start = threading.Barrier(2)
        served = []

        def next_for_cara(nth, start=start, served=served):
            try:
                start.wait()
                served.append(
                    next_assignment(project=project, labeller=people["cara"], rng=Nth(nth))
                )
            finally:
                connection.close()

        # Each request draws a different decided question.
        threads = [threading.Thread(target=next_for_cara, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(served) == 2
        assert Assignment.objects.calibration().filter(labeller=people["cara"]).count() == 1
