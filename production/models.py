"""The production loop's rows: traces the team's system logged, the tokens it sends them with,
sampling rules (versioned), the samples drawn and the traces each sample holds.

Kept apart from `labelling/models.py` (which re-exports them, so Django finds them there) because
they are one room of their own: what came from production, and how it was sampled.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from corpus.models import Project


class TraceQuerySet(models.QuerySet):
    def in_project(self, project) -> TraceQuerySet:
        return self.filter(project=project)

    def with_unknown_documents(self) -> TraceQuerySet:
        """Traces naming documents the corpus does not have: the index has drifted from it."""
        return self.filter(has_unknown_documents=True)

    def older_than(self, moment) -> TraceQuerySet:
        return self.filter(occurred_at__lt=moment)

    def never_sampled(self) -> TraceQuerySet:
        return self.filter(~models.Exists(SampledTrace.objects.filter(trace=models.OuterRef("pk"))))


class Trace(models.Model):
    """One answered question as the team's production system logged it.

    `user` and `user_groups` are the asker's identity, kept for the permission replay; no page
    a labeller can reach shows them, and questions made from a trace carry only its text.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="traces")
    trace_id = models.CharField(max_length=200)
    occurred_at = models.DateTimeField()
    user = models.CharField(max_length=200, blank=True)
    user_groups = models.JSONField(default=list, blank=True)
    question = models.TextField()
    retrieved = models.JSONField(
        default=list, blank=True, help_text="[{doc_id, start?, end?, rank, score?}] in rank order."
    )
    answer = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)
    refused = models.BooleanField(null=True, blank=True)
    thumb = models.CharField(max_length=4, blank=True, help_text='"up", "down" or blank.')
    comment = models.TextField(blank=True)
    system_version = models.CharField(max_length=200, blank=True)
    index_manifest = models.JSONField(null=True, blank=True)
    top_score = models.FloatField(null=True, blank=True)
    has_citations = models.BooleanField(default=False)
    unknown_doc_ids = models.JSONField(
        default=list, blank=True, help_text="Retrieved doc ids the corpus does not know."
    )
    has_unknown_documents = models.BooleanField(default=False)
    received_at = models.DateTimeField(default=timezone.now)

    objects = TraceQuerySet.as_manager()

    class Meta:
        db_table = "labelling_trace"
        ordering = ["-occurred_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "trace_id"], name="one_trace_per_id")
        ]
        indexes = [models.Index(fields=["project", "occurred_at"], name="trace_project_time")]

    def __str__(self) -> str:
        return self.trace_id


