from django.urls import path

from production.views import misses as production_views
from production.views import samples, traces

app_name = "production"

urlpatterns = [
    # Token requests only, from the team's system: no trailing slash, as APIs are called.
    path("api/p/<slug:slug>/traces", traces.receive_traces, name="receive-traces"),
    path("p/<slug:slug>/traces/", traces.list_traces, name="list-traces"),
    path("p/<slug:slug>/traces/tokens/", traces.list_api_tokens, name="list-api-tokens"),
    path(
        "p/<slug:slug>/traces/tokens/<int:token_id>/revoke/",
        traces.revoke_api_token,
        name="revoke-api-token",
    ),
    path("p/<slug:slug>/samples/", samples.list_sampling_rules, name="list-sampling-rules"),
    path(
        "p/<slug:slug>/samples/rules/<int:rule_id>/draw/",
        samples.draw_sample,
        name="draw-sample",
    ),
    path("p/<slug:slug>/samples/<int:sample_id>/", samples.show_sample, name="show-sample"),
    path(
        "p/<slug:slug>/samples/<int:sample_id>/dismiss/",
        samples.dismiss_sample,
        name="dismiss-sample",
    ),
    path(
        "p/<slug:slug>/samples/<int:sample_id>/misses/",
        production_views.show_misses,
        name="show-misses",
    ),
    path(
        "p/<slug:slug>/samples/<int:sample_id>/promote/",
        production_views.promote_sample,
        name="promote-sample",
    ),
]
