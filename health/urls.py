from django.urls import path

from health import views as health_views

app_name = "health"

urlpatterns = [
    path("p/<slug:slug>/index-health/", health_views.show_index_health, name="show-index-health"),
    path(
        "p/<slug:slug>/index-health/<int:retriever_id>/check/",
        health_views.check_index_now,
        name="check-index-now",
    ),
    path(
        "p/<slug:slug>/index-health/daily-check/",
        health_views.run_daily_check_now,
        name="run-daily-check",
    ),
    path(
        "p/<slug:slug>/index-health/test-alert/",
        health_views.send_test_alert,
        name="send-test-alert",
    ),
    path(
        "p/<slug:slug>/index-health/manifest/",
        health_views.upload_manifest,
        name="upload-manifest",
    ),
    path(
        "p/<slug:slug>/index-health/<int:retriever_id>/fetch/",
        health_views.fetch_manifest,
        name="fetch-manifest",
    ),
    path(
        "p/<slug:slug>/index-health/<int:retriever_id>/source/",
        health_views.edit_manifest_source,
        name="edit-manifest-source",
    ),
    path(
        "p/<slug:slug>/index-health/thresholds/",
        health_views.edit_health_thresholds,
        name="edit-health-thresholds",
    ),
    path(
        "p/<slug:slug>/index-health/banner/",
        health_views.show_health_banner,
        name="show-health-banner",
    ),
    path(
        "p/<slug:slug>/retrievers/<int:retriever_id>/builds/",
        health_views.show_retriever_builds,
        name="show-retriever-builds",
    ),
    path(
        "p/<slug:slug>/retrievers/<int:retriever_id>/builds/score/",
        health_views.score_current_build,
        name="score-current-build",
    ),
]
