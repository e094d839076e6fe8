from django.contrib import admin

from judges.models import (
    AIJudgement,
    GoldVoteSwitch,
    Judge,
    JudgeCanary,
    JudgeCanaryResult,
    JudgePrompt,
)


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "template", "model", "url"]
    raw_id_fields = ["project", "created_by"]
    filter_horizontal = ["access_groups"]


@admin.register(JudgePrompt)
class JudgePromptAdmin(admin.ModelAdmin):
    list_display = ["judge", "version", "guideline", "created_at"]
    raw_id_fields = ["judge", "guideline"]


@admin.register(AIJudgement)
class AIJudgementAdmin(admin.ModelAdmin):
    list_display = ["judge", "prompt", "candidate", "judging_pass", "grade", "placed", "judged_at"]
    raw_id_fields = ["judge", "prompt", "candidate"]


@admin.register(JudgeCanary)
class JudgeCanaryAdmin(admin.ModelAdmin):
    list_display = ["question_set", "question", "kind", "created_at"]
    raw_id_fields = ["question_set", "question", "candidate"]


@admin.register(JudgeCanaryResult)
class JudgeCanaryResultAdmin(admin.ModelAdmin):
    list_display = ["judge", "prompt", "canary", "grade", "judged_at"]
    raw_id_fields = ["judge", "prompt", "canary"]


@admin.register(GoldVoteSwitch)
class GoldVoteSwitchAdmin(admin.ModelAdmin):
    list_display = ["question_set", "judge", "on", "changed_by", "changed_at"]
    raw_id_fields = ["question_set", "judge", "changed_by"]
