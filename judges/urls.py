from django.urls import path

from judges import views

app_name = "judges"

urlpatterns = [
    path("p/<slug:slug>/judges/", views.list_judges, name="list-judges"),
    path("p/<slug:slug>/judges/add/", views.add_judge, name="add-judge"),
    path("p/<slug:slug>/judges/<int:judge_id>/", views.show_judge, name="show-judge"),
    path("p/<slug:slug>/judges/<int:judge_id>/edit/", views.edit_judge, name="edit-judge"),
    path("p/<slug:slug>/judges/<int:judge_id>/judge/", views.start_judging, name="start-judging"),
    path(
        "p/<slug:slug>/judges/<int:judge_id>/gold-vote/",
        views.switch_gold_vote,
        name="switch-gold-vote",
    ),
    path(
        "p/<slug:slug>/judges/<int:judge_id>/canaries/",
        views.plant_canaries,
        name="plant-canaries",
    ),
]
