"""The team pages: creating a project, its members and their roles (with new accounts, by
one-time password or invitation link), its access groups and their members; the page an
invitation link opens; and the page a role too low for an action gets (403).

Members and access groups are the project admins'. An access group's documents are never
listed or counted here for an admin outside the group: they learn nothing of them.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus.access import project_access
from corpus.forms import (
    AccessGroupForm,
    AccessGroupMembersForm,
    AddMemberForm,
    CreateAccountForm,
    ProjectForm,
    RenewAccessForm,
    RoleForm,
)
from corpus.models import AccessGroup, Membership, Project, ProjectInvitation, Role
from corpus.services import projects
from goldset.errors import ServiceError

User = get_user_model()
# The newest access group changes shown to a project's admins (the admin site keeps them all).
CHANGES_SHOWN = 50


def may_create_projects(user) -> bool:
    """Projects are made by administrators of the installation (Django's "add project"
    permission; superusers have it), who become the new project's first admin."""
    return user.is_authenticated and user.has_perm("corpus.add_project")


@login_required
@require_http_methods(["GET", "POST"])
def add_project(request: HttpRequest) -> HttpResponse:
    if not may_create_projects(request.user):
        raise PermissionDenied(
            "Creating a project needs an administrator account of this installation; ask "
            "whoever runs Goldset here to create it and make you its admin."
        )
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            project = projects.create_project(
                slug=form.cleaned_data["slug"],
                name=form.cleaned_data["name"],
                admin=request.user,
            )
        except ServiceError as exc:
            form.add_error("slug", str(exc))
        else:
            messages.success(
                request, f"Project {project.name} created; you are its admin. Add its members."
            )
            return redirect("corpus:list-members", slug=project.slug)
    return render(
        request, "corpus/add_project.html", {"form": form}, status=400 if form.errors else 200
    )


# Members -------------------------------------------------------------------------------------


def _role_counts(project) -> list[tuple[int, str]]:
    """(how many, role label) for each role held, labellers first: "2 labellers · 1 admin"."""
    counts = dict(
        Membership.objects.filter(project=project)
        .order_by()
        .values_list("role")
        .annotate(n=Count("pk"))
        .values_list("role", "n")
    )
    return [(counts[r], r.label.lower()) for r in Role if counts.get(r)]


def _members_page(request, access, *, status=200, **forms) -> HttpResponse:
    memberships = (
        Membership.objects.filter(project=access.project)
        .select_related("user")
        .order_by("user__username")
    )
    groups_of: dict[int, list[str]] = {}
    for group in access.project.access_groups.prefetch_related("members"):
        for user in group.members.all():
            groups_of.setdefault(user.pk, []).append(group.name)
    rows = [
        {
            "membership": m,
            "groups": groups_of.get(m.user_id, []),
            "renewable": projects.may_renew_access(user=m.user, admin=request.user),
            "role_form": forms.get(f"role_{m.pk}") or RoleForm(initial={"role": m.role}),
        }
        for m in memberships
    ]
    context = {
        "access": access,
        "project": access.project,
        "rows": rows,
        "add_form": forms.get("add_form") or AddMemberForm(),
        "create_form": forms.get("create_form") or CreateAccountForm(),
        "role_counts": _role_counts(access.project),
        "invitations": ProjectInvitation.objects.filter(project=access.project).pending(),
    }
    return render(request, "corpus/list_members.html", context, status=status)


