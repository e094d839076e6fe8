"""Issue 33 item 16: "Run the daily check now" and "Send a test alert" on Index health, which
only a clock and a terminal could do before. The check is a job running the daily task's
service; the test alert goes through the alert channel (admins' email) and says what happened."""

import smtplib

import pytest
from django.core import mail
from django.core.cache import cache
from django.urls import reverse

from corpus.models import Job, JobState
from health.models import IndexHealthCheck
from health.services import alerts
from tests.factories import login


@pytest.fixture(autouse=True)
def no_earlier_test_alert():
    cache.clear()
    yield
    cache.clear()


def page_of(client, project):
    return client.get(reverse("health:show-index-health", args=[project.slug])).content.decode()


def test_a_lead_runs_the_daily_check_now_as_a_job(
    stale_project, member, django_capture_on_commit_callbacks, inline_jobs
):
    project = stale_project.project
    member("admin", username="ada", email="ada@example.org")
    lead = login(member("lead"))
    assert "Run the daily check now" in page_of(lead, project)
    assert "Send a test alert" not in page_of(lead, project)  # the alerts are the admins'
    url = reverse("health:run-daily-check", args=[project.slug])
    with django_capture_on_commit_callbacks(execute=True):
        answer = lead.post(url)
    job = Job.objects.get(kind="daily_index_health_check")
    assert job.state == JobState.SUCCEEDED
    assert answer["Location"] == reverse("corpus:show-job", args=[project.slug, job.pk])
    body = lead.get(answer["Location"]).content.decode()
    assert reverse("health:show-index-health", args=[project.slug]) in body
    assert "Daily check recorded for 1 retriever; 1 crossed a threshold" in body
    assert "the admins were emailed" in body
    # The same record the scheduled task makes: the history and the email.
    check = IndexHealthCheck.objects.get()
    assert check.notified and check.crossed
    (email,) = mail.outbox
    assert email.to == ["ada@example.org"] and "crossed a threshold" in email.subject


def test_a_double_click_follows_the_one_job_waiting(stale_project, member):
    project = stale_project.project
    lead = login(member("lead"))
    url = reverse("health:run-daily-check", args=[project.slug])
    first, second = lead.post(url), lead.post(url)  # no commit in this test: still queued
    (job,) = Job.objects.filter(kind="daily_index_health_check")
    assert job.state == JobState.QUEUED
    assert (
        first["Location"]
        == second["Location"]
        == reverse("corpus:show-job", args=[project.slug, job.pk])
    )


def test_a_double_click_after_a_fast_worker_still_runs_one_check(
    stale_project, member, django_capture_on_commit_callbacks, inline_jobs
):
    project = stale_project.project
    lead = login(member("lead"))
    url = reverse("health:run-daily-check", args=[project.slug])
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            lead.post(url)
    assert Job.objects.filter(kind="daily_index_health_check").count() == 1
    assert IndexHealthCheck.objects.count() == 1


def test_who_may_use_the_buttons(stale_project, member, other_project_admin):
    project = stale_project.project
    check = reverse("health:run-daily-check", args=[project.slug])
    test = reverse("health:send-test-alert", args=[project.slug])
    labeller = login(member("labeller", email="lab@example.org"))
    lead = login(member("lead", email="lea@example.org"))
    assert labeller.post(check).status_code == 403
    assert labeller.post(test).status_code == 403
    assert lead.post(test).status_code == 403
    assert other_project_admin.post(check).status_code == 404
    assert other_project_admin.post(test).status_code == 404
    admin = login(member("admin", email="ada@example.org"))
    assert admin.get(check).status_code == 405 and admin.get(test).status_code == 405
    assert not Job.objects.exists() and not mail.outbox


@pytest.fixture
def other_project_admin(db):
    from tests.factories import MembershipFactory

    return login(MembershipFactory(role="admin").user)


def test_an_admin_sends_a_test_alert_and_a_double_click_sends_one(stale_project, member):
    project = stale_project.project
    member("admin", username="bea", email="bea@example.org")
    admin = login(member("admin", username="ada", email="ada@example.org"))
    member("lead", username="lea", email="lea@example.org")
    url = reverse("health:send-test-alert", args=[project.slug])
    body = admin.post(url, follow=True).content.decode()
    assert "Test alert for 2 admin addresses" in body and "kept in memory" in body
    (email,) = mail.outbox
    assert sorted(email.to) == ["ada@example.org", "bea@example.org"]  # admins only
    assert "test alert" in email.subject and "ada sent this test alert" in email.body
    again = admin.post(url, follow=True).content.decode()
    assert "A test alert was sent less than a minute ago" in again
    assert len(mail.outbox) == 1


def test_no_admin_address_is_said_and_nothing_is_sent(stale_project, member):
    project = stale_project.project
    admin = login(member("admin", email=""))
    body = admin.post(
        reverse("health:send-test-alert", args=[project.slug]), follow=True
    ).content.decode()
    assert "no admin of this project has an email address" in body and not mail.outbox


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "refused the connection"),
        (TimeoutError("timed out"), "did not answer in time"),
        (smtplib.SMTPAuthenticationError(535, b"bad secret s3cr3t"), "user name or password"),
        (OSError("Name or service not known: mail.internal.example"), "could not be reached"),
    ],
)
def test_a_mail_server_failure_is_a_message_without_its_address_or_secret(
    stale_project, member, monkeypatch, error, said
):
    project = stale_project.project
    admin = login(member("admin", email="ada@example.org"))

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(alerts, "send_mail", fail)
    url = reverse("health:send-test-alert", args=[project.slug])
    answer = admin.post(url, follow=True)
    body = answer.content.decode()
    assert answer.status_code == 200 and said in body
    assert "could not be sent" in body
    assert "s3cr3t" not in body and "mail.internal.example" not in body
    # Nothing went, so trying again is allowed straight away (and says the same).
    assert said in admin.post(url, follow=True).content.decode()


def test_a_check_now_whose_alert_cannot_be_sent_fails_in_words_and_records_nothing(
    stale_project, member, monkeypatch, django_capture_on_commit_callbacks, inline_jobs
):
    project = stale_project.project
    member("admin", email="ada@example.org")
    lead = login(member("lead"))

    def fail(*args, **kwargs):
        raise ConnectionRefusedError(111, "Connection refused to smtp.internal.example")

    monkeypatch.setattr(alerts, "send_mail", fail)
    with django_capture_on_commit_callbacks(execute=True):
        answer = lead.post(reverse("health:run-daily-check", args=[project.slug]))
    job = Job.objects.get(kind="daily_index_health_check")
    assert job.state == JobState.FAILED
    body = lead.get(answer["Location"]).content.decode()
    assert "the alert email to the admins could not be sent" in body
    assert "refused the connection" in body and "smtp.internal.example" not in body
    assert not IndexHealthCheck.objects.exists()  # the next check emails as a first crossing
