"""What came into labelling from files as it was given: imported document-level grades and the
results of uploaded runs. Models of the labelling app (see labelling/models.py)."""

from __future__ import annotations

from django.db import models

from corpus.models import Document, DocumentVersion, Retriever


class ImportedJudgement(models.Model):
    """A document-level grade brought in from elsewhere (e.g. BEIR qrels), kept as given.

    Imported grades may use more levels than Goldset's 0–2 (0–4, or negative for "junk").
    """

    question = models.ForeignKey(
        "labelling.Question", on_delete=models.CASCADE, related_name="imported_judgements"
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


class RunResult(models.Model):
    """One ranked result of an uploaded run (a `run` retriever), mapped to a document version."""

    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="run_results")
    question = models.ForeignKey(
        "labelling.Question", on_delete=models.CASCADE, related_name="run_results"
    )
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True, blank=True)
    version = models.ForeignKey(DocumentVersion, on_delete=models.CASCADE, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        ordering = ["retriever", "question", "rank"]
        indexes = [models.Index(fields=["retriever", "question", "rank"])]

    def __str__(self) -> str:
        return f"{self.retriever} {self.question} #{self.rank}"
