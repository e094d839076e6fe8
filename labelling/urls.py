from django.urls import path

app_name = "labelling"

urlpatterns: list = []

# Agreement and adjudication (labelling/views/agreement.py) -------------------------------
from labelling.views import agreement  # noqa: E402

_set = "p/<slug:slug>/sets/<int:set_id>/"
urlpatterns += [
    path(_set + "agreement/", agreement.show_agreement, name="show-agreement"),
    path(_set + "adjudication/", agreement.list_adjudication, name="list-adjudication"),
    path(_set + "adjudication/<int:pool_id>/<int:question_id>/candidates/<int:candidate_id>/",
         agreement.resolve_item, name="resolve-item"),
    path(_set + "adjudication/<int:pool_id>/<int:question_id>/verdict/", agreement.resolve_verdict,
         name="resolve-verdict"),
    path(_set + "gold/", agreement.show_gold, name="show-gold"),
]
