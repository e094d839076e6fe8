"""Issue 14, items 15–17 on the lead's pages: agreement in plain words and percentages,
per-question rows that link to their items, verdict agreement explained; the guideline
editor's preview; the progress and speed plots; counts with the right noun."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from corpus.models import Document
from corpus.services import projects
from labelling.models import Assignment, Candidate, Guideline, Judgement
from labelling.services import assignments as services
from labelling.services.progress import progress_plots
from labelling.templatetags.plain import counted, percent, signed
from tests.factories import SALARY_TEXT, add_documents, grading_pool, labelled_question_set, login


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lea": member("lead", username="lea"),
    }


def test_filters():
    assert percent(0.3804) == "38%" and percent(0.3804, 1) == "38.0%" and percent(None) == "—"
    assert signed(0.0213) == "+0.021" and signed(-0.5) == "−0.500" and signed(0) == "±0.000"
    assert counted(1, "question,questions") == "1 question"
    assert counted(2, "question,questions") == "2 questions"
    assert counted(0, "passage") == "0 passages"


def test_the_agreement_page_speaks_plainly_and_links_each_question(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"], resolve=False
    )
    page = login(people["lea"]).get(
        reverse("labelling:show-agreement", args=[project.slug, question_set.pk])
    )
    body = page.content.decode()
    # q1: ann and bob agree on one passage (2, 2) and not on the other (0, 1).
    assert "gave <strong>the same grade to 50%</strong> of the 2 passages both graded" in body
    assert "<strong>50.0%</strong>" in body
    assert "The share of passages both labellers gave the same grade." in body
    assert "Agreement beyond chance" in body
    q1 = question_set.questions.get(external_id="q1")
    queue = reverse("labelling:list-adjudication", args=[project.slug, question_set.pk])
    assert f'href="{queue}?question={q1.pk}"' in body
    assert "each labeller says whether the question can be answered" in body
    filtered = login(people["lea"]).get(f"{queue}?question={q1.pk}").content.decode()
    assert "Showing <strong>q1</strong> only." in filtered
    assert "grades differ (0 vs 1)" in filtered


def test_a_passage_only_one_labeller_can_see_is_named_on_the_agreement_page(project, people):
    pool = grading_pool(project, questions=1, passages=2, restricted_group="hr")
    projects.set_access_group_members(
        project=project, name="hr", users=[people["ann"], people["lea"]]
    )
    question = pool.question_set.questions.get()
    now = timezone.now()
    for slot, name in ((1, "ann"), (2, "bob")):
        assignment = Assignment.objects.create(
            pool=pool, question=question, slot=slot, labeller=people[name], assigned_at=now
        )
        for candidate in Candidate.objects.of_assignment(assignment).not_hidden_from(people[name]):
            Judgement.objects.create(assignment=assignment, candidate=candidate, grade=0)
    body = (
        login(people["lea"])
        .get(reverse("labelling:show-agreement", args=[project.slug, pool.question_set.pk]))
        .content.decode()
    )
    assert "1 passage of double-labelled questions counts as single-labelled" in body


def test_the_guideline_editor_previews_without_saving(project, people):
    lea = login(people["lea"])
    preview = reverse("labelling:preview-guideline", args=[project.slug])
    response = lea.post(preview, {"text": "# Grades\n\n**2** fully <script>alert(1)</script>"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Grades</h1>" in html and "<strong>2</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert Guideline.objects.count() == 0
    page = lea.post(
        reverse("labelling:edit-guideline", args=[project.slug]),
        {"text": "Grade *carefully*.", "preview": "1"},
    )
    assert page.status_code == 200 and "<em>carefully</em>" in page.content.decode()
    assert Guideline.objects.count() == 0
    assert login(people["ann"]).post(preview, {"text": "x"}).status_code == 403


def test_progress_and_speed_plots_count_only_what_the_viewer_may_see(project, people):
    pool = grading_pool(project, questions=2, passages=2, restricted_group="hr")
    projects.set_access_group_members(project=project, name="hr", users=[people["ann"]])
    services.plan_assignments(pool=pool, labellers=[people["ann"]], double_share=0)
    now = timezone.now()
    for assignment in Assignment.objects.filter(pool=pool):
        for candidate in Candidate.objects.of_assignment(assignment):
            Judgement.objects.create(
                assignment=assignment, candidate=candidate, grade=1, seconds_spent=30
            )
    # Assigned three hours ago, finished one and two hours ago: three moments, a chart.
    Assignment.objects.filter(pool=pool).update(assigned_at=now - timedelta(hours=3))
    for hours, assignment in enumerate(Assignment.objects.filter(pool=pool).order_by("pk"), 1):
        Assignment.objects.filter(pk=assignment.pk).update(
            completed_at=now - timedelta(hours=hours)
        )
    plots = progress_plots(project=project, viewer=people["lea"])  # outside hr
    (speed,) = plots.speeds
    assert speed.labeller == "ann" and speed.judgements == 2  # the hidden two not counted
    assert speed.per_hour == pytest.approx(120) and speed.median_seconds == 30
    assert speed.describe() == "120 per hour · median 30 s · 2 judgements"
    assert plots.sets == [(pool.question_set.name, 2, 2)]
    assert plots.progress.lines[0].last.title.startswith(f"{pool.question_set.name}: 100% at")
    insider = progress_plots(project=project, viewer=people["ann"])
    assert insider.speeds[0].judgements == 4
    page = login(people["lea"]).get(reverse("labelling:list-assignments", args=[project.slug]))
    body = page.content.decode()
    assert 'class="progress-chart"' in body and "Labeller speed" in body
    assert "120 per hour · median 30 s · 2 judgements" in body


def test_an_untimed_labeller_has_no_rate_and_no_finished_question_no_line(project, people):
    pool = grading_pool(project, questions=1, passages=1)
    services.plan_assignments(pool=pool, labellers=[people["bob"]], double_share=0)
    assignment = Assignment.objects.get(pool=pool)
    Judgement.objects.create(
        assignment=assignment, candidate=pool.candidates.get(), grade=0, seconds_spent=0
    )
    plots = progress_plots(project=project, viewer=people["lea"])
    assert plots.progress is None and plots.speeds[0].per_hour is None
    assert plots.speeds[0].describe() == "1 judgement, not timed"
    body = login(people["lea"]).get(reverse("labelling:list-assignments", args=[project.slug]))
    assert "No question is finished yet" in body.content.decode()


def test_plan_messages_count_with_the_right_noun(project, people):
    pool = grading_pool(project, questions=5, passages=1)
    result = services.plan_assignments(pool=pool, labellers=[people["ann"], people["bob"]])
    assert "6 assignments planned; 1 question double-labelled" in result.describe()


def test_outsiders_see_no_restricted_document_in_history(project, people):
    add_documents(project, ("salaries", SALARY_TEXT, ["hr"]))
    projects.set_access_group_members(project=project, name="hr", users=[people["ann"]])
    pool = grading_pool(project, questions=1, passages=1)
    salaries = Document.objects.get(doc_id="salaries").latest_version
    hidden = Candidate.objects.create(
        pool=pool,
        question=pool.question_set.questions.get(),
        version=salaries,
        start=0,
        end=20,
        shuffle_rank=9,
    )
    services.plan_assignments(pool=pool, labellers=[people["ann"]], double_share=0)
    assignment = Assignment.objects.get(pool=pool)
    from labelling.services import judgements

    for candidate in Candidate.objects.of_assignment(assignment):
        judgements.record_grade(
            assignment=assignment,
            labeller=people["ann"],
            candidate_id=candidate.pk,
            grade=2,
            revision=0,
        )
    page = login(people["lea"]).get(
        reverse("labelling:show-assignment", args=[project.slug, assignment.pk])
    )
    body = page.content.decode()
    history = body.split('<table class="history">')[1]
    assert history.count("</td><td>grade") == 1  # the visible passage's; not the salary one
    assert "salaries" not in body and "Band C" not in body
    assert Judgement.objects.filter(candidate=hidden).exists()  # it is there, just not shown
