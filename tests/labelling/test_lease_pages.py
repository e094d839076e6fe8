"""Leases as people see them: the grading page's "Yours until", the refusal a labeller gets
once their lapsed question is someone else's, the lead's Assignments page and its setting."""

import re
from datetime import timedelta
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from labelling.models import Assignment, Judgement
from labelling.services import assignments as services
from labelling.services import judgements, leases
from tests.factories import ProjectFactory, grading_pool
from tests.labelling.test_grading_views import HTMX, client_for, fast_user, flash

LOST = (
    "This question went back to the pool after 60 minutes without work and another labeller "
    "has it now."
)


class Lapsed:
    """ana claimed the pool's one question and left it; her lease ran out."""

    def __init__(self, project):
        self.project = project
        self.ana = fast_user(project, username="ana")
        self.ben = fast_user(project, username="ben")
        self.lead = fast_user(project, "lead", username="lena")
        self.pool = grading_pool(project, questions=1, passages=2)
        services.plan_assignments(pool=self.pool, labellers=[], double_share=0)
        self.slot = services.claim_assignment(project=project, labeller=self.ana)
        self.c1, self.c2 = self.pool.candidates.order_by("pk")
        self.page = reverse(
            "labelling:grade-question",
            kwargs={
                "slug": project.slug,
                "pool_id": self.pool.pk,
                "question_id": self.slot.question_id,
            },
        )

    def run_out(self):
        Assignment.objects.filter(pk=self.slot.pk).update(
            lease_expires_at=timezone.now() - timedelta(minutes=1)
        )

    def grade_url(self, candidate):
        return f"{self.page}candidates/{candidate.pk}/grade/"

    def ben_takes_it(self):
        self.run_out()
        taken = services.claim_assignment(project=self.project, labeller=self.ben)
        assert taken.pk == self.slot.pk
        judgements.record_grade(
            assignment=taken, candidate_id=self.c1.pk, labeller=self.ben, grade=1, revision=0
        )
        judgements.record_note(
            assignment=taken,
            candidate_id=self.c1.pk,
            labeller=self.ben,
            note="BEN-PRIVATE-NOTE",
            revision=1,
        )
        return taken


@pytest.fixture
def lapsed(project):
    return Lapsed(project)


def hhmm(moment) -> str:
    return timezone.localtime(moment).strftime("%H:%M")


def lease_text(body: str) -> str:
    match = re.search(r'<p id="lease"[^>]*>(.*?)</p>', body, re.S)
    return re.sub(r"<[^>]+>", "", unescape(match.group(1))).strip() if match else ""


def test_the_status_bar_says_until_when_the_question_is_yours(lapsed):
    body = client_for(lapsed.ana).get(lapsed.page).content.decode()
    lapsed.slot.refresh_from_db()
    assert lease_text(body) == f"Yours until {hhmm(lapsed.slot.lease_expires_at)}"


def test_a_planned_question_shows_no_lease(project):
    ana = fast_user(project)
    pool = grading_pool(project, questions=1, passages=1)
    services.plan_assignments(pool=pool, labellers=[ana])
    assignment = Assignment.objects.get(pool=pool)
    page = reverse(
        "labelling:grade-question",
        kwargs={"slug": project.slug, "pool_id": pool.pk, "question_id": assignment.question_id},
    )
    body = client_for(ana).get(page).content.decode()
    assert lease_text(body) == "" and "Yours until" not in body


def test_opening_the_page_and_grading_renew_the_lease(lapsed):
    client = client_for(lapsed.ana)
    lapsed.run_out()
    assert client.get(lapsed.page).status_code == 200
    lapsed.slot.refresh_from_db()
    assert lapsed.slot.lease_expires_at > timezone.now() + timedelta(minutes=59)
    lapsed.run_out()
    answer = client.post(lapsed.grade_url(lapsed.c1), {"grade": 2, "revision": 0}, **HTMX)
    assert answer.status_code == 200
    lapsed.slot.refresh_from_db()
    assert lapsed.slot.lease_expires_at > timezone.now() + timedelta(minutes=59)
    assert lease_text(answer.content.decode()) == (
        f"Yours until {hhmm(lapsed.slot.lease_expires_at)}"
    )


