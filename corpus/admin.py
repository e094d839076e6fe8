from django.contrib import admin
from django.contrib.auth import get_user_model

from corpus.models import (
    AccessGroup,
    AccessGroupChange,
    Chunk,
    ChunkingScheme,
    Document,
    DocumentVersion,
    DuplicateGroup,
    EmbeddingCache,
    Index,
    Job,
    Membership,
    OneTimePassword,
    PermissionProfile,
    Project,
    ProjectInvitation,
    Retriever,
    Upload,
)
from corpus.services import projects


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]
    autocomplete_fields = ["user", "project"]


@admin.register(AccessGroup)
class AccessGroupAdmin(admin.ModelAdmin):
    list_display = ["name", "project"]
    list_filter = ["project"]
    filter_horizontal = ["members"]

    def save_related(self, request, form, formsets, change):
        group = form.instance
        before = set(group.members.values_list("pk", flat=True))
        super().save_related(request, form, formsets, change)
        after = set(group.members.values_list("pk", flat=True))
        users = {u.pk: u for u in get_user_model().objects.filter(pk__in=before ^ after)}
        projects.record_group_changes(
            group=group,
            added=[users[pk] for pk in sorted(after - before)],
            removed=[users[pk] for pk in sorted(before - after)],
            by=request.user,
        )
        projects.access_changed(project=group.project, user_ids=before ^ after)

    def delete_model(self, request, obj):
        members = list(obj.members.all())
        projects.record_group_changes(group=obj, added=(), removed=members, by=request.user)
        super().delete_model(request, obj)
        projects.access_changed(project=obj.project, user_ids=[u.pk for u in members])

    def delete_queryset(self, request, queryset):
        for group in queryset:
            self.delete_model(request, group)


@admin.register(AccessGroupChange)
class AccessGroupChangeAdmin(admin.ModelAdmin):
    """The record of access group changes: read, never edited."""

    list_display = ["changed_at", "project", "group_name", "member_name", "added", "self_added"]
    list_display += ["changed_by_name"]
    list_filter = ["project", "added", "self_added"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(OneTimePassword)
class OneTimePasswordAdmin(admin.ModelAdmin):
    """Who still has to choose their own password; the issued password's hash is never shown.
    A row is removed to lift the requirement; one is made only by issuing a password."""

    list_display = ["user", "issued_at"]
    fields = ["user", "issued_at"]
    readonly_fields = ["user", "issued_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ProjectInvitation)
class ProjectInvitationAdmin(admin.ModelAdmin):
    list_display = ["username", "project", "role", "invited_by", "created_at", "accepted_at"]
    list_filter = ["project"]
    raw_id_fields = ["invited_by"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["doc_id", "title", "project", "latest_version", "duplicate_group"]
    list_filter = ["project"]
    search_fields = ["doc_id", "title"]
    raw_id_fields = ["latest_version", "duplicate_group"]
    filter_horizontal = ["access_groups"]

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        projects.access_changed(project=form.instance.project, document_ids=[form.instance.pk])


@admin.register(DocumentVersion)
class DocumentVersionAdmin(admin.ModelAdmin):
    list_display = ["document", "version", "quality_flagged", "quality_accepted_at", "created_at"]
    list_filter = ["quality_flagged"]
    search_fields = ["document__doc_id"]
    raw_id_fields = ["document", "quality_accepted_by"]
    readonly_fields = ["text", "content_hash", "extraction"]


@admin.register(DuplicateGroup)
class DuplicateGroupAdmin(admin.ModelAdmin):
    list_display = ["pk", "project", "representative"]
    raw_id_fields = ["representative"]


@admin.register(ChunkingScheme)
class ChunkingSchemeAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "strategy", "unit", "size", "overlap"]


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["version", "scheme", "ordinal", "start", "end"]
    raw_id_fields = ["version", "scheme"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["pk", "kind", "project", "state", "done", "total", "created_at"]
    list_filter = ["state", "kind"]


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ["name", "size", "job"]
    exclude = ["content"]  # originals are never served back from the app's origin
    readonly_fields = ["name", "size", "sha256", "job"]


@admin.register(Retriever)
class RetrieverAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "kind", "scheme", "active_index"]
    list_filter = ["kind"]
    raw_id_fields = ["active_index"]
    # Changed through the retriever pages or add_retriever, which refuse secrets as values.
    readonly_fields = ["endpoint"]


@admin.register(PermissionProfile)
class PermissionProfileAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "unrestricted", "created_at"]
    list_filter = ["project"]
    filter_horizontal = ["access_groups"]
    # Changed on the test users page or with add_test_user, which refuse secrets as values.
    readonly_fields = ["headers", "user_value"]


@admin.register(Index)
class IndexAdmin(admin.ModelAdmin):
    list_display = ["pk", "retriever", "state", "built_at", "passages", "model_name", "dimension"]
    readonly_fields = ["artifact_name", "artifact_size", "artifact_sha256"]
    raw_id_fields = ["job"]


@admin.register(EmbeddingCache)
class EmbeddingCacheAdmin(admin.ModelAdmin):
    list_display = ["model_version", "text_hash"]
    exclude = ["vector"]
