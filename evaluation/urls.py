from django.urls import path

from evaluation import views

app_name = "evaluation"

_gold_set = "p/<slug:slug>/gold-sets/<int:gold_set_id>/"
urlpatterns = [
    path("p/<slug:slug>/gold-sets/", views.list_gold_sets, name="list-gold-sets"),
    path(
        "p/<slug:slug>/sets/<int:set_id>/gold-sets/finalise/",
        views.finalise_gold_set,
        name="finalise-gold-set",
    ),
    path(_gold_set, views.show_gold_set, name="show-gold-set"),
    path(_gold_set + "download/", views.download_gold_set, name="download-gold-set"),
    path(_gold_set + "runs/upload/", views.upload_run, name="upload-run"),
    path(_gold_set + "runs/retrieve/", views.start_retriever_run, name="start-retriever-run"),
    path(_gold_set + "runs/<int:run_id>/download/", views.download_run, name="download-run"),
    path(_gold_set + "runs/<int:run_id>/delete/", views.delete_run, name="delete-run"),
    path(_gold_set + "score/", views.score_runs, name="score-runs"),
    path(_gold_set + "power/", views.calculate_power, name="calculate-power"),
    path(_gold_set + "answers/", views.show_answers, name="show-answers"),
    path(_gold_set + "answers/compute/", views.compute_answers, name="compute-answers"),
    path(
        _gold_set + "answers/<int:answer_run_id>/download/",
        views.download_answer_run,
        name="download-answer-run",
    ),
    path("p/<slug:slug>/evaluation/", views.show_evaluation, name="show-evaluation"),
    path("p/<slug:slug>/evaluation/k/", views.edit_k_sent_to_model, name="edit-k-sent-to-model"),
    path(
        "p/<slug:slug>/permissions/",
        views.list_permission_replays,
        name="list-permission-replays",
    ),
    path(
        "p/<slug:slug>/permissions/start/",
        views.start_permission_replay,
        name="start-permission-replay",
    ),
    path(
        "p/<slug:slug>/permissions/<int:replay_id>/",
        views.show_permission_replay,
        name="show-permission-replay",
    ),
]
