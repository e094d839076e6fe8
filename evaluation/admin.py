"""Gold sets and runs are read-only here: a finalised gold set never changes, and the Django
admin bypasses every access-group check, so it shows metadata, never file contents."""

from django.contrib import admin

from evaluation.models import (
    BuildEvaluationStart,
    EvaluationReport,
    EvaluationRun,
    GoldSet,
    GoldSetFile,
    IndexEvaluation,
    PermissionReplay,
    PermissionReplayRun,
    RunDeletion,
)
from goldset.admin import ReadOnlyAdmin


class GoldSetFileInline(admin.TabularInline):
    model = GoldSetFile
    fields = ["name", "size", "sha256"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(GoldSet)
class GoldSetAdmin(ReadOnlyAdmin):
    list_display = ["question_set", "number", "created_by", "created_at", "checksum"]
    list_filter = ["question_set__project"]
    fields = ["question_set", "number", "created_by", "created_at", "checksum", "manifest"]
    readonly_fields = fields
    inlines = [GoldSetFileInline]


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdmin):
    list_display = ["name", "gold_set", "source", "retriever", "depth", "questions", "created_at"]
    list_filter = ["source", "gold_set__question_set__project"]
    fields = [
        "name",
        "gold_set",
        "source",
        "retriever",
        "index_built_at",
        "depth",
        "file_name",
        "sha256",
        "questions",
        "created_by",
        "created_at",
    ]
    readonly_fields = fields


@admin.register(RunDeletion)
class RunDeletionAdmin(ReadOnlyAdmin):
    list_display = ["name", "gold_set", "source", "deleted_by", "deleted_at"]
    list_filter = ["gold_set__question_set__project"]
    fields = [
        "name",
        "gold_set",
        "source",
        "file_name",
        "sha256",
        "questions",
        "stored_by",
        "stored_at",
        "deleted_by",
        "deleted_at",
    ]
    readonly_fields = fields


@admin.register(PermissionReplay)
class PermissionReplayAdmin(ReadOnlyAdmin):
    list_display = ["pk", "gold_set", "source", "retriever_name", "k", "created_at"]
    list_filter = ["source", "gold_set__question_set__project"]
    fields = ["gold_set", "source", "retriever", "k", "with_canaries", "job", "created_by"]
    readonly_fields = fields


@admin.register(PermissionReplayRun)
class PermissionReplayRunAdmin(ReadOnlyAdmin):
    list_display = ["replay", "user_name", "file_name", "questions"]
    fields = ["replay", "user_name", "test_user", "file_name", "questions"]


@admin.register(EvaluationReport)
class EvaluationReportAdmin(ReadOnlyAdmin):
    list_display = ["gold_set", "key", "created_at"]
    fields = ["gold_set", "key", "choice", "created_at"]
    readonly_fields = fields


@admin.register(IndexEvaluation)
class IndexEvaluationAdmin(ReadOnlyAdmin):
    list_display = ["retriever", "built_at", "gold_set", "change", "k"]
    fields = ["retriever", "gold_set", "built_at", "change", "scheme", "model", "k", "metrics"]
    readonly_fields = fields


@admin.register(BuildEvaluationStart)
class BuildEvaluationStartAdmin(ReadOnlyAdmin):
    list_display = ["retriever", "built_at", "job", "created_at"]
    fields = list_display
    readonly_fields = fields
