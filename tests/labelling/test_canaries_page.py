"""Issue 33 item 16: canaries planted from the browser. The project's admins plant them on the
Canaries page with the command's options and checks (one service); planting is a job; the list,
the download and the job's message hold only the canaries the viewer may see."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from corpus.models import Document, Job, JobState
from corpus.services import projects
from labelling.models import Question, QuestionSet
from tests.factories import MembershipFactory, login


@pytest.fixture
def team(project, member):
    people = {
        "adm_in": member("admin", username="adm_in"),
        "adm_out": member("admin", username="adm_out"),
        "lead": member("lead", username="lead"),
        "lab": member("labeller", username="lab"),
    }
    projects.set_access_group_members(
        project=project, name="hr-confidential", users=[people["adm_in"]]
    )
    projects.set_access_group_members(project=project, name="legal", users=[])
    QuestionSet.objects.create(project=project, name="faq")
    return people


def url(project, name="labelling:plant-canaries"):
    return reverse(name, args=[project.slug])


def plant(client, project, capture, **fields):
    data = {"group": "hr-confidential", "count": "2", "set_name": "canaries", **fields}
    with capture(execute=True):
        return client.post(url(project), data)


def test_an_admin_plants_canaries_as_a_job_and_downloads_them(
    project, team, django_capture_on_commit_callbacks, inline_jobs
):
    admin = login(team["adm_in"])
    page = admin.get(url(project)).content.decode()
    assert "Plant canaries" in page and "No canary you may see" in page
    assert '<option value="hr-confidential"' in page and '<option value="legal"' in page
    answer = plant(admin, project, django_capture_on_commit_callbacks)
    job = Job.objects.get(kind="plant_canaries")
    assert answer["Location"] == reverse("corpus:show-job", args=[project.slug, job.pk])
    assert job.state == JobState.SUCCEEDED
    job_page = admin.get(answer["Location"]).content.decode()
    assert "2 canaries planted in hr-confidential" in job_page
    canaries = Document.objects.filter(project=project, is_canary=True)
    assert canaries.count() == 2
    assert all(
        list(c.access_groups.values_list("name", flat=True)) == ["hr-confidential"]
        for c in canaries
    )
    assert Question.objects.filter(question_set__name="canaries", source="canary").count() == 2
    assert QuestionSet.objects.get(name="canaries").is_canary
    page = admin.get(url(project)).content.decode()
    for canary in canaries:
        assert canary.doc_id in page
    download = admin.get(url(project, "labelling:download-canaries"))
    assert download.status_code == 200 and "attachment" in download["Content-Disposition"]
    lines = [json.loads(line) for line in download.content.decode().splitlines()]
    assert sorted(line["doc_id"] for line in lines) == sorted(c.doc_id for c in canaries)
    assert all(line["access_groups"] == ["hr-confidential"] for line in lines)
    assert all("retention code" in line["text"] for line in lines)


def test_an_admin_outside_the_group_learns_nothing_of_the_canaries(
    project, team, django_capture_on_commit_callbacks, inline_jobs
):
    plant(login(team["adm_in"]), project, django_capture_on_commit_callbacks)
    job = Job.objects.get(kind="plant_canaries")
    outsider = login(team["adm_out"])
    page = outsider.get(url(project)).content.decode()
    assert "No canary you may see" in page
    assert not any(c.doc_id in page for c in Document.objects.filter(is_canary=True))
    assert outsider.get(url(project, "labelling:download-canaries")).content == b""
    assert outsider.get(reverse("corpus:show-job", args=[project.slug, job.pk])).status_code == 404
    # Planting for a group one is not in is an admin's right (as for uploads), and the job
    # page they are sent to says it was done without saying more.
    answer = plant(outsider, project, django_capture_on_commit_callbacks, group="legal")
    assert answer.status_code == 302
    assert Document.objects.filter(is_canary=True, access_groups__name="legal").count() == 2
    body = outsider.get(answer["Location"]).content.decode()
    assert "canaries planted" not in body and "legal" not in body and "2 of 2" not in body
    assert "an access group you are not in" in body


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"count": "0"}, "greater than or equal to 1"),
        ({"count": "51"}, "less than or equal to 50"),
        ({"count": "many"}, "Enter a whole number"),
        ({"group": "nobody"}, "Select a valid choice"),
        ({"set_name": "not a slug"}, "Enter a valid"),
        ({"set_name": "faq"}, "faq is a question set of the team&#x27;s questions"),
    ],
)
def test_bad_options_are_refused_with_the_commands_reasons(
    project, team, fields, said, django_capture_on_commit_callbacks
):
    answer = plant(login(team["adm_in"]), project, django_capture_on_commit_callbacks, **fields)
    assert answer.status_code == 400 and said in answer.content.decode()
    assert not Job.objects.exists() and not Document.objects.filter(is_canary=True).exists()


def test_only_the_projects_admins_reach_the_page(project, team):
    other_admin = MembershipFactory(role="admin").user
    for who, status in [("lead", 403), ("lab", 403)]:
        client = login(team[who])
        assert client.get(url(project)).status_code == status
        assert client.post(url(project), {"group": "legal", "count": "1"}).status_code == status
        assert client.get(url(project, "labelling:download-canaries")).status_code == status
    stranger = login(other_admin)
    assert stranger.get(url(project)).status_code == 404
    assert stranger.post(url(project), {"group": "legal", "count": "1"}).status_code == 404
    assert not Job.objects.exists()


def test_a_project_without_access_groups_says_what_to_do_first(project, member):
    admin = login(member("admin"))
    page = admin.get(url(project)).content.decode()
    assert "no access group yet" in page and "<form" not in page.split("<h2>Plant")[1][:400]


def test_the_planting_job_is_the_admins_in_the_group_alone(
    project, team, member, django_capture_on_commit_callbacks, inline_jobs
):
    """Leads never learn of canaries or their question set, in the group or not; an admin
    outside the group does not see another admin's planting job at all."""
    lead_in = member("lead", username="lead_in")
    projects.set_access_group_members(
        project=project, name="hr-confidential", users=[team["adm_in"], lead_in]
    )
    plant(login(team["adm_in"]), project, django_capture_on_commit_callbacks)
    job = Job.objects.get(kind="plant_canaries")
    assert job.description == "Plant canaries"  # no count in a description
    job_url = reverse("corpus:show-job", args=[project.slug, job.pk])
    for who in (lead_in, team["lead"], team["adm_out"]):
        client = login(who)
        assert client.get(job_url).status_code == 404
        for page in ("corpus:list-jobs", "corpus:show-project"):
            body = client.get(reverse(page, args=[project.slug])).content.decode()
            assert "canar" not in body.lower(), (who, page)
    assert (
        "Plant canaries"
        in login(team["adm_in"])
        .get(reverse("corpus:list-jobs", args=[project.slug]))
        .content.decode()
    )


def test_a_double_click_plants_once(project, team, django_capture_on_commit_callbacks, inline_jobs):
    admin = login(team["adm_in"])
    first = plant(admin, project, django_capture_on_commit_callbacks)
    second = plant(admin, project, django_capture_on_commit_callbacks)
    (job,) = Job.objects.filter(kind="plant_canaries")
    assert first["Location"] == second["Location"]
    assert job.state == JobState.SUCCEEDED
    assert Document.objects.filter(project=project, is_canary=True).count() == 2
    # Other options are another planting.
    plant(admin, project, django_capture_on_commit_callbacks, count="1")
    assert Document.objects.filter(project=project, is_canary=True).count() == 3
