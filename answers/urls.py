from django.urls import path

from answers import views as answers

app_name = "answers"

_set = "p/<slug:slug>/sets/<int:set_id>/"

urlpatterns = [
    path(_set + "answers/", answers.list_answer_runs, name="list-answer-runs"),
    path(_set + "answers/plan/", answers.plan_answer_review, name="plan-answer-review"),
    path(
        _set + "answers/adjudication/",
        answers.list_answer_adjudication,
        name="list-answer-adjudication",
    ),
    path(_set + "answers/resolve/", answers.resolve_answer, name="resolve-answer"),
    path(_set + "answers/decide/", answers.decide_answer_item, name="decide-answer-item"),
    path("p/<slug:slug>/reviews/", answers.list_answer_reviews, name="list-answer-reviews"),
    path(
        "p/<slug:slug>/reviews/<int:answer_assignment_id>/",
        answers.review_answer,
        name="review-answer",
    ),
    path(
        "p/<slug:slug>/reviews/<int:answer_assignment_id>/grade/",
        answers.grade_answer,
        name="grade-answer",
    ),
    path(
        "p/<slug:slug>/reviews/<int:answer_assignment_id>/split/",
        answers.split_answer_claim,
        name="split-answer-claim",
    ),
    path(
        "p/<slug:slug>/reviews/<int:answer_assignment_id>/supporting/",
        answers.mark_supporting_citations,
        name="mark-supporting-citations",
    ),
    path(
        "p/<slug:slug>/reviews/<int:answer_assignment_id>/evidence/",
        answers.mark_claim_evidence,
        name="mark-claim-evidence",
    ),
    path(
        "p/<slug:slug>/reviews/<int:answer_assignment_id>/finish/",
        answers.finish_answer_review,
        name="finish-answer-review",
    ),
    path(
        _set + "questions/<int:question_id>/reference/",
        answers.edit_reference_answer,
        name="edit-reference-answer",
    ),
]
