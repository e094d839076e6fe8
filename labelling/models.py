"""Questions and the judgements made about them."""

from __future__ import annotations

from django.db import models

from corpus.models import Document, Project


class QuestionSet(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="question_sets")
    name = models.SlugField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_question_set_name")
        ]

    def __str__(self) -> str:
        return self.name


class Question(models.Model):
    """A real user question; `text` is stored byte-for-byte as given (typos and all)."""

    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="questions"
    )
    external_id = models.CharField(max_length=255)
    text = models.TextField()
    source = models.CharField(max_length=200, blank=True)
    tags = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question_set", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["question_set", "external_id"], name="unique_question_id_in_set"
            )
        ]

    def __str__(self) -> str:
        return self.external_id


class ImportedJudgement(models.Model):
    """A document-level grade brought in from elsewhere (e.g. BEIR qrels), kept as given.

    Imported grades may use more levels than Goldset's 0–2 (0–4, or negative for "junk").
    """

    question = models.ForeignKey(
        Question, on_delete=models.CASCADE, related_name="imported_judgements"
    )
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="imported_judgements"
    )
    grade = models.IntegerField()
    source = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["question", "document", "source"], name="one_imported_grade_per_source"
            )
        ]

    def __str__(self) -> str:
        return f"{self.question} {self.document} {self.grade}"
