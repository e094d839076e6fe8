from django.contrib import admin

from answers.models import (
    Answer,
    AnswerAssignment,
    AnswerItemDecision,
    AnswerPassage,
    AnswerResolution,
    AnswerRun,
    AnswerSentence,
    CitationJudgement,
    ClaimEvidence,
    ClaimJudgement,
    FactJudgement,
    ReferenceAnswer,
    ReferenceFact,
)


@admin.register(AnswerRun)
class AnswerRunAdmin(admin.ModelAdmin):
    list_display = ["name", "question_set", "system", "system_version", "created_at"]
    raw_id_fields = ["question_set", "created_by"]


@admin.register(Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ["run", "question", "refused", "line"]
    raw_id_fields = ["run", "question"]


@admin.register(AnswerSentence)
class AnswerSentenceAdmin(admin.ModelAdmin):
    list_display = ["answer", "position", "start", "end"]
    raw_id_fields = ["answer"]


@admin.register(AnswerPassage)
class AnswerPassageAdmin(admin.ModelAdmin):
    list_display = ["answer", "role", "position", "version", "start", "end"]
    raw_id_fields = ["answer", "sentence", "version"]


@admin.register(ReferenceAnswer)
class ReferenceAnswerAdmin(admin.ModelAdmin):
    list_display = ["question", "version", "created_by", "created_at"]
    raw_id_fields = ["question", "created_by"]


@admin.register(ReferenceFact)
class ReferenceFactAdmin(admin.ModelAdmin):
    list_display = ["reference", "position", "vital", "text"]
    raw_id_fields = ["reference"]


@admin.register(AnswerAssignment)
class AnswerAssignmentAdmin(admin.ModelAdmin):
    list_display = ["answer", "labeller", "slot", "wrongly_refused", "done_at"]
    raw_id_fields = ["answer", "labeller", "reference"]


@admin.register(ClaimJudgement)
class ClaimJudgementAdmin(admin.ModelAdmin):
    list_display = ["assignment", "position", "start", "end", "support"]
    raw_id_fields = ["assignment"]


@admin.register(CitationJudgement)
class CitationJudgementAdmin(admin.ModelAdmin):
    list_display = ["claim", "passage", "grade"]
    raw_id_fields = ["claim", "passage"]


@admin.register(FactJudgement)
class FactJudgementAdmin(admin.ModelAdmin):
    list_display = ["assignment", "fact", "present"]
    raw_id_fields = ["assignment", "fact"]


@admin.register(AnswerResolution)
class AnswerResolutionAdmin(admin.ModelAdmin):
    list_display = ["answer", "chosen", "decided_by", "decided_at"]
    raw_id_fields = ["answer", "chosen", "decided_by"]


@admin.register(ClaimEvidence)
class ClaimEvidenceAdmin(admin.ModelAdmin):
    list_display = ["claim", "version", "start", "end"]
    raw_id_fields = ["claim", "version"]


@admin.register(AnswerItemDecision)
class AnswerItemDecisionAdmin(admin.ModelAdmin):
    list_display = ["answer", "item", "value", "decided_by", "decided_at"]
    raw_id_fields = ["answer", "decided_by"]
