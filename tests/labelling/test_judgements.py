"""Grades, spans, notes, verdicts, undo, revisions and history — the services behind the page."""

import pytest

from labelling.grading_passages import passages_for_grading
from labelling.models import Assignment, Change, ChangeSubject, Judgement, Span, Verdict
from labelling.services import judgements as services
from labelling.services.completion import assignment_progress
from labelling.services.guidelines import (
    GuidelineError,
    current_guideline,
    render_guideline,
    save_guideline,
)
from tests.factories import POLICY_SENTENCES, POLICY_TEXT, grading_pool


@pytest.fixture
def work(project, member):
    """ana's assignment on the first question of a pool with three passages."""
    ana = member("labeller", username="ana")
    pool = grading_pool(project, questions=2, passages=3)
    question = pool.question_set.questions.order_by("pk").first()
    assignment = Assignment.objects.create(pool=pool, question=question, labeller=ana)
    candidates = list(pool.candidates.filter(question=question).order_by("shuffle_rank"))
    return assignment, candidates, ana


def grade(work, index, value, revision=0, **kwargs):
    assignment, candidates, ana = work
    return services.record_grade(
        assignment=assignment,
        candidate_id=candidates[index].pk,
        labeller=ana,
        grade=value,
        revision=revision,
        **kwargs,
    )


def spans_of(candidate):
    return sorted(Span.objects.filter(judgement__candidate=candidate).values_list("start", "end"))


def test_grading_1_or_2_records_the_passage_as_default_span(work):
    assignment, candidates, ana = work
    grade(work, 0, 2)
    judgement = Judgement.objects.get(candidate=candidates[0])
    assert judgement.grade == 2 and judgement.revision == 1
    (span,) = judgement.spans.all()
    c = candidates[0]
    assert (span.version_id, span.start, span.end) == (c.version_id, c.start, c.end)
    assert span.quote == POLICY_TEXT[c.start : c.end]
    grade(work, 1, 0)
    assert not Judgement.objects.get(candidate=candidates[1]).spans.exists()


def test_every_change_is_appended_to_history_with_before_and_after(work):
    assignment, candidates, ana = work
    grade(work, 0, 1)
    grade(work, 0, 2, revision=1)
    changes = list(Change.objects.filter(assignment=assignment).order_by("pk"))
    assert [c.action for c in changes] == ["grade 1", "grade 2"]
    assert changes[0].before is None and changes[0].after["grade"] == 1
    assert changes[1].before["grade"] == 1 and changes[1].after["grade"] == 2
    assert all(c.made_by == ana and c.subject == ChangeSubject.JUDGEMENT for c in changes)
    assert Judgement.objects.get().revision == 2


@pytest.mark.parametrize("bad", [-1, 3, 7])
def test_grades_outside_0_to_2_are_refused(work, bad):
    with pytest.raises(services.GradingError, match="0 .* 1 .* 2"):
        grade(work, 0, bad)
    assert not Judgement.objects.exists() and not Change.objects.exists()


def test_a_stale_edit_is_refused_and_writes_nothing(work):
    grade(work, 0, 1)
    grade(work, 0, 2, revision=1)  # another tab
    with pytest.raises(services.StaleEdit, match="changed in another tab"):
        grade(work, 0, 0, revision=1)
    assert Judgement.objects.get().grade == 2
    assert Change.objects.count() == 2


def test_a_double_submit_makes_one_row_and_no_conflict(work):
    first = grade(work, 0, 2)
    again = grade(work, 0, 2)  # the same request again, with the same (now old) revision
    assert first.changed and not again.changed
    assert Judgement.objects.count() == 1 and Change.objects.count() == 1


def test_seconds_spent_add_up_and_odd_values_are_ignored(work):
    grade(work, 0, 1, seconds=12.5)
    grade(work, 0, 2, revision=1, seconds="nan")
    grade(work, 0, 1, revision=2, seconds=10_000)
    assert Judgement.objects.get().seconds_spent == 12.5 + services.MAX_SECONDS_PER_ACTION


def test_a_judgement_records_the_guideline_version_it_was_made_under(work):
    assignment, candidates, ana = work
    project = assignment.pool.question_set.project
    save_guideline(project=project, text="Grade 2 when the passage answers fully.", user=ana)
    grade(work, 0, 1)
    v2 = save_guideline(project=project, text="Version two.", user=ana)
    grade(work, 1, 2)
    assert Judgement.objects.get(candidate=candidates[0]).guideline.version == 1
    assert Judgement.objects.get(candidate=candidates[1]).guideline == v2


