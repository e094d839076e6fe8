"""A labeller's answers on their Re-check page (`labelling.services.recheck`): for each of their
spans on a document that changed after they labelled, confirmed, re-marked or gone."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from corpus.models import DocumentVersion


class SpanRecheck(models.Model):
    """A labeller's answer for their span on a changed document, which the gold rule uses;
    its history is `Change` rows (subject recheck)."""

    span = models.OneToOneField("labelling.Span", on_delete=models.CASCADE, related_name="recheck")
    outcome = models.CharField(max_length=16)  # "confirmed", "re-marked" or "gone"
    version = models.ForeignKey(DocumentVersion, on_delete=models.PROTECT, related_name="+")
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    quote = models.TextField(blank=True)
    made_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    made_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.span}: {self.outcome}"
