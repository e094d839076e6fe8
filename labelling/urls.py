from django.urls import path

app_name = "labelling"

urlpatterns: list = []

# Question sets and pools (labelling/views/questions.py, labelling/views/pools.py) ----------
from labelling.views import canaries, first_steps, pools, questions  # noqa: E402

urlpatterns += [
    path("p/<slug:slug>/sets/", questions.list_question_sets, name="list-question-sets"),
    path("p/<slug:slug>/sets/import/", questions.import_questions, name="import-questions"),
    path("p/<slug:slug>/sets/<int:set_id>/", questions.show_question_set, name="show-question-set"),
    path("p/<slug:slug>/first-steps/", first_steps.show_first_steps, name="show-first-steps"),
    path("p/<slug:slug>/canaries/", canaries.plant_canaries, name="plant-canaries"),
    path(
        "p/<slug:slug>/canaries/canaries.jsonl",
        canaries.download_canaries,
        name="download-canaries",
    ),
    path("p/<slug:slug>/pools/", pools.list_pools, name="list-pools"),
    path("p/<slug:slug>/pools/add/", pools.add_pool, name="add-pool"),
    path("p/<slug:slug>/pools/<int:pool_id>/", pools.show_pool, name="show-pool"),
    path(
        "p/<slug:slug>/pools/<int:pool_id>/questions/<int:question_id>/",
        pools.show_pool_question,
        name="show-pool-question",
    ),
    path("p/<slug:slug>/retrievers/<int:retriever_id>/run/", pools.upload_run, name="upload-run"),
]

# Assignments, guideline, grading (labelling/views/assignments.py, labelling/views/grading.py) --
from labelling.views import assignments, grading, guidelines  # noqa: E402

_grade = "p/<slug:slug>/grade/<int:pool_id>/<int:question_id>/"
_candidate = _grade + "candidates/<int:candidate_id>/"
urlpatterns += [
    path("p/<slug:slug>/queue/", assignments.show_queue, name="show-queue"),
    path("p/<slug:slug>/queue/next/", assignments.next_question, name="next-question"),
    path("p/<slug:slug>/assignments/", assignments.list_assignments, name="list-assignments"),
    path("p/<slug:slug>/assignments/plan/", assignments.plan_assignments, name="plan-assignments"),
    path("p/<slug:slug>/assignments/lease/", assignments.edit_lease, name="edit-lease"),
    path(
        "p/<slug:slug>/assignments/second-labellers/",
        assignments.add_second_labellers,
        name="add-second-labellers",
    ),
    path(
        "p/<slug:slug>/pools/<int:pool_id>/assignments/reassign/",
        assignments.reassign_assignments,
        name="reassign-assignments",
    ),
    path(
        "p/<slug:slug>/assignments/<int:assignment_id>/",
        assignments.show_assignment,
        name="show-assignment",
    ),
    path(
        "p/<slug:slug>/assignments/<int:assignment_id>/reassign/",
        assignments.reassign_assignment,
        name="reassign-assignment",
    ),
    path(
        "p/<slug:slug>/assignments/<int:assignment_id>/unassign/",
        assignments.unassign_assignment,
        name="unassign-assignment",
    ),
    path("p/<slug:slug>/guideline/", guidelines.show_guideline, name="show-guideline"),
    path("p/<slug:slug>/guideline/edit/", guidelines.edit_guideline, name="edit-guideline"),
    path(
        "p/<slug:slug>/guideline/preview/", guidelines.preview_guideline, name="preview-guideline"
    ),
    path(_grade, grading.grade_question, name="grade-question"),
    path(_grade + "verdict/", grading.set_verdict, name="set-verdict"),
    path(_grade + "undo/", grading.undo_change, name="undo-change"),
    # Every passage URL starts with `_candidate` (views/grading.py `candidate_url` relies on it).
    path(_candidate + "grade/", grading.grade_candidate, name="grade-candidate"),
    path(_candidate + "note/", grading.note_candidate, name="note-candidate"),
    path(_candidate + "spans/", grading.add_span, name="add-span"),
    path(_candidate + "spans/<int:span_id>/remove/", grading.remove_span, name="remove-span"),
    path(_candidate + "document/", grading.show_passage_document, name="show-passage-document"),
]

# Calibration (labelling/views/calibration.py) --------------------------------------------
from labelling.views import calibration  # noqa: E402

urlpatterns += [
    path("p/<slug:slug>/calibration/", calibration.show_calibration, name="show-calibration"),
    path(
        "p/<slug:slug>/calibration/mine/",
        calibration.show_my_calibration,
        name="show-my-calibration",
    ),
]

# Agreement and adjudication (labelling/views/agreement.py) -------------------------------
from labelling.views import agreement  # noqa: E402

_set = "p/<slug:slug>/sets/<int:set_id>/"
urlpatterns += [
    path(_set + "agreement/", agreement.show_agreement, name="show-agreement"),
    path(_set + "adjudication/", agreement.list_adjudication, name="list-adjudication"),
    path(
        _set + "adjudication/<int:pool_id>/<int:question_id>/candidates/<int:candidate_id>/",
        agreement.resolve_item,
        name="resolve-item",
    ),
    path(
        _set + "adjudication/<int:pool_id>/<int:question_id>/verdict/",
        agreement.resolve_verdict,
        name="resolve-verdict",
    ),
    path(_set + "gold/", agreement.show_gold, name="show-gold"),
    path(
        _set + "questions/<int:question_id>/exclude/",
        assignments.exclude_question,
        name="exclude-question",
    ),
    path(
        _set + "questions/<int:question_id>/include/",
        assignments.include_question,
        name="include-question",
    ),
]

# A labeller's spans on changed documents (labelling/views/recheck.py) -----------------------
from labelling.views import recheck  # noqa: E402

urlpatterns += [
    path("p/<slug:slug>/recheck/", recheck.show_recheck, name="show-recheck"),
    path("p/<slug:slug>/recheck/<int:span_id>/", recheck.remark_span, name="remark-span"),
    path(
        "p/<slug:slug>/recheck/<int:span_id>/answer/",
        recheck.answer_recheck,
        name="answer-recheck",
    ),
]
