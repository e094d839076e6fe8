"""Index health alerts: per-project thresholds, the daily beat task's history, the project
page's banner and the admins' email when a threshold is first crossed (locmem backend)."""

import datetime

import pytest
from django.core import mail
from django.urls import reverse

from health.models import IndexHealthCheck, IndexHealthThresholds
from health.services import manifests
from health.tasks import check_index_health
from tests.factories import login
from tests.health.test_index_health import (
    GOOD,
    NEW_POLICY,
    VPN,
    manifest_text,
    sha,
)


def test_thresholds_are_set_per_project_and_bad_values_are_refused(project, member):
    lead = login(member("lead"))
    url = reverse("health:edit-health-thresholds", args=[project.slug])
    response = lead.post(url, {"max_stale": "2", "max_lag_days": "7"})
    assert response.status_code == 400 and "A share between 0 and 1." in response.content.decode()
    assert not IndexHealthThresholds.objects.exists()
    response = lead.post(
        url, {"max_stale": "0.2", "max_lag_days": "3", "fail_on_model_mix": "on"}, follow=True
    )
    assert "Thresholds saved" in response.content.decode()
    saved = IndexHealthThresholds.objects.get(project=project)
    assert (saved.max_stale, saved.max_lag_days, saved.fail_on_model_mix, saved.max_crowding) == (
        0.2,
        3,
        True,
        None,
    )


def test_the_alert_path_end_to_end(stale_project, member):
    project = stale_project.project
    admin = member("admin", username="ada", email="ada@example.org")
    member("admin", username="noemail", email="")
    lead = member("lead", username="lea", email="lea@example.org")

    assert check_index_health.apply().get() == 1  # the beat task, run as the worker runs it
    (check,) = IndexHealthCheck.objects.all()
    assert check.stale_share == 0.5 and check.lag_oldest_days == pytest.approx(9, abs=0.01)
    assert [c["check"] for c in check.crossed] == ["stale", "lag", "model_mix"] and check.notified
    (email,) = mail.outbox
    assert email.to == ["ada@example.org"]  # admins only, those with an address
    assert "team" in email.subject and "1 of 2 searchable documents are stale" in email.body
    assert f"/p/{project.slug}/index-health/" in email.body

    # The project page loads the banner; it says what was crossed.
    page = login(admin).get(reverse("corpus:show-project", args=[project.slug])).content.decode()
    assert reverse("health:show-health-banner", args=[project.slug]) in page
    banner = (
        login(lead).get(reverse("health:show-health-banner", args=[project.slug])).content.decode()
    )
    assert "team: the oldest stale document lags 9.0 days (limit 7)" in banner

    # Still crossed the next day: recorded, not emailed again.
    check_index_health.apply()
    assert IndexHealthCheck.objects.count() == 2 and len(mail.outbox) == 1

    # The team re-indexes: the check passes, the banner goes; a new crossing emails again.
    fresh = manifest_text(
        f"policy,2,{sha(NEW_POLICY)},,,2026-11-30T00:00:00Z,minilm,r1,384\n",
        f"vpn,1,{sha(VPN)},,,2026-11-30T00:00:00Z,minilm,r1,384\n",
    )
    manifests.import_manifest(retriever=stale_project, data=fresh, file_name="fresh.csv")
    check_index_health.apply()
    assert IndexHealthCheck.objects.latest("pk").crossed == []
    banner = (
        login(lead).get(reverse("health:show-health-banner", args=[project.slug])).content.decode()
    )
    assert "Index health" not in banner
    manifests.import_manifest(retriever=stale_project, data=GOOD, file_name="index.csv")
    check_index_health.apply()
    assert len(mail.outbox) == 2

    # The history plot and its rows: four daily checks (run here within a minute, so dated a
    # day apart as the beat task would have run them; within a minute they are written out).
    for days, check in enumerate(IndexHealthCheck.objects.order_by("-pk")):
        IndexHealthCheck.objects.filter(pk=check.pk).update(
            checked_at=check.checked_at - datetime.timedelta(days=days)
        )
    health = (
        login(lead).get(reverse("health:show-index-health", args=[project.slug])).content.decode()
    )
    assert health.count("<polyline") == 2 and health.count("<td>50%</td>") == 3


def test_the_check_index_health_command_records_and_prints(stale_project, capsys):
    from django.core.management import call_command

    call_command("check_index_health", "--project", stale_project.project.slug)
    assert IndexHealthCheck.objects.count() == 1
    assert "team: 1 of 2 searchable documents are stale" in capsys.readouterr().out
