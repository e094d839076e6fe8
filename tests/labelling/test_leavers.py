"""A labeller who leaves: their work stays theirs. Accounts with work are deactivated, never
deleted (the database PROTECTs them), and started work is never handed to someone else, through
"Next question" or through the admin."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db.models.deletion import ProtectedError
from django.test import Client
from django.urls import reverse

from labelling.models import Assignment, Change, Judgement, Verdict
from labelling.services import assignments, judgements
from tests.factories import PASSWORD, UserFactory, grading_pool, login

User = get_user_model()


@pytest.fixture
def leaver_world(project, member):
    """A ready pool of two questions: the leaver has graded, noted and marked the first; the
    second is claimed by them but not started."""
    pool = grading_pool(project, questions=2, passages=2)
    leaver, colleague = member("labeller"), member("labeller")
    assignments.plan_assignments(pool=pool, labellers=[], double_count=0)
    first = assignments.claim_assignment(project=project, labeller=leaver)
    candidate = pool.candidates.filter(question=first.question).order_by("shuffle_rank").first()
    judgements.record_grade(
        assignment=first, candidate_id=candidate.pk, labeller=leaver, grade=2, revision=0, seconds=3
    )
    judgements.record_note(
        assignment=first,
        candidate_id=candidate.pk,
        labeller=leaver,
        note="LEAVER-NOTE",
        revision=1,
        seconds=1,
    )
    judgements.record_verdict(
        assignment=first, labeller=leaver, outcome="unanswerable", reason="", revision=0
    )
    second = assignments.claim_assignment(project=project, labeller=leaver)
    assert second is not None and second.pk != first.pk
    superuser = UserFactory(is_staff=True, is_superuser=True)
    return {
        "project": project,
        "pool": pool,
        "leaver": leaver,
        "colleague": colleague,
        "started": first,
        "unstarted": second,
        "admin": login(superuser),
    }


def next_question(client, project) -> str:
    response = client.post(reverse("labelling:next-question", args=[project.slug]))
    assert response.status_code == 302
    return response["Location"]


def test_deleting_an_account_with_work_in_the_admin_is_refused_and_says_deactivate(leaver_world):
    w = leaver_world
    url = reverse("admin:auth_user_delete", args=[w["leaver"].pk])
    page = w["admin"].get(url).content.decode()
    assert "has labelling work, which must stay theirs: deactivate" in page
    assert "Cannot delete user" in page
    response = w["admin"].post(url, {"post": "yes"})
    assert response.status_code in (200, 403)
    assert User.objects.filter(pk=w["leaver"].pk).exists()
    assert Assignment.objects.get(pk=w["started"].pk).labeller_id == w["leaver"].pk
    # And the database itself refuses, whoever asks.
    with pytest.raises(ProtectedError):
        User.objects.get(pk=w["leaver"].pk).delete()


def test_the_next_labeller_never_gets_the_leavers_grades(leaver_world):
    w = leaver_world
    colleague = login(w["colleague"])
    location = next_question(colleague, w["project"])
    # The only slots left are the leaver's: nothing to claim.
    assert location == reverse("labelling:show-queue", args=[w["project"].slug])
    queue = colleague.get(location).content.decode()
    assert "LEAVER-NOTE" not in queue
    assert not Assignment.objects.filter(labeller=w["colleague"]).exists()


def test_a_started_slot_without_its_labeller_is_never_claimed(leaver_world):
    """A slot left without its labeller by an older version (SET_NULL on deletion) keeps its
    grades out of anyone else's hands."""
    w = leaver_world
    Assignment.objects.filter(pk=w["started"].pk).update(labeller=None)
    colleague = login(w["colleague"])
    next_question(colleague, w["project"])
    assert not Assignment.objects.filter(labeller=w["colleague"], pk=w["started"].pk).exists()
    for assignment in Assignment.objects.filter(labeller=w["colleague"]):
        assert not Judgement.objects.filter(assignment=assignment).exists()