def test_a_lapsed_question_nobody_took_is_taken_back_by_the_next_grade(lapsed):
    lapsed.run_out()
    assert leases.release_lapsed_leases() == 1
    answer = client_for(lapsed.ana).post(
        lapsed.grade_url(lapsed.c1), {"grade": 2, "revision": 0}, **HTMX
    )
    assert answer.status_code == 200, answer.content
    assert Judgement.objects.get().assignment.labeller == lapsed.ana
    lapsed.slot.refresh_from_db()
    assert lapsed.slot.labeller == lapsed.ana


def test_or_by_opening_its_page(lapsed):
    lapsed.run_out()
    leases.release_lapsed_leases()
    assert client_for(lapsed.ana).get(lapsed.page).status_code == 200
    lapsed.slot.refresh_from_db()
    assert lapsed.slot.labeller == lapsed.ana


def test_a_write_on_a_question_another_labeller_took_says_so_and_shows_nothing_of_theirs(
    lapsed,
):
    lapsed.ben_takes_it()
    answer = client_for(lapsed.ana).post(
        lapsed.grade_url(lapsed.c1), {"grade": 2, "revision": 0}, **HTMX
    )
    body = answer.content.decode()
    assert answer.status_code == 409 and answer["X-Goldset-Refused"] == "lease-lost"
    assert flash(answer).startswith(LOST)
    assert "No longer yours. Go on to your next question" in lease_text(body)
    assert f'href="{reverse("labelling:show-queue", args=[lapsed.project.slug])}"' in body
    assert "BEN-PRIVATE-NOTE" not in body and "ben" not in body
    assert f"candidate-{lapsed.c1.pk}" not in body and "X-Goldset-Subject" not in answer
    assert list(Judgement.objects.values_list("assignment__labeller", "grade", "note")) == [
        (lapsed.ben.pk, 1, "BEN-PRIVATE-NOTE")
    ]
    # The verdict and undo are refused the same way.
    verdict = client_for(lapsed.ana).post(
        f"{lapsed.page}verdict/", {"outcome": "unanswerable", "revision": 0}, **HTMX
    )
    assert verdict.status_code == 409 and flash(verdict).startswith(LOST)


def test_without_javascript_the_refusal_goes_to_the_queue_with_the_message(lapsed):
    lapsed.ben_takes_it()
    client = client_for(lapsed.ana)
    answer = client.post(lapsed.grade_url(lapsed.c1), {"grade": 2, "revision": 0})
    assert answer.status_code == 302
    assert answer["Location"] == reverse("labelling:show-queue", args=[lapsed.project.slug])
    queue = client.get(answer["Location"]).content.decode()
    assert LOST in unescape(queue) and "BEN-PRIVATE-NOTE" not in queue
    # Opening the old page again says the same.
    page = client.get(lapsed.page, follow=True)
    assert LOST in unescape(page.content.decode())
    assert "BEN-PRIVATE-NOTE" not in page.content.decode()


def test_a_refused_write_on_a_lapsed_question_shows_nothing_of_it(lapsed):
    lapsed.run_out()
    leases.release_lapsed_leases()
    # A lead gave it to ben and took it back: not a lost lease, and not ana's any more.
    services.reassign(assignment=lapsed.slot, labeller=lapsed.ben, user=lapsed.lead)
    services.unassign(assignment=lapsed.slot, user=lapsed.lead)
    answer = client_for(lapsed.ana).post(
        lapsed.grade_url(lapsed.c1), {"grade": 2, "revision": 0}, **HTMX
    )
    assert answer.status_code == 404 and flash(answer) == "This question is not in your queue."
    assert f"candidate-{lapsed.c1.pk}" not in answer.content.decode()


def test_a_lapsed_question_taken_back_by_a_refused_write_stays_in_the_pool(lapsed):
    lapsed.run_out()
    leases.release_lapsed_leases()
    note = client_for(lapsed.ana).post(
        f"{lapsed.page}candidates/{lapsed.c1.pk}/note/", {"note": "x", "revision": 0}, **HTMX
    )
    assert note.status_code == 400
    assert flash(note) == "Grade this passage before writing a note about it."
    assert f"candidate-{lapsed.c1.pk}" not in note.content.decode()
    lapsed.slot.refresh_from_db()
    assert lapsed.slot.labeller is None  # the refusal undid the taking back
    assert not lapsed.slot.changes.filter(action=leases.RETAKEN).exists()