# Spans ---------------------------------------------------------------------------------------


def add(work, index, start, end, quote=None, revision=1, version=None):
    assignment, candidates, ana = work
    c = candidates[index]
    return services.add_span(
        assignment=assignment,
        candidate_id=c.pk,
        labeller=ana,
        version_id=version or c.version_id,
        start=start,
        end=end,
        quote=POLICY_TEXT[start:end] if quote is None else quote,
        revision=revision,
    )


def test_a_selection_inside_the_default_span_narrows_it(work):
    _, candidates, _ = work
    grade(work, 0, 2)
    start, end = POLICY_SENTENCES[0]
    add(work, 0, start + 10, start + 30)
    assert spans_of(candidates[0]) == [(start + 10, start + 30)]
    assert Span.objects.get().quote == POLICY_TEXT[start + 10 : start + 30]


def test_a_separate_selection_is_added_and_an_overlapping_one_merged(work):
    _, candidates, _ = work
    grade(work, 0, 2)
    add(work, 0, 10, 20)  # narrows the default
    add(work, 0, 40, 50, revision=2)  # beside it
    add(work, 0, 120, 130, revision=3)  # outside the passage, still in the document: allowed
    assert spans_of(candidates[0]) == [(10, 20), (40, 50), (120, 130)]
    add(work, 0, 15, 45, revision=4)  # overlaps two: merged into one
    assert spans_of(candidates[0]) == [(10, 50), (120, 130)]
    again = add(work, 0, 10, 50, revision=5)  # exactly an existing span: nothing to do
    assert not again.changed


@pytest.mark.parametrize(
    ("start", "end", "quote", "message"),
    [
        (10, len(POLICY_TEXT) + 5, "x", "runs past the end"),
        (10, 20, "not the text", "does not match"),
        (20, 10, "", "start before its end"),
        (-1, 10, "", "start before its end"),
    ],
)
def test_bad_spans_are_refused_and_nothing_is_written(work, start, end, quote, message):
    grade(work, 0, 2)
    with pytest.raises(services.GradingError, match=message):
        add(work, 0, start, end, quote=quote)
    assert spans_of(work[1][0]) == [POLICY_SENTENCES[0]]
    assert Change.objects.count() == 1


def test_a_span_must_come_from_the_candidates_own_version(work):
    from tests.factories import DocumentVersionFactory

    _, candidates, _ = work
    grade(work, 0, 2)
    other = DocumentVersionFactory(document__project=work[0].pool.question_set.project)
    with pytest.raises(services.GradingError, match="own document version"):
        add(work, 0, 0, 10, version=other.pk)
    newer = DocumentVersionFactory(document=candidates[0].version.document, version=2)
    with pytest.raises(services.GradingError, match="own document version"):
        add(work, 0, 0, 10, version=newer.pk)


def test_evidence_in_an_ungraded_passage_grades_it_1_in_the_same_change(work):
    """Select, then s, before any grade (issue 14 item 3): the span is recorded, and the grade
    defaults to 1 with a message saying so."""
    assignment, candidates, ana = work
    outcome = add(work, 0, 10, 20, revision=0)
    assert outcome.changed and outcome.message == services.GRADED_BY_SPAN
    judgement = Judgement.objects.get(candidate=candidates[0])
    assert judgement.grade == 1 and spans_of(candidates[0]) == [(10, 20)]  # not the passage
    (change,) = Change.objects.filter(assignment=assignment)
    assert change.action == "add span" and change.before is None
    services.undo_last_change(assignment=assignment, labeller=ana)
    assert not Judgement.objects.filter(candidate=candidates[0]).exists()


def test_evidence_in_a_passage_graded_0_regrades_it_1_and_keeps_the_note(work):
    assignment, candidates, ana = work
    grade(work, 1, 0)
    services.record_note(
        assignment=assignment, candidate_id=candidates[1].pk, labeller=ana, note="hm", revision=1
    )
    c = candidates[1]
    outcome = add(work, 1, c.start, c.start + 5, revision=2)
    assert outcome.message == services.GRADED_BY_SPAN
    judgement = Judgement.objects.get(candidate=c)
    assert (judgement.grade, judgement.note) == (1, "hm")
    assert spans_of(c) == [(c.start, c.start + 5)]
    # On a passage graded 1 or 2 a span is ordinary evidence: no message.
    assert add(work, 1, c.start + 7, c.start + 9, revision=3).message == ""


