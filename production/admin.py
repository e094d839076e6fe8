"""The production loop in the admin. Read-mostly: traces come from the team's system, tokens are
made on the project's token page (the secret is never stored)."""

from django.contrib import admin

from goldset.admin import ReadOnlyAdmin
from production.models import (
    ApiToken,
    ProductionReport,
    PromotedQuestion,
    ReportMissedQuestion,
    Sample,
    SampledTrace,
    SamplingRule,
    Trace,
)


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["trace_id", "project", "occurred_at", "thumb", "refused"]
    list_filter = ["has_unknown_documents"]
    search_fields = ["trace_id"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "prefix", "created_at", "expires_at", "revoked_at"]
    readonly_fields = ["digest", "prefix"]


@admin.register(SamplingRule)
class SamplingRuleAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "project", "strategy", "size", "active"]


@admin.register(Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = ["pk", "project", "rule", "window_end", "population", "question_set"]


@admin.register(SampledTrace)
class SampledTraceAdmin(admin.ModelAdmin):
    list_display = ["sample", "trace", "stratum", "inclusion_probability"]
    raw_id_fields = ["sample", "trace", "question"]


@admin.register(PromotedQuestion)
class PromotedQuestionAdmin(admin.ModelAdmin):
    list_display = ["question", "sampled_trace", "promoted_at"]
    raw_id_fields = ["question", "sampled_trace"]


@admin.register(ProductionReport)
class ProductionReportAdmin(ReadOnlyAdmin):
    """Metadata only: the report quotes passages an access group may hide."""

    list_display = ["sample", "key", "created_at"]
    fields = list_display
    readonly_fields = fields


@admin.register(ReportMissedQuestion)
class ReportMissedQuestionAdmin(ReadOnlyAdmin):
    """Metadata only, as its report: the misses quote passages an access group may hide."""

    list_display = ["report", "position"]
    fields = list_display
    readonly_fields = fields
