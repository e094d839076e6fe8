from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus import job_display, jobs, remote
from corpus.access import project_access
from corpus.forms import (
    ChunkingSchemeForm,
    EndpointForm,
    EscalationForm,
    RetrieverForm,
    TestUserForm,
    UploadForm,
)
from corpus.models import (
    ChunkingScheme,
    Document,
    DocumentVersion,
    DuplicateGroup,
    Job,
    PermissionProfile,
    Project,
    ProjectInvitation,
    Retriever,
    RetrieverKind,
    Role,
)
from corpus.services import documents, http_retrieval, projects, retrieval, test_users
from corpus.visibility import restricted_elsewhere
from goldset.errors import ServiceError

DOCUMENTS_PER_PAGE = 50
DOCUMENT_FILTERS = {
    "all": lambda documents, user: documents.all(),
    "flagged": lambda documents, user: documents.held_back(),
    # A near-duplicate only when the viewer can see another member of its group.
    "duplicates": lambda documents, user: documents.with_visible_twin(user),
    "restricted": lambda documents, user: documents.restricted(),
}


@login_required
@require_GET
def list_projects(request: HttpRequest) -> HttpResponse:
    projects = Project.objects.for_member(request.user).order_by("slug")
    invitations = (
        ProjectInvitation.objects.pending()
        .for_user(request.user)
        .exclude(project__in=projects)
        .select_related("project")
    )
    return render(
        request,
        "corpus/list_projects.html",
        {"projects": projects, "invitations": invitations},
    )


