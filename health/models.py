"""Index health: the team's index manifests, the health thresholds, the checks and the stored
reports the Index health page renders."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from corpus.models import Project, Retriever


class IndexManifest(models.Model):
    """What the team's index holds, uploaded for one retriever (`goldeval.formats.manifests`'
    format)."""

    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="manifests")
    file_name = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    rows = models.PositiveIntegerField(default=0)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    uploaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "corpus_indexmanifest"
        ordering = ["-uploaded_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.retriever} manifest {self.pk}"


class ManifestSource(models.Model):
    """Where a retriever's manifest is fetched from: its own endpoint, configured by an admin,
    with its own headers (credentials as ``env:NAME``, read from the worker's environment when
    the fetch is made). Leads start a fetch; they never choose where it goes, and the search
    endpoint's credentials never travel with it."""

    retriever = models.OneToOneField(
        Retriever, on_delete=models.CASCADE, related_name="manifest_source"
    )
    url = models.CharField(max_length=2000)
    headers = models.JSONField(
        default=dict, blank=True, help_text="Request headers; credentials as env:NAME only."
    )
    timeout = models.FloatField(default=30.0, help_text="Seconds without an answer.")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"manifest source of {self.retriever}"


class IndexManifestRow(models.Model):
    """One indexed chunk (or document) of a manifest, as the file gave it."""

    manifest = models.ForeignKey(IndexManifest, on_delete=models.CASCADE, related_name="entries")
    line = models.PositiveIntegerField()
    doc_id = models.CharField(max_length=255)
    version = models.PositiveIntegerField(null=True)
    content_sha256 = models.CharField(max_length=64, blank=True)
    start = models.PositiveIntegerField(null=True)
    end = models.PositiveIntegerField(null=True)
    indexed_at = models.DateTimeField()
    embedding_model = models.CharField(max_length=200)
    embedding_revision = models.CharField(max_length=200, blank=True)
    dimension = models.PositiveIntegerField()

    class Meta:
        db_table = "corpus_indexmanifestrow"
        indexes = [models.Index(fields=["manifest", "doc_id"], name="manifest_row_doc")]

    def __str__(self) -> str:
        return f"{self.doc_id} (line {self.line})"


class IndexHealthThresholds(models.Model):
    """A project's alert thresholds for index health; a blank limit is not checked."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="index_health_thresholds"
    )
    max_stale = models.FloatField(
        null=True, blank=True, default=0.01, help_text="Share of searchable documents, 0–1."
    )
    max_lag_days = models.FloatField(null=True, blank=True, default=7)
    fail_on_model_mix = models.BooleanField(default=True)
    max_crowding = models.FloatField(
        null=True, blank=True, help_text="A run's mean share of top-k slots, 0–1."
    )

    class Meta:
        db_table = "evaluation_indexhealththresholds"

    def __str__(self) -> str:
        return f"index health thresholds of {self.project}"


class IndexHealthCheck(models.Model):
    """One recorded check of one retriever's index over the whole corpus (the daily task):
    the history plotted on the Index health page, and what the banner and emails say."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="health_checks")
    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="+")
    checked_at = models.DateTimeField()
    source = models.CharField(max_length=16, help_text="manifest or built-in")
    stale_share = models.FloatField()
    lag_p95_days = models.FloatField(null=True)
    lag_oldest_days = models.FloatField(null=True)
    mixed_models = models.BooleanField(default=False)
    crossed = models.JSONField(default=list, help_text="[{check, value, limit, message}]")
    notified = models.BooleanField(default=False, help_text="Admins were emailed about it.")

    class Meta:
        db_table = "evaluation_indexhealthcheck"
        ordering = ["retriever", "checked_at", "pk"]

    def __str__(self) -> str:
        return f"{self.retriever} checked {self.checked_at:%Y-%m-%d}"


class IndexHealthReport(models.Model):
    """Index health figures of one retriever's large index for one state of its inputs (the
    documents a viewer may see and their versions, the manifest or index, the thresholds, k),
    computed by a job and stored, so the page reads no manifest rows itself. Another state of
    the inputs is another report."""

    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64, help_text="SHA-256 of the inputs.")
    source = models.CharField(max_length=16)
    described = models.CharField(max_length=300)
    report = models.JSONField(help_text="goldeval.scoring.health.check_index's report.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "evaluation_indexhealthreport"
        constraints = [
            models.UniqueConstraint(fields=["retriever", "key"], name="one_health_report_per_key")
        ]

    def __str__(self) -> str:
        return f"{self.retriever} health {self.key[:8]}"