def test_removing_spans_keeps_at_least_one(work):
    assignment, candidates, ana = work
    grade(work, 0, 2)
    add(work, 0, 40, 50, revision=1)  # inside the default: narrows it
    add(work, 0, 100, 110, revision=2)
    first = Span.objects.get(start=40)
    services.remove_span(
        assignment=assignment,
        candidate_id=candidates[0].pk,
        labeller=ana,
        span_id=first.pk,
        revision=3,
    )
    assert spans_of(candidates[0]) == [(100, 110)]
    last = Span.objects.get()
    with pytest.raises(services.GradingError, match="keeps at least one"):
        services.remove_span(
            assignment=assignment,
            candidate_id=candidates[0].pk,
            labeller=ana,
            span_id=last.pk,
            revision=4,
        )
    with pytest.raises(services.NotInQueue, match="no longer exists"):
        services.remove_span(
            assignment=assignment,
            candidate_id=candidates[0].pk,
            labeller=ana,
            span_id=first.pk,
            revision=4,
        )


# Notes and verdicts ------------------------------------------------------------------------


def test_a_note_needs_a_grade_and_is_kept_with_it(work):
    assignment, candidates, ana = work
    with pytest.raises(services.GradingError, match="Grade this passage before"):
        services.record_note(
            assignment=assignment,
            candidate_id=candidates[0].pk,
            labeller=ana,
            note="hm",
            revision=0,
        )
    grade(work, 0, 1)
    services.record_note(
        assignment=assignment,
        candidate_id=candidates[0].pk,
        labeller=ana,
        note="  only for full-time staff \r\n",
        revision=1,
    )
    assert Judgement.objects.get().note == "only for full-time staff"
    with pytest.raises(services.GradingError, match="at most"):
        services.record_note(
            assignment=assignment,
            candidate_id=candidates[0].pk,
            labeller=ana,
            note="x" * 6000,
            revision=2,
        )


def test_verdicts_and_cant_tell_needs_a_reason(work):
    assignment, _, ana = work
    with pytest.raises(services.GradingError, match="Choose answerable"):
        services.record_verdict(
            assignment=assignment, labeller=ana, outcome="maybe", reason="", revision=0
        )
    with pytest.raises(services.GradingError, match="Say why"):
        services.record_verdict(
            assignment=assignment, labeller=ana, outcome="cant_tell", reason=" ", revision=0
        )
    services.record_verdict(
        assignment=assignment, labeller=ana, outcome="unanswerable", reason="", revision=0
    )
    with pytest.raises(services.StaleEdit):
        services.record_verdict(
            assignment=assignment, labeller=ana, outcome="answerable", reason="", revision=0
        )
    services.record_verdict(
        assignment=assignment, labeller=ana, outcome="cant_tell", reason="jargon", revision=1
    )
    verdict = Verdict.objects.get()
    assert (verdict.outcome, verdict.reason, verdict.revision) == ("cant_tell", "jargon", 2)


def test_the_assignment_is_done_with_a_verdict_and_every_visible_passage_graded(work):
    assignment, candidates, ana = work
    for i in range(3):
        grade(work, i, 0)
    assert Assignment.objects.get(pk=assignment.pk).completed_at is None
    services.record_verdict(
        assignment=assignment, labeller=ana, outcome="unanswerable", reason="", revision=0
    )
    assert Assignment.objects.get(pk=assignment.pk).completed_at is not None
    services.undo_last_change(assignment=assignment, labeller=ana)
    assert Assignment.objects.get(pk=assignment.pk).completed_at is None


# Undo -----------------------------------------------------------------------------------------