@login_required
@require_GET
def list_members(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    return _members_page(request, access)


@login_required
@require_POST
def add_member(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    form = AddMemberForm(request.POST)
    if form.is_valid():
        role = Role(form.cleaned_data["role"]).label.lower()
        try:
            added = projects.add_or_invite(
                project=access.project,
                username=form.cleaned_data["username"],
                role=form.cleaned_data["role"],
                admin=request.user,
            )
        except ServiceError as exc:
            form.add_error("username", str(exc))
        else:
            if added.membership is not None:
                name = added.membership.user.get_username()
                messages.success(request, f"{name} is now a {role} of {access.project.name}.")
            else:
                # The same words whether or not an account has this name.
                messages.success(
                    request,
                    f"{added.invitation.username} is invited as a {role}: an account of that "
                    f"name joins {access.project.name} once its owner accepts on their "
                    "Projects page.",
                )
            return redirect("corpus:list-members", slug=slug)
    return _members_page(request, access, add_form=form, status=400)


def _account_page(request, access, account: projects.NewAccount, *, created: bool):
    link = request.build_absolute_uri(account.invitation_path) if account.invitation_path else ""
    response = render(
        request,
        "corpus/account_access.html",
        {
            "access": access,
            "project": access.project,
            "account": account,
            "invitation_url": link,
            "created": created,
            "timeout_days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400),
        },
    )
    # A password or a live invitation link: never kept by a browser or proxy cache.
    add_never_cache_headers(response)
    return response


@login_required
@require_POST
@never_cache
def create_account(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    form = CreateAccountForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            account = projects.create_account(
                project=access.project,
                username=data["username"],
                email=data["email"],
                role=data["role"],
                invite=data["access"] == "invite",
            )
        except ServiceError as exc:
            form.add_error("username", str(exc))
        else:
            return _account_page(request, access, account, created=True)
    return _members_page(request, access, create_form=form, status=400)


def _membership(access, membership_id: int) -> Membership:
    return get_object_or_404(
        Membership.objects.select_related("user"), project=access.project, pk=membership_id
    )


@login_required
@require_POST
def change_member(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    membership = _membership(access, membership_id)
    form = RoleForm(request.POST)
    if form.is_valid():
        try:
            projects.change_role(membership=membership, role=form.cleaned_data["role"])
        except ServiceError as exc:
            form.add_error("role", str(exc))
        else:
            messages.success(
                request,
                f"{membership.user.get_username()} is now a "
                f"{Role(form.cleaned_data['role']).label.lower()}.",
            )
            if membership.user_id == request.user.pk and form.cleaned_data["role"] != Role.ADMIN:
                return redirect("corpus:show-project", slug=slug)
            return redirect("corpus:list-members", slug=slug)
    messages.error(request, form.first_problem())
    return _members_page(request, access, status=400, **{f"role_{membership.pk}": form})


@login_required
@require_http_methods(["GET", "POST"])
def remove_member(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    """Asks first (GET, or a POST without the confirmation), then removes (POST)."""
    access = project_access(request.user, slug, role=Role.ADMIN)
    membership = _membership(access, membership_id)
    name = membership.user.get_username()
    if request.method == "GET" or request.POST.get("confirm") != "yes":
        context = {
            "access": access,
            "project": access.project,
            "membership": membership,
            "groups": membership.user.access_groups.filter(project=access.project).order_by("name"),
            "error": "Tick the box to confirm." if request.method == "POST" else "",
        }
        status = 400 if request.method == "POST" else 200
        return render(request, "corpus/remove_member.html", context, status=status)
    try:
        projects.remove_member(membership=membership, by=request.user)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("corpus:list-members", slug=slug)
    messages.success(
        request,
        f"{name} is no longer a member of {access.project.name}. Their work stays; move their "
        "unstarted assignments on the Assignments page.",
    )
    if membership.user_id == request.user.pk:
        return redirect("corpus:list-projects")
    return redirect("corpus:list-members", slug=slug)


@login_required
@require_POST
@never_cache
def renew_access(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    membership = _membership(access, membership_id)
    form = RenewAccessForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose an invitation link or a one-time password.")
        return redirect("corpus:list-members", slug=slug)
    try:
        account = projects.renew_access(
            user=membership.user,
            admin=request.user,
            invite=form.cleaned_data["access"] == "invite",
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("corpus:list-members", slug=slug)
    return _account_page(request, access, account, created=False)


@require_http_methods(["GET", "POST"])
@never_cache
def accept_invitation(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """An invitation link: its owner chooses a password and is logged in. Used once; it also
    stops working after PASSWORD_RESET_TIMEOUT."""
    try:
        user = User.objects.filter(pk=int(force_str(urlsafe_base64_decode(uidb64)))).first()
    except (ValueError, OverflowError):
        user = None
    if user is None or not user.is_active or not default_token_generator.check_token(user, token):
        return render(request, "corpus/accept_invitation.html", {"invalid": True}, status=400)
    form = SetPasswordForm(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.get_username()}: your password is set.")
        return redirect("corpus:list-projects")
    return render(
        request,
        "corpus/accept_invitation.html",
        {"form": form, "invitee": user},
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def join_project(request: HttpRequest, slug: str) -> HttpResponse:
    """An account accepts the invitation waiting for it (its Projects page lists them). Without
    one the project is answered as any project the account is not a member of: 404."""
    project = get_object_or_404(Project, slug=slug)
    try:
        membership = projects.accept_project_invitation(project=project, user=request.user)
    except ServiceError:
        raise Http404("No such project.") from None
    messages.success(
        request, f"Welcome to {project.name}: you are a {membership.get_role_display().lower()}."
    )
    return redirect("corpus:show-project", slug=slug)


# Access groups -------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def list_access_groups(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    form = AccessGroupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            group = projects.create_access_group(
                project=access.project, name=form.cleaned_data["name"]
            )
        except ServiceError as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Access group {group.name} created: choose its members.")
            return redirect("corpus:edit-access-group", slug=slug, access_group_id=group.pk)
    groups = access.project.access_groups.annotate(
        member_count=Count("members", distinct=True),
        mine=Count("members", filter=Q(members=request.user)),
    ).order_by("name")
    return render(
        request,
        "corpus/list_access_groups.html",
        {
            "access": access,
            "project": access.project,
            "groups": [
                {
                    "group": group,
                    # Only a member of the group may learn how many documents it restricts.
                    "documents": group.documents.count() if group.mine else None,
                }
                for group in groups
            ],
            "form": form,
            "changes": access.project.access_group_changes.all()[:CHANGES_SHOWN],
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def edit_access_group(request: HttpRequest, slug: str, access_group_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    group = get_object_or_404(AccessGroup, project=access.project, pk=access_group_id)
    form = AccessGroupMembersForm(
        request.POST or None,
        project=access.project,
        initial={"members": list(group.members.values_list("pk", flat=True))},
    )
    if request.method == "POST" and form.is_valid():
        members = list(form.cleaned_data["members"])
        projects.set_access_group_members(
            project=access.project, name=group.name, users=members, by=request.user
        )
        messages.success(
            request,
            f"{group.name} has {len(members)} member{'s' if len(members) != 1 else ''}; what "
            "each of them may see changed at once.",
        )
        return redirect("corpus:list-access-groups", slug=slug)
    return render(
        request,
        "corpus/edit_access_group.html",
        {
            "access": access,
            "project": access.project,
            "group": group,
            "form": form,
            "changes": group.changes.all()[:CHANGES_SHOWN],
        },
        status=400 if form.errors else 200,
    )


# The page a role too low for an action gets ----------------------------------------------------


def permission_denied(request: HttpRequest, exception=None) -> HttpResponse:
    """Django's 403 handler: the project's menu, what was refused and why, and who can help."""
    slug = (request.resolver_match.kwargs.get("slug") if request.resolver_match else None) or ""
    membership = (
        Membership.objects.select_related("project")
        .filter(user=request.user, project__slug=slug)
        .first()
        if slug and request.user.is_authenticated
        else None
    )
    context: dict = {"reason": str(exception or "") or "Your role does not allow this."}
    if membership is not None:
        context.update(
            access=project_access(request.user, slug),
            project=membership.project,
            admins=User.objects.filter(
                memberships__project_id=membership.project_id, memberships__role=Role.ADMIN
            )
            .exclude(pk=request.user.pk)
            .order_by("username"),
        )
    return render(request, "403.html", context, status=403)