class ApiTokenQuerySet(models.QuerySet):
    def live(self, now=None) -> ApiTokenQuerySet:
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    """A project's key for sending traces. Only a SHA-256 digest of it is stored: the token is
    shown once, when made, and cannot be read back. Tokens are long random strings, so a plain
    digest (not a slow password hash) is enough, and a request is checked in one lookup."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, to tell it.")
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        db_table = "labelling_apitoken"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def state(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        return "live"


class SamplingStrategy(models.TextChoices):
    UNIFORM = "uniform", "Uniform"
    STRATIFIED = "stratified", "Stratified, with quotas per stratum"
    NEGATIVE_FIRST = "negative_first", "Negative feedback first"
    DISAGREEMENT = "disagreement", "Disagreement with the built-in retrievers"


class SamplingRule(models.Model):
    """A versioned rule: editing a rule adds its next version, so every sample names exactly
    the rule that drew it. `filters` keys: `window_days`, `feedback` (down/up/any/none),
    `refused` (true/false), `no_citation`, `top_score_below`, `user_group`."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sampling_rules")
    name = models.SlugField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    filters = models.JSONField(default=dict, blank=True)
    strategy = models.CharField(
        max_length=20, choices=SamplingStrategy.choices, default=SamplingStrategy.UNIFORM
    )
    stratify_by = models.CharField(max_length=40, blank=True)
    quotas = models.JSONField(default=dict, blank=True)
    size = models.PositiveIntegerField(default=50)
    seed = models.BigIntegerField(default=0)
    retrievers = models.ManyToManyField(
        "corpus.Retriever", blank=True, related_name="+", help_text="For disagreement."
    )
    active = models.BooleanField(default=True, help_text="Drawn by the weekly task.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labelling_samplingrule"
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name", "version"], name="one_rule_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class Sample(models.Model):
    """One draw of a rule over the traces of a time window."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="samples")
    rule = models.ForeignKey(SamplingRule, on_delete=models.PROTECT, related_name="samples")
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    population = models.PositiveIntegerField(help_text="Traces the rule's filter selected.")
    strata = models.JSONField(
        default=dict, blank=True, help_text="{stratum: {population, drawn}} as drawn."
    )
    question_set = models.OneToOneField(
        "labelling.QuestionSet",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sample",
    )
    retriever = models.ForeignKey(
        "corpus.Retriever",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The production retrieval, as a run source.",
    )
    drawn_at = models.DateTimeField(auto_now_add=True)
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    seen_at = models.DateTimeField(null=True, blank=True, help_text="When a lead opened it.")

    class Meta:
        db_table = "labelling_sample"
        ordering = ["-drawn_at"]

    def __str__(self) -> str:
        return f"sample {self.pk} of {self.rule}"


class SampledTrace(models.Model):
    """A trace in a sample, with what an unbiased estimate needs: its stratum and its
    probability of having been drawn."""

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="traces")
    trace = models.ForeignKey(Trace, on_delete=models.PROTECT, related_name="samplings")
    stratum = models.CharField(max_length=200, blank=True)
    inclusion_probability = models.FloatField()
    question = models.OneToOneField(
        "labelling.Question",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sampled_trace",
    )

    class Meta:
        db_table = "labelling_sampledtrace"
        ordering = ["sample", "id"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "trace"], name="one_trace_per_sample"),
            models.CheckConstraint(
                condition=Q(inclusion_probability__gt=0) & Q(inclusion_probability__lte=1),
                name="inclusion_probability_in_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.trace} in {self.sample}"


class PromotedQuestion(models.Model):
    """A labelled production question copied into another question set, so the set's next
    gold set version holds it; it keeps its trace, sample and rule (the manifest names them)."""

    question = models.OneToOneField(
        "labelling.Question", on_delete=models.CASCADE, related_name="promotion"
    )
    sampled_trace = models.ForeignKey(
        SampledTrace, on_delete=models.PROTECT, related_name="promotions"
    )
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    promoted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labelling_promotedquestion"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.question} from {self.sampled_trace}"


class ProductionReport(models.Model):
    """A production sample's misses report and the trend over samples, computed by a job and
    stored (`production.services.reports`): the page renders it and computes
    nothing. One report per sample and key: the key names the viewers' visibility (their access
    groups) and the state of the labels they may see, so a label changed, a pool rebuilt or a
    document re-grouped is another key, and nobody is shown figures computed over documents
    hidden from them."""

    sample = models.ForeignKey("production.Sample", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64, help_text="SHA-256 of visibility and label state.")
    visibility = models.CharField(max_length=64, help_text="SHA-256 of the viewers' groups.")
    content = models.JSONField(help_text="What the misses page shows.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "evaluation_productionreport"
        ordering = ["sample", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "key"], name="one_production_report_per_key")
        ]

    def __str__(self) -> str:
        return f"misses report of sample {self.sample_id} ({self.key[:8]})"


class ReportMissedQuestion(models.Model):
    """One missed question of a stored `ProductionReport` (its text, recall and the gold spans
    production missed), kept apart from the report's content: at a real project's size the
    misses run to megabytes, and a page reads only the questions it shows
    (`production.services.reports.report_page`)."""

    report = models.ForeignKey(ProductionReport, on_delete=models.CASCADE, related_name="missed")
    position = models.PositiveIntegerField(help_text="Its place in the report's list.")
    content = models.JSONField()

    class Meta:
        db_table = "evaluation_reportmissedquestion"
        ordering = ["report", "position"]
        constraints = [
            models.UniqueConstraint(fields=["report", "position"], name="one_missed_per_position")
        ]

    def __str__(self) -> str:
        return f"missed question {self.position} of {self.report}"