def test_undo_walks_back_one_change_at_a_time(work):
    assignment, candidates, ana = work
    c = candidates[0]
    grade(work, 0, 1)
    add(work, 0, 10, 20, revision=1)
    grade(work, 0, 2, revision=2)
    services.record_verdict(
        assignment=assignment, labeller=ana, outcome="answerable", reason="", revision=0
    )
    outcome = services.undo_last_change(assignment=assignment, labeller=ana)
    assert outcome.subject == ChangeSubject.VERDICT and not Verdict.objects.exists()
    outcome = services.undo_last_change(assignment=assignment, labeller=ana)
    assert outcome.candidate == c and "grade 2" in outcome.message
    assert Judgement.objects.get().grade == 1 and spans_of(c) == [(10, 20)]
    services.undo_last_change(assignment=assignment, labeller=ana)
    assert spans_of(c) == [(c.start, c.end)]
    services.undo_last_change(assignment=assignment, labeller=ana)
    assert not Judgement.objects.exists()
    with pytest.raises(services.GradingError, match="Nothing to undo"):
        services.undo_last_change(assignment=assignment, labeller=ana)
    actions = list(Change.objects.order_by("pk").values_list("action", flat=True))
    assert actions[:4] == ["grade 1", "add span", "grade 2", "verdict answerable"]
    assert actions[4:] == ["undo"] * 4  # history is only ever appended to
    assert Change.objects.filter(undoes__isnull=False).count() == 4


def test_revisions_keep_growing_after_an_undo_removed_the_row(work):
    grade(work, 0, 1)
    assignment, _, ana = work
    services.undo_last_change(assignment=assignment, labeller=ana)
    with pytest.raises(services.StaleEdit):
        grade(work, 0, 2, revision=0)  # a page from before the first grade
    grade(work, 0, 2, revision=2)
    assert Judgement.objects.get().revision == 3


# Access ---------------------------------------------------------------------------------------


def test_another_labellers_assignment_cannot_be_written(work, member):
    assignment, candidates, _ = work
    ben = member("labeller", username="ben")
    with pytest.raises(services.NotInQueue, match="not in your queue"):
        services.record_grade(
            assignment=assignment,
            candidate_id=candidates[0].pk,
            labeller=ben,
            grade=1,
            revision=0,
        )
    with pytest.raises(services.NotInQueue):
        services.undo_last_change(assignment=assignment, labeller=ben)
    assert not Judgement.objects.exists()


def test_a_candidate_of_another_question_is_refused(work):
    assignment, _, ana = work
    other = assignment.pool.candidates.exclude(question=assignment.question).first()
    with pytest.raises(services.GradingError, match="another question") as info:
        services.record_grade(
            assignment=assignment, candidate_id=other.pk, labeller=ana, grade=1, revision=0
        )
    assert info.value.status == 400
    assert not Judgement.objects.exists()


def test_a_passage_from_a_document_hidden_by_access_groups_does_not_exist(project, member):
    ana = member("labeller", username="ana")
    pool = grading_pool(project, questions=1, passages=3, restricted_group="hr")
    assignment = Assignment.objects.create(
        pool=pool, question=pool.question_set.questions.get(), labeller=ana
    )
    hidden = pool.candidates.get(version__document__access_groups__name="hr")
    with pytest.raises(services.NotInQueue, match="No such passage") as info:
        services.record_grade(
            assignment=assignment, candidate_id=hidden.pk, labeller=ana, grade=2, revision=0
        )
    assert info.value.status == 404 and not Judgement.objects.exists()
    # Done means every passage ana can see: the hidden one does not count.
    for c in pool.candidates.exclude(pk=hidden.pk):
        services.record_grade(
            assignment=assignment, candidate_id=c.pk, labeller=ana, grade=0, revision=0
        )
    services.record_verdict(
        assignment=assignment, labeller=ana, outcome="unanswerable", reason="", revision=0
    )
    assert Assignment.objects.get(pk=assignment.pk).completed_at is not None


# Guideline ------------------------------------------------------------------------------------


def test_each_guideline_edit_is_a_new_version_and_unchanged_text_is_not(project, member):
    lead = member("lead")
    v1 = save_guideline(project=project, text="# Grades\n\n2 = answers fully.", user=lead)
    same = save_guideline(project=project, text="# Grades\n\n2 = answers fully.\n", user=lead)
    v2 = save_guideline(project=project, text="# Grades\n\n2 = fully; 1 = partly.", user=lead)
    assert (v1.version, same.pk, v2.version) == (1, v1.pk, 2)
    assert current_guideline(project) == v2
    with pytest.raises(GuidelineError, match="cannot be empty"):
        save_guideline(project=project, text="   ", user=lead)