def test_others_learn_nothing_from_the_lease_paths(lapsed):
    lapsed.ben_takes_it()
    cem = fast_user(lapsed.project, username="cem")
    answer = client_for(cem).post(lapsed.grade_url(lapsed.c1), {"grade": 2, "revision": 0}, **HTMX)
    assert answer.status_code == 404 and "pool" not in flash(answer)
    assert client_for(cem).get(lapsed.page).status_code == 404
    # ana in another project, at the same ids: a plain 404.
    other = ProjectFactory()
    fast_user(other, username="ana2")
    url = lapsed.page.replace(f"/p/{lapsed.project.slug}/", f"/p/{other.slug}/")
    assert client_for(lapsed.ana).get(url).status_code == 404


# The lead's side ---------------------------------------------------------------------------


def assignments_page(client, project, **query):
    url = reverse("labelling:list-assignments", args=[project.slug])
    return client.get(url, query).content.decode()


def row_of(body: str, assignment) -> str:
    return re.search(rf'<tr id="assignment-{assignment.pk}">(.*?)</tr>', body, re.S).group(1)


def test_the_assignments_page_shows_leases_and_stale_started_work(lapsed):
    lead = client_for(lapsed.lead)
    lapsed.slot.refresh_from_db()
    row = row_of(assignments_page(lead, lapsed.project), lapsed.slot)
    assert f"until {hhmm(lapsed.slot.lease_expires_at)}" in re.sub(r"<[^>]+>", "", row)
    judgements.record_grade(
        assignment=lapsed.slot, candidate_id=lapsed.c1.pk, labeller=lapsed.ana, grade=2, revision=0
    )
    lapsed.run_out()
    assert leases.release_lapsed_leases() == 0
    body = assignments_page(lead, lapsed.project)
    assert 'class="badge warn"' in row_of(body, lapsed.slot) and ">stale<" in row_of(
        body, lapsed.slot
    )
    stale = assignments_page(lead, lapsed.project, pool=lapsed.pool.pk, status="stale")
    assert f'id="assignment-{lapsed.slot.pk}"' in stale
    fresh = assignments_page(lead, lapsed.project, pool=lapsed.pool.pk, status="not_started")
    assert f'id="assignment-{lapsed.slot.pk}"' not in fresh


def test_leads_and_admins_set_the_lease_with_validation(lapsed):
    url = reverse("labelling:edit-lease", args=[lapsed.project.slug])
    lead = client_for(lapsed.lead)
    answer = lead.post(url, {"lease_minutes": "20"})
    assert answer.status_code == 302
    lapsed.project.refresh_from_db()
    assert lapsed.project.lease_minutes == 20
    assert "stays theirs for 20 minutes" in unescape(lead.get(answer["Location"]).content.decode())
    for bad, message in [
        ("-5", "Give a number of minutes, 0 or more (0: no limit)."),
        ("soon", "Give a whole number of minutes (0: no limit)."),
        ("99999", "At most 10,080 minutes (a week)."),
    ]:
        refused = lead.post(url, {"lease_minutes": bad})
        assert refused.status_code == 400
        assert message in unescape(refused.content.decode())
    lapsed.project.refresh_from_db()
    assert lapsed.project.lease_minutes == 20
    admin = fast_user(lapsed.project, "admin", username="adam")
    assert client_for(admin).post(url, {"lease_minutes": ""}).status_code == 302
    lapsed.project.refresh_from_db()
    assert lapsed.project.lease_minutes == 0


def test_labellers_and_strangers_cannot_set_the_lease(lapsed):
    url = reverse("labelling:edit-lease", args=[lapsed.project.slug])
    assert client_for(lapsed.ana).post(url, {"lease_minutes": "1"}).status_code in (403, 404)
    stranger = fast_user(None, username="stranger")
    assert client_for(stranger).post(url, {"lease_minutes": "1"}).status_code == 404
    other = ProjectFactory()
    other_lead = fast_user(other, "lead", username="olga")
    assert client_for(other_lead).post(url, {"lease_minutes": "1"}).status_code == 404
    assert client_for(lapsed.ana).get(url).status_code == 405
    lapsed.project.refresh_from_db()
    assert lapsed.project.lease_minutes == 60