@login_required
@require_GET
def show_project(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    if not access.is_lead:
        # Labellers land on their queue; the corpus statistics are for the people who run it.
        return redirect("labelling:show-queue", slug=slug)
    documents = Document.objects.filter(project=access.project).visible_to(request.user)
    context = {
        "access": access,
        "project": access.project,
        "document_count": documents.count(),
        "searchable_count": documents.searchable_for(request.user).count(),
        "flagged_count": documents.held_back().count(),
        "schemes": access.project.chunking_schemes.with_chunk_count(viewer=request.user),
        "escalation_form": EscalationForm(initial={"escalate_on": access.project.escalate_on}),
        "jobs": [
            job_display.view_job(job, request.user, problems=False)
            for job in job_display.visible_jobs(access.project.jobs.all(), request.user)[:5]
        ],
    }
    return render(request, "corpus/show_project.html", context)


@login_required
@require_POST
def edit_escalation(request: HttpRequest, slug: str) -> HttpResponse:
    """A lead or admin chooses when a third labeller is asked (the project page's settings)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    form = EscalationForm(request.POST)
    if form.is_valid():
        projects.set_escalation(
            project=access.project, escalate_on=form.cleaned_data["escalate_on"]
        )
        messages.success(
            request, f"A third labeller is now asked {access.project.get_escalate_on_display()}."
        )
    else:
        messages.error(request, form.first_problem())
    return redirect(reverse("corpus:show-project", args=[slug]) + "#settings")


@login_required
@require_GET
def list_documents(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    shown = request.GET.get("show", "all")
    if shown not in DOCUMENT_FILTERS:
        shown = "all"
    visible = Document.objects.filter(project=access.project).visible_to(request.user)
    documents = (
        DOCUMENT_FILTERS[shown](visible, request.user)
        .with_latest_version()
        .select_related("duplicate_group")
        .distinct()
        .order_by("doc_id")
    )
    query = request.GET.get("q", "").strip()
    if query:
        documents = documents.matching(query)
    page = Paginator(documents, DOCUMENTS_PER_PAGE).get_page(request.GET.get("page"))
    # Which of them the viewer would see marked "duplicate": another visible member, and not
    # the copy their searches return.
    grouped = [d.pk for d in page if d.duplicate_group_id]
    if grouped:
        listed = Document.objects.filter(pk__in=grouped)
        copies = set(listed.copies_for(request.user).values_list("pk", flat=True))
        twinned = set(listed.with_visible_twin(request.user).values_list("pk", flat=True))
        for document in page:
            document.shown_as_duplicate = document.pk in twinned - copies
    context = {
        "access": access,
        "project": access.project,
        "page": page,
        "shown": shown,
        "filters": list(DOCUMENT_FILTERS),
        "query": query,
    }
    return render(request, "corpus/list_documents.html", context)


@login_required
@require_GET
def show_document(request: HttpRequest, slug: str, document_id: int) -> HttpResponse:
    access = project_access(request.user, slug)
    document = get_object_or_404(
        Document.objects.filter(project=access.project).visible_to(request.user).distinct(),
        pk=document_id,
    )
    versions = document.versions.defer("text", "minhash").order_by("-version")
    number = request.GET.get("version")
    version = (
        get_object_or_404(document.versions, version=number)
        if number and number.isdigit()
        else document.latest_version
    )
    duplicates, searchable_copy = [], None
    if document.duplicate_group_id:
        duplicates = Document.objects.duplicates_of(document).visible_to(request.user).distinct()
        searchable_copy = (
            Document.objects.filter(duplicate_group_id=document.duplicate_group_id)
            .searchable_for(request.user)
            .values_list("pk", flat=True)
            .first()
        )
    context = {
        "access": access,
        "project": access.project,
        "document": document,
        "version": version,
        "versions": versions,
        "duplicates": duplicates,
        "searchable_copy": searchable_copy,
        # As the viewer sees the corpus: a copy standing in for a hidden twin is searchable.
        "searchable": Document.objects.filter(pk=document.pk).searchable_for(request.user).exists(),
        "groups": document.access_groups.all(),
    }
    return render(request, "corpus/show_document.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def upload_documents(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    # Admins may restrict to any group; a lead only to groups they are in (else they would
    # lose sight of what they just uploaded).
    groups = access.project.access_groups.all()
    if not access.is_admin:
        groups = groups.filter(members=request.user)
    form = UploadForm(request.POST or None, request.FILES or None, groups=groups)
    if request.method == "POST" and form.is_valid():
        job = documents.start_upload_import(
            project=access.project,
            files=form.cleaned_data["files"],
            user=request.user,
            access_groups=[g.name for g in form.cleaned_data.get("access_groups", [])],
        )
        return redirect("corpus:show-job", slug=slug, job_id=job.pk)
    status = 200
    if form.errors:
        status = 413 if form.has_error("files", code="too_large") else 400
    return render(
        request,
        "corpus/upload_documents.html",
        {"access": access, "project": access.project, "form": form},
        status=status,
    )


@login_required
@require_POST
def accept_quality(request: HttpRequest, slug: str, document_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    document = get_object_or_404(
        Document.objects.filter(project=access.project).visible_to(request.user).distinct(),
        pk=document_id,
    )
    version = get_object_or_404(DocumentVersion, pk=document.latest_version_id)
    try:
        documents.accept_quality(version=version, user=request.user)
        messages.success(request, f"{document.doc_id} v{version.version} is now searchable.")
    except ServiceError as exc:
        messages.error(request, str(exc))
    return redirect("corpus:show-document", slug=slug, document_id=document.pk)


@login_required
@require_GET
def list_duplicates(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    visible = Document.objects.filter(project=access.project).visible_to(request.user).distinct()
    groups = []
    for group in DuplicateGroup.objects.filter(project=access.project).order_by("pk"):
        members = list(visible.filter(duplicate_group=group).with_latest_version().order_by("pk"))
        if len(members) >= 2:  # a group half-hidden by access groups would leak its hidden member
            # The copy this viewer's searches return: the representative, or when it is hidden
            # from them, the first member they see (`DocumentQuerySet.searchable_for`).
            shown = {m.pk for m in members}
            copy = group.representative_id if group.representative_id in shown else members[0].pk
            groups.append({"group": group, "members": members, "searchable_copy": copy})
    return render(
        request,
        "corpus/list_duplicates.html",
        {"access": access, "project": access.project, "groups": groups},
    )


@login_required
@require_POST
def choose_representative(request: HttpRequest, slug: str, group_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    group = get_object_or_404(DuplicateGroup, project=access.project, pk=group_id)
    document = get_object_or_404(
        Document.objects.filter(project=access.project).visible_to(request.user).distinct(),
        pk=request.POST.get("document", 0)
        if str(request.POST.get("document", "")).isdigit()
        else 0,
    )
    try:
        documents.choose_representative(group=group, document=document)
        messages.success(request, f"{document.doc_id} is now the searchable copy.")
    except ServiceError as exc:
        messages.error(request, str(exc))
    return redirect("corpus:list-duplicates", slug=slug)


@login_required
@require_http_methods(["GET", "POST"])
def list_chunking(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    form = None
    if access.is_lead:
        form = ChunkingSchemeForm(request.POST or None, project=access.project)
        if request.method == "POST" and form.is_valid():
            scheme = documents.add_chunking_scheme(project=access.project, **form.cleaned_data)
            job = documents.start_chunking(scheme=scheme, user=request.user)
            messages.success(request, f"Chunking scheme {scheme.name} added; chunking has started.")
            return redirect("corpus:show-job", slug=slug, job_id=job.pk)
    elif request.method == "POST":
        project_access(request.user, slug, role=Role.LEAD)
    schemes = access.project.chunking_schemes.with_chunk_count(viewer=request.user)
    return render(
        request,
        "corpus/list_chunking.html",
        {"access": access, "project": access.project, "schemes": schemes, "form": form},
        status=400 if form is not None and form.errors else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def edit_chunking(request: HttpRequest, slug: str, scheme_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    scheme = get_object_or_404(ChunkingScheme, project=access.project, pk=scheme_id)
    form = ChunkingSchemeForm(request.POST or None, instance=scheme, project=access.project)
    if request.method == "POST" and form.is_valid():
        data = {k: form.cleaned_data[k] for k in ("strategy", "unit", "size", "overlap")}
        scheme = documents.change_chunking_scheme(
            scheme=ChunkingScheme.objects.get(pk=scheme.pk), **data
        )
        job = documents.start_chunking(scheme=scheme, user=request.user)
        messages.success(request, f"{scheme.name} changed; its chunks are being cut again.")
        return redirect("corpus:show-job", slug=slug, job_id=job.pk)
    return render(
        request,
        "corpus/edit_chunking.html",
        {"access": access, "project": access.project, "scheme": scheme, "form": form},
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def list_jobs(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    listed = job_display.visible_jobs(access.project.jobs.defer("errors"), request.user)
    page = Paginator(listed, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "corpus/list_jobs.html",
        {
            "access": access,
            "project": access.project,
            "page": page,
            "shown": [job_display.view_job(job, request.user, problems=False) for job in page],
        },
    )


@login_required
@require_GET
def show_job(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    job = get_object_or_404(
        job_display.visible_jobs(Job.objects.filter(project=access.project), request.user),
        pk=job_id,
    )
    template = "corpus/show_job.html#progress" if request.htmx else "corpus/show_job.html"
    shown = job_display.view_job(job, request.user)
    # What a remote server answered is for the admins who configured it (corpus/remote.py).
    errors = remote.shown_to(shown.errors, admin=access.is_admin)
    columns = {key: any(e.get(key) for e in errors) for key in ("source", "line", "doc_id")}
    response = render(
        request,
        template,
        {
            "access": access,
            "project": access.project,
            "job": job,
            "shown": shown,
            "errors": errors,
            # Said to anyone outside one of the project's groups, whatever the job touched.
            "restricted_elsewhere": restricted_elsewhere(
                project=access.project, viewer=request.user
            ),
            "columns": columns,
        },
    )
    if request.htmx and job.finished:
        url = jobs.next_url(job)
        if url:
            # The page that was polling goes on to what the job made (a gold set, the figures),
            # which says what the job did.
            messages.success(request, shown.message)
            response["HX-Redirect"] = url
    return response


def follow_job(request: HttpRequest, job: Job) -> HttpResponse:
    """The answer to a request that started ``job``: its page, which follows it, or straight on
    to what it made when it is done already (no broker: it ran in-process), with its message."""
    url = jobs.next_url(job)
    if url is None:
        return redirect("corpus:show-job", slug=job.project.slug, job_id=job.pk)
    messages.success(request, job_display.view_job(job, request.user, problems=False).message)
    return redirect(url)


# Retrievers and indexes ------------------------------------------------------------------

STALE_SHOWN = 20


@login_required
@require_GET
def list_retrievers(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    retrievers = list(access.project.retrievers.select_related("scheme", "active_index"))
    for retriever in retrievers:
        if retriever.active_index is not None:
            retriever.visible_passages = retrieval.visible_passage_count(
                index=retriever.active_index, user=request.user
            )
    return render(
        request,
        "corpus/list_retrievers.html",
        {"access": access, "project": access.project, "retrievers": retrievers},
    )


@login_required
@require_http_methods(["GET", "POST"])
def add_retriever(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    form = RetrieverForm(
        request.POST or None, project=access.project, may_choose_model=access.is_admin
    )
    trial = None
    if request.method == "POST" and "try" in request.POST and access.is_admin:
        # "Try a question": one live call through the same client and host policy; nothing
        # stored. Only an admin may configure (and so call) an HTTP endpoint.
        if form.is_valid():
            try:
                trial = http_retrieval.try_endpoint(
                    project=access.project,
                    user=request.user,
                    endpoint=form.service_arguments().get("endpoint") or {},
                    question=form.cleaned_data.get("question", ""),
                )
            except ServiceError as exc:
                form.add_error(None, str(exc))
    elif request.method == "POST" and form.is_valid():
        try:
            retriever = retrieval.add_retriever(project=access.project, **form.service_arguments())
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Retriever {retriever.name} added.")
            return redirect("corpus:show-retriever", slug=slug, retriever_id=retriever.pk)
    return render(
        request,
        "corpus/add_retriever.html",
        {"access": access, "project": access.project, "form": form, "trial": trial},
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def show_retriever(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    access = project_access(request.user, slug)
    retriever = get_object_or_404(
        Retriever.objects.select_related("scheme", "active_index"),
        project=access.project,
        pk=retriever_id,
    )
    stale = retrieval.stale_documents(retriever).visible_to(request.user).distinct()
    hidden = Document.objects.filter(project=access.project).hidden_from(request.user)
    context = {
        "access": access,
        "project": access.project,
        "retriever": retriever,
        "index": retriever.active_index,
        "visible_passages": retrieval.visible_passage_count(
            index=retriever.active_index, user=request.user
        )
        if retriever.active_index is not None
        else 0,
        "stale_count": stale.count(),
        "stale": stale.with_latest_version()[:STALE_SHOWN],
        "builds": [
            job_display.view_job(job, request.user, problems=False)
            for job in Job.objects.index_builds_of(retriever)[:3]
        ]
        if access.is_lead
        else [],
        "runs": retriever.run_results.exclude(version__document__in=hidden.values("pk"))
        .values("question__question_set__name")
        .annotate(results=Count("pk"), questions=Count("question", distinct=True))
        .order_by("question__question_set__name"),
    }
    return render(request, "corpus/show_retriever.html", context)


@login_required
@require_POST
def build_index(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    retriever = get_object_or_404(Retriever, project=access.project, pk=retriever_id)
    try:
        job = retrieval.start_index_build(retriever=retriever, user=request.user)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("corpus:show-retriever", slug=slug, retriever_id=retriever.pk)
    return redirect("corpus:show-job", slug=slug, job_id=job.pk)


@login_required
@require_http_methods(["GET", "POST"])
def edit_endpoint(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    retriever = get_object_or_404(
        Retriever, project=access.project, pk=retriever_id, kind=RetrieverKind.HTTP
    )
    form = EndpointForm(request.POST or None, initial=EndpointForm.initial_of(retriever.endpoint))
    if request.method == "POST" and form.is_valid():
        try:
            http_retrieval.change_endpoint(retriever=retriever, endpoint=form.endpoint())
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"The endpoint of {retriever.name} is changed.")
            return redirect("corpus:show-retriever", slug=slug, retriever_id=retriever.pk)
    return render(
        request,
        "corpus/edit_endpoint.html",
        {"access": access, "project": access.project, "retriever": retriever, "form": form},
        status=400 if form.errors else 200,
    )


# Test users (permission replays) ---------------------------------------------------------


@login_required
@require_GET
def list_test_users(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    profiles = PermissionProfile.objects.filter(project=access.project).prefetch_related(
        "access_groups"
    )
    return render(
        request,
        "corpus/list_test_users.html",
        {"access": access, "project": access.project, "profiles": profiles},
    )


@login_required
@require_http_methods(["GET", "POST"])
def add_test_user(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    return _test_user_form(request, access, None)


@login_required
@require_http_methods(["GET", "POST"])
def edit_test_user(request: HttpRequest, slug: str, profile_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    profile = get_object_or_404(PermissionProfile, project=access.project, pk=profile_id)
    return _test_user_form(request, access, profile)


def _test_user_form(request, access, profile) -> HttpResponse:
    initial = TestUserForm.initial_of(profile) if profile is not None else None
    form = TestUserForm(request.POST or None, initial=initial, project=access.project)
    if request.method == "POST" and form.is_valid():
        try:
            saved = test_users.save_test_user(
                project=access.project, profile=profile, **form.service_arguments()
            )
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Test user {saved.name} saved.")
            return redirect("corpus:list-test-users", slug=access.project.slug)
    return render(
        request,
        "corpus/edit_test_user.html",
        {"access": access, "project": access.project, "form": form, "profile": profile},
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def delete_test_user(request: HttpRequest, slug: str, profile_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    profile = get_object_or_404(PermissionProfile, project=access.project, pk=profile_id)
    test_users.delete_test_user(profile=profile)
    messages.success(request, f"Test user {profile.name} deleted.")
    return redirect("corpus:list-test-users", slug=access.project.slug)