def test_guideline_markdown_is_rendered_safely():
    html = render_guideline(
        "# Grades\n\n**2** fully answers.\n\n<script>alert(1)</script>\n\n"
        '<img src=x onerror="alert(2)">\n\n[click](javascript:alert(3)) [ok](https://example.org)'
    )
    assert "<h1>Grades</h1>" in html and "<strong>2</strong>" in html
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
    assert "&lt;script&gt;" in html  # shown as text, not run
    assert 'href="https://example.org"' in html and "noopener" in html


def test_members_of_the_documents_access_group_may_grade_it(project, member):
    from corpus.models import AccessGroup

    hana = member("labeller", username="hana")
    pool = grading_pool(project, questions=1, passages=3, restricted_group="hr")
    AccessGroup.objects.get(project=project, name="hr").members.add(hana)
    assignment = Assignment.objects.create(
        pool=pool, question=pool.question_set.questions.get(), labeller=hana
    )
    hidden = pool.candidates.get(version__document__access_groups__name="hr")
    services.record_grade(
        assignment=assignment, candidate_id=hidden.pk, labeller=hana, grade=2, revision=0
    )
    assert Judgement.objects.get().candidate == hidden
    assert assignment_progress(assignment, hana).total == 3


def test_the_grading_query_follows_the_access_rule_and_the_stored_text(project, member):
    """`passages_for_grading` agrees with the
    ORM's access rule (`not_hidden_from`) and with the stored text, on every database."""
    from corpus.models import AccessGroup

    inside, outside = member("labeller", username="in"), member("labeller", username="out")
    pool = grading_pool(project, questions=1, passages=3, restricted_group="hr")
    AccessGroup.objects.get(project=project, name="hr").members.add(inside)
    question = pool.question_set.questions.get()
    for slot, user in enumerate((inside, outside), start=1):
        assignment = Assignment.objects.create(
            pool=pool, question=question, slot=slot, labeller=user
        )
        expected = list(
            pool.candidates.not_hidden_from(user)
            .order_by("shuffle_rank", "pk")
            .values_list("pk", flat=True)
        )
        rows = passages_for_grading(assignment=assignment, user=user, context_chars=40)
        assert [row.pk for row in rows] == expected
        assert len(expected) == (3 if user == inside else 2)
        first = rows[0]
        services.record_grade(
            assignment=assignment, candidate_id=first.pk, labeller=user, grade=1, revision=0
        )
        (again,) = passages_for_grading(
            assignment=assignment, user=user, context_chars=40, candidate_id=first.pk
        )
        text = first.version.text
        assert again.graded is True and again.revision == 1
        assert again.passage == text[first.start : first.end]
        assert again.window_start == max(0, first.start - 40)
        assert again.window == text[again.window_start : first.end + 40]
        assert rows[1].graded is False and rows[1].revision == 0


def test_an_item_a_lead_resolved_answers_a_labellers_edit_as_any_other_item(work):
    """Issue 12 item 8: refusing the edit ("a lead has reviewed this") would tell the labeller
    the question was double-labelled and disputed. The edit is saved like any other; the
    resolution stays what the gold set takes."""
    from labelling.models import Resolution

    assignment, candidates, ana = work
    grade(work, 0, 2)
    grade(work, 1, 2)
    resolution = Resolution.objects.create(
        pool=assignment.pool, question=assignment.question, candidate=candidates[0], grade=1
    )
    resolved = grade(work, 0, 0, revision=1)
    unresolved = grade(work, 1, 0, revision=1)
    assert (resolved.changed, resolved.message, resolved.revision) == (
        unresolved.changed,
        unresolved.message,
        unresolved.revision,
    )
    assert Judgement.objects.get(candidate=candidates[0]).grade == 0
    undone = services.undo_last_change(assignment=assignment, labeller=ana)
    assert undone.candidate == candidates[1]
    services.undo_last_change(assignment=assignment, labeller=ana)
    assert Judgement.objects.get(candidate=candidates[0]).grade == 2
    Resolution.objects.create(
        pool=assignment.pool, question=assignment.question, candidate=None, outcome="answerable"
    )
    verdict = services.record_verdict(
        assignment=assignment, labeller=ana, outcome="unanswerable", reason="", revision=0
    )
    assert verdict.changed and verdict.message == ""
    # The history keeps the vote the lead saw; the lead's decision is untouched.
    assert [c.action for c in Change.objects.filter(candidate=candidates[0]).order_by("pk")] == [
        "grade 2",
        "grade 0",
        "undo",
    ]
    resolution.refresh_from_db()
    assert resolution.grade == 1
