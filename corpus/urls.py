from django.urls import path

from corpus import team_views, views

app_name = "corpus"

urlpatterns = [
    path("", views.list_projects, name="list-projects"),
    path("p/<slug:slug>/", views.show_project, name="show-project"),
    path("p/<slug:slug>/escalation/", views.edit_escalation, name="edit-escalation"),
    path("p/<slug:slug>/join/", team_views.join_project, name="join-project"),
    path("p/<slug:slug>/documents/", views.list_documents, name="list-documents"),
    path("p/<slug:slug>/documents/upload/", views.upload_documents, name="upload-documents"),
    path("p/<slug:slug>/documents/<int:document_id>/", views.show_document, name="show-document"),
    path(
        "p/<slug:slug>/documents/<int:document_id>/accept/",
        views.accept_quality,
        name="accept-quality",
    ),
    path("p/<slug:slug>/duplicates/", views.list_duplicates, name="list-duplicates"),
    path(
        "p/<slug:slug>/duplicates/<int:group_id>/representative/",
        views.choose_representative,
        name="choose-representative",
    ),
    path("p/<slug:slug>/chunking/", views.list_chunking, name="list-chunking"),
    path("p/<slug:slug>/chunking/<int:scheme_id>/", views.edit_chunking, name="edit-chunking"),
    path("p/<slug:slug>/retrievers/", views.list_retrievers, name="list-retrievers"),
    path("p/<slug:slug>/retrievers/add/", views.add_retriever, name="add-retriever"),
    path(
        "p/<slug:slug>/retrievers/<int:retriever_id>/",
        views.show_retriever,
        name="show-retriever",
    ),
    path(
        "p/<slug:slug>/retrievers/<int:retriever_id>/build/",
        views.build_index,
        name="build-index",
    ),
    path("p/<slug:slug>/test-users/", views.list_test_users, name="list-test-users"),
    path("p/<slug:slug>/test-users/add/", views.add_test_user, name="add-test-user"),
    path(
        "p/<slug:slug>/test-users/<int:profile_id>/",
        views.edit_test_user,
        name="edit-test-user",
    ),
    path(
        "p/<slug:slug>/test-users/<int:profile_id>/delete/",
        views.delete_test_user,
        name="delete-test-user",
    ),
    path(
        "p/<slug:slug>/retrievers/<int:retriever_id>/endpoint/",
        views.edit_endpoint,
        name="edit-endpoint",
    ),
    path("p/<slug:slug>/jobs/", views.list_jobs, name="list-jobs"),
    path("p/<slug:slug>/jobs/<int:job_id>/", views.show_job, name="show-job"),
]

# Team pages (corpus/team_views.py) ---------------------------------------------------------
_member = "p/<slug:slug>/members/<int:membership_id>/"
urlpatterns += [
    path("projects/new/", team_views.add_project, name="add-project"),
    path("p/<slug:slug>/members/", team_views.list_members, name="list-members"),
    path("p/<slug:slug>/members/add/", team_views.add_member, name="add-member"),
    path("p/<slug:slug>/members/new/", team_views.create_account, name="create-account"),
    path(_member, team_views.change_member, name="change-member"),
    path(_member + "remove/", team_views.remove_member, name="remove-member"),
    path(_member + "access/", team_views.renew_access, name="renew-access"),
    path("p/<slug:slug>/access-groups/", team_views.list_access_groups, name="list-access-groups"),
    path(
        "p/<slug:slug>/access-groups/<int:access_group_id>/",
        team_views.edit_access_group,
        name="edit-access-group",
    ),
    path(
        "accounts/invitation/<uidb64>/<token>/",
        team_views.accept_invitation,
        name="accept-invitation",
    ),
]
