from django.contrib import admin

from labelling.models import (
    Assignment,
    Candidate,
    Change,
    Guideline,
    ImportedJudgement,
    Judgement,
    Pool,
    PoolHit,
    Provenance,
    Question,
    QuestionSet,
    Resolution,
    RunResult,
    Span,
    Verdict,
)


@admin.register(QuestionSet)
class QuestionSetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "created_at"]


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ["external_id", "question_set", "text"]
    search_fields = ["external_id", "text"]
    raw_id_fields = ["duplicate_of"]


@admin.register(ImportedJudgement)
class ImportedJudgementAdmin(admin.ModelAdmin):
    list_display = ["question", "document", "grade", "source"]
    raw_id_fields = ["question", "document"]


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name", "question_set", "depth", "state", "created_at"]
    raw_id_fields = ["job"]


class ProvenanceInline(admin.TabularInline):
    model = Provenance
    extra = 0
    raw_id_fields = ["retriever"]


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ["pk", "pool", "question", "version", "start", "end", "shuffle_rank"]
    raw_id_fields = ["pool", "question", "version"]
    inlines = [ProvenanceInline]


@admin.register(Guideline)
class GuidelineAdmin(admin.ModelAdmin):
    list_display = ["project", "version", "created_by", "created_at"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["pool", "question", "slot", "labeller", "assigned_at", "completed_at"]
    raw_id_fields = ["pool", "question", "labeller"]


class SpanInline(admin.TabularInline):
    model = Span
    extra = 0
    raw_id_fields = ["version", "resolution"]


@admin.register(Judgement)
class JudgementAdmin(admin.ModelAdmin):
    list_display = ["assignment", "candidate", "grade", "revision", "updated_at"]
    raw_id_fields = ["assignment", "candidate", "guideline"]
    inlines = [SpanInline]


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ["assignment", "outcome", "revision", "updated_at"]
    raw_id_fields = ["assignment", "guideline"]


@admin.register(Resolution)
class ResolutionAdmin(admin.ModelAdmin):
    list_display = [
        "pool",
        "question",
        "candidate",
        "grade",
        "outcome",
        "resolved_by",
        "resolved_at",
    ]
    raw_id_fields = ["pool", "question", "candidate"]


@admin.register(Span)
class SpanAdmin(admin.ModelAdmin):
    list_display = ["version", "start", "end", "judgement", "resolution"]
    raw_id_fields = ["version", "judgement", "resolution"]


@admin.register(Change)
class ChangeAdmin(admin.ModelAdmin):
    """Append-only history: readable, never editable."""

    list_display = ["assignment", "action", "made_by", "made_at"]
    raw_id_fields = ["assignment", "candidate"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(RunResult)
class RunResultAdmin(admin.ModelAdmin):
    list_display = ["retriever", "question", "rank", "score", "version", "start", "end"]
    raw_id_fields = ["question", "version"]


@admin.register(PoolHit)
class PoolHitAdmin(admin.ModelAdmin):
    list_display = ["pool", "question", "retriever", "rank", "score"]
    raw_id_fields = ["pool", "question", "version"]


@admin.register(Provenance)
class ProvenanceAdmin(admin.ModelAdmin):
    list_display = ["candidate", "retriever", "rank", "score"]
    raw_id_fields = ["candidate"]
