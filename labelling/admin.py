from django.contrib import admin

from labelling.models import ImportedJudgement, Question, QuestionSet


@admin.register(QuestionSet)
class QuestionSetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "created_at"]


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ["external_id", "question_set", "text"]
    search_fields = ["external_id", "text"]


@admin.register(ImportedJudgement)
class ImportedJudgementAdmin(admin.ModelAdmin):
    list_display = ["question", "document", "grade", "source"]
    raw_id_fields = ["question", "document"]
