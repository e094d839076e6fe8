from django.urls import path

from corpus import views

app_name = "corpus"

urlpatterns = [
    path("", views.list_projects, name="list-projects"),
    path("p/<slug:slug>/", views.show_project, name="show-project"),
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