def test_deactivating_keeps_started_work_and_frees_the_rest(leaver_world):
    w = leaver_world
    response = w["admin"].post(
        reverse("admin:auth_user_changelist"),
        {"action": "deactivate", "_selected_action": [w["leaver"].pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "is deactivated; 1 unstarted assignment(s) went back to the pool" in (
        response.content.decode()
    )
    leaver = User.objects.get(pk=w["leaver"].pk)
    assert not leaver.is_active
    assert not Client().login(username=leaver.username, password=PASSWORD)
    started = Assignment.objects.get(pk=w["started"].pk)
    assert started.labeller_id == leaver.pk
    assert Judgement.objects.get(assignment=started).note == "LEAVER-NOTE"
    assert Verdict.objects.get(assignment=started).outcome == "unanswerable"
    unstarted = Assignment.objects.get(pk=w["unstarted"].pk)
    assert unstarted.labeller_id is None
    # The colleague now gets the freed question, with nothing of the leaver's in it.
    colleague = login(w["colleague"])
    location = next_question(colleague, w["project"])
    claimed = Assignment.objects.get(labeller=w["colleague"])
    assert claimed.pk == unstarted.pk and str(claimed.question_id) in location
    assert not Judgement.objects.filter(assignment=claimed).exists()
    assert "LEAVER-NOTE" not in colleague.get(location).content.decode()


def test_unticking_active_on_the_account_page_frees_unstarted_work_too(leaver_world):
    w = leaver_world
    leaver = w["leaver"]
    url = reverse("admin:auth_user_change", args=[leaver.pk])
    form = w["admin"].get(url).context["adminform"].form
    data = {
        key: value
        for key, value in form.initial.items()
        if key in form.fields and value is not None and key not in ("groups", "user_permissions")
    }
    data.update(
        username=leaver.username,
        is_active="",
        date_joined_0=leaver.date_joined.strftime("%Y-%m-%d"),
        date_joined_1=leaver.date_joined.strftime("%H:%M:%S"),
    )
    data.pop("date_joined", None)
    data.pop("last_login", None)
    data.pop("password", None)
    response = w["admin"].post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert not User.objects.get(pk=leaver.pk).is_active
    assert Assignment.objects.get(pk=w["unstarted"].pk).labeller_id is None
    assert Assignment.objects.get(pk=w["started"].pk).labeller_id == leaver.pk


def test_the_admin_cannot_hand_started_work_to_someone_else_or_delete_it(leaver_world):
    w = leaver_world
    started = w["started"]
    url = reverse("admin:labelling_assignment_change", args=[started.pk])
    page = w["admin"].get(url)
    assert "labeller" not in page.context["adminform"].form.fields  # read-only
    w["admin"].post(url, {"labeller": w["colleague"].pk, "slot": 1})
    assert Assignment.objects.get(pk=started.pk).labeller_id == w["leaver"].pk
    delete = w["admin"].post(
        reverse("admin:labelling_assignment_delete", args=[started.pk]), {"post": "yes"}
    )
    assert delete.status_code == 403
    changelist = reverse("admin:labelling_assignment_changelist")
    bulk = w["admin"].post(
        changelist,
        {
            "action": "delete_selected",
            "_selected_action": [started.pk, w["unstarted"].pk],
            "post": "yes",
        },
    )
    assert bulk.status_code == 403  # a selection holding started work is refused whole
    assert Assignment.objects.filter(pk__in=[started.pk, w["unstarted"].pk]).count() == 2
    assert Judgement.objects.filter(assignment_id=started.pk).exists()


def test_an_account_without_work_can_still_be_deleted(leaver_world):
    w = leaver_world
    newcomer = UserFactory()
    response = w["admin"].post(
        reverse("admin:auth_user_delete", args=[newcomer.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert not User.objects.filter(pk=newcomer.pk).exists()
    assert Change.objects.filter(made_by=w["leaver"]).exists()
