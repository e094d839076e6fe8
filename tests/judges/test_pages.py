"""The judges' pages as people use them: an admin connects a judge, a lead starts judging and
reads the calibration; bad input is a clear 400, labellers and leads outside a group see
nothing of its documents, and document text stays escaped."""

import pytest
from django.urls import reverse

from corpus.models import Job
from judges.models import AIJudgement, Judge
from judges.services.configuration import add_judge
from tests.factories import login

pytestmark = pytest.mark.usefixtures("allow_local", "inline_jobs")


def form_data(llm, **changes):
    data = {
        "name": "local",
        "template": "openai",
        "url": f"{llm.url}/agree/v1/chat/completions",
        "model": "fake",
        "api_key": "",
        "prompt": "Grade {{passage}} for {{question}} on {{scale}}",
        "temperature": "0",
        "seed": "7",
        "timeout": "10",
        "retries": "1",
        "concurrency": "2",
    }
    return {**data, **changes}


def test_an_admin_connects_a_judge_in_the_browser(project, people, llm):
    browser = login(people["admin"])
    url = reverse("judges:add-judge", kwargs={"slug": project.slug})
    page = browser.get(url)
    assert page.status_code == 200 and b"{{passage}}" in page.content  # the default prompt
    response = browser.post(url, form_data(llm))
    judge = Judge.objects.get(project=project, name="local")
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "judges:show-judge", kwargs={"slug": project.slug, "judge_id": judge.pk}
    )
    assert judge.seed == 7 and judge.prompt.version == 1
    # A changed prompt is a new version; the old one is kept.
    edit = reverse("judges:edit-judge", kwargs={"slug": project.slug, "judge_id": judge.pk})
    data = form_data(llm, prompt="Is {{passage}}\r\nrelevant to {{question}}? JSON please.")
    assert browser.post(edit, data).status_code == 302
    assert list(judge.prompts.values_list("version", flat=True)) == [2, 1]
    # A browser's line breaks are stored as \n: the same text again is the same version.
    assert judge.prompt.text == "Is {{passage}}\nrelevant to {{question}}? JSON please."
    assert browser.post(edit, data).status_code == 302
    assert judge.prompts.count() == 2


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"api_key": "sk-live-123"}, "env:NAME"),
        ({"api_key": "env:SECRET_KEY"}, "Goldset"),
        ({"url": "http://0177.0.0.1/v1"}, "another notation"),
        ({"url": "https://llm.example.com/v1/chat/completions"}, "GOLDSET_HTTP_ALLOWED_HOSTS"),
        ({"url": "http://user:pw@127.0.0.1/v1"}, "user name or password"),
        ({"url": "http://127.0.0.1/v1?api_key=abc"}, "credential"),
        ({"prompt": "Grade this: {{passage}}"}, "{{question}}"),
        ({"prompt": "{{question}} {{passage}} {{secret}}"}, "unknown placeholder"),
        ({"template": "openai", "model": ""}, "model"),
    ],
)
def test_a_bad_judge_is_refused_with_a_clear_message(project, people, llm, changes, message):
    browser = login(people["admin"])
    url = reverse("judges:add-judge", kwargs={"slug": project.slug})
    response = browser.post(url, form_data(llm, **changes))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Judge.objects.exists()


def test_leads_may_not_connect_judges_and_labellers_see_nothing(project, people, llm):
    judge = add_judge(project=project, name="j", url=f"{llm.url}/agree/v1", model="m")
    lead, ann = login(people["lead"]), login(people["ann"])
    slug = project.slug
    assert lead.get(reverse("judges:add-judge", kwargs={"slug": slug})).status_code == 403
    edit = reverse("judges:edit-judge", kwargs={"slug": slug, "judge_id": judge.pk})
    assert lead.post(edit, form_data(llm)).status_code == 403
    for name in ("judges:show-judge", "judges:start-judging"):
        path = reverse(name, kwargs={"slug": slug, "judge_id": judge.pk})
        assert ann.get(path).status_code in (403, 405)
        assert ann.post(path).status_code in (403, 405)
    assert ann.get(reverse("judges:list-judges", kwargs={"slug": slug})).status_code == 403
    assert not Job.objects.exists()


def test_a_lead_starts_judging_and_reads_the_calibration(
    project, people, world, llm, django_capture_on_commit_callbacks
):
    judge = add_judge(
        project=project, name="lenient", url=f"{llm.url}/lenient/v1/chat/completions", model="m"
    )
    browser = login(people["lead"])
    slug = project.slug
    start = reverse("judges:start-judging", kwargs={"slug": slug, "judge_id": judge.pk})
    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post(
            start, {"question_set": world.question_set.pk, "judging_pass": "first"}
        )
    job = Job.objects.get(kind="judge")
    assert response.status_code == 302 and str(job.pk) in response["Location"]
    job_page = browser.get(response["Location"]).content.decode()
    assert "60 candidates judged" in job_page
    page = browser.get(
        reverse("judges:show-judge", kwargs={"slug": slug, "judge_id": judge.pk}),
        {"set": world.question_set.pk},
    ).content.decode()
    assert "Cohen's kappa" in page and "Labeller vs labeller" in page
    assert "60 with adjudicated gold" in page
    assert "about" in page and "items with gold are needed for a ±0.10 interval" in page
    assert "graded above the gold on" in page
    assert "agrees less than the labellers agree with each other" in page
    assert "System rankings" in page and "Kendall's τ 1.00" in page
    # A bad sample is refused with a message, nothing started.
    response = browser.post(
        start, {"question_set": world.question_set.pk, "judging_pass": "first", "sample": "0"}
    )
    assert response.status_code == 302 and Job.objects.filter(kind="judge").count() == 1
    assert "Judging was not started" in browser.get(response["Location"]).content.decode()


def test_document_text_and_answers_stay_escaped_and_restricted(
    project, people, world, llm, member, django_capture_on_commit_callbacks
):
    judge = add_judge(
        project=project,
        name="j",
        url=f"{llm.url}/agree/v1/chat/completions",
        model="m",
        groups=["secret"],
    )
    row = AIJudgement.objects.create(
        judge=judge,
        prompt=judge.prompt,
        candidate=world.candidates[0],
        error="the answer holds no JSON object",
        raw="<script>alert(1)</script>",
    )
    AIJudgement.objects.create(
        judge=judge,
        prompt=judge.prompt,
        candidate=world.secret,
        grade=2,
        quote="<img src=x onerror=alert(2)> bonus pool",
    )
    path = reverse("judges:show-judge", kwargs={"slug": project.slug, "judge_id": judge.pk})
    admin_page = login(people["admin"]).get(path, {"set": world.question_set.pk})
    lead_page = login(people["lead"]).get(path, {"set": world.question_set.pk})
    # Neither the admin nor the lead is in "secret": the secret item is not there for them.
    for page in (admin_page, lead_page):
        assert b"secret-doc" not in page.content and b"bonus pool" not in page.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in admin_page.content
    assert b"<script>alert(1)" not in admin_page.content
    assert b"alert(1)" not in lead_page.content  # the raw answer is for admins only
    insider = member("lead")
    judge.access_groups.get().members.add(insider)
    page = login(insider).get(path, {"set": world.question_set.pk})
    assert b"secret-doc" in page.content
    assert b"&lt;img src=x onerror=alert(2)&gt;" in page.content
    assert row.pk
