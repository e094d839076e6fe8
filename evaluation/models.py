"""Frozen gold sets and the runs scored against them.

A gold set is written once, by `evaluation.services.gold_sets.finalise_gold_set`, and never
changed: its bundle files live in the database (so any web process can serve them) beside a
manifest that names the SHA-256 of each file.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Exists, OuterRef

from corpus.models import Document, Job, PermissionProfile, Retriever


class GoldSetQuerySet(models.QuerySet):
    def in_project(self, project) -> GoldSetQuerySet:
        return self.filter(question_set__project=project)

    def newest_first(self) -> GoldSetQuerySet:
        return self.order_by("question_set__name", "-number")


class GoldSet(models.Model):
    """A numbered, frozen export of a question set's resolved labels (v1, v2, …)."""

    question_set = models.ForeignKey(
        "labelling.QuestionSet", on_delete=models.PROTECT, related_name="gold_sets"
    )
    number = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField()
    manifest = models.JSONField(help_text="The bundle's manifest.json, as written.")
    checksum = models.CharField(max_length=64, help_text="SHA-256 of manifest.json.")
    # Every document the bundle carries text of, so a download can be refused to anyone an
    # access group hides one of them from.
    documents = models.ManyToManyField(Document, related_name="gold_sets", blank=True)
    document_count = models.PositiveIntegerField(default=0)

    objects = GoldSetQuerySet.as_manager()

    class Meta:
        ordering = ["question_set", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["question_set", "number"], name="unique_gold_set_number"
            )
        ]

    def __str__(self) -> str:
        return f"{self.question_set} {self.label}"

    @property
    def label(self) -> str:
        return f"v{self.number}"

    def hidden_document_count(self, user) -> int:
        """Documents of the bundle the user may not see (deleted ones count as hidden)."""
        visible = Document.objects.visible_to(user).filter(pk=OuterRef("pk"))
        kept = self.documents.annotate(seen=Exists(visible))
        return kept.filter(seen=False).count() + (self.document_count - kept.count())


class GoldSetFile(models.Model):
    """One file of a gold set's bundle, by its path inside the bundle folder."""

    gold_set = models.ForeignKey(GoldSet, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=200)
    content = models.BinaryField()
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["gold_set", "name"]
        constraints = [
            models.UniqueConstraint(fields=["gold_set", "name"], name="unique_gold_set_file")
        ]

    def __str__(self) -> str:
        return f"{self.gold_set} {self.name}"


class RunSource(models.TextChoices):
    RETRIEVER = "retriever", "Built-in retriever"
    UPLOAD = "upload", "Uploaded run file"


class EvaluationRunQuerySet(models.QuerySet):
    def of_gold_set(self, gold_set) -> EvaluationRunQuerySet:
        return self.filter(gold_set=gold_set).order_by("created_at", "pk")


class EvaluationRun(models.Model):
    """A ranked list of passages per question of one gold set, stored as the run file itself
    (JSONL or TREC) so the page scores exactly what `python -m goldeval` would."""

    gold_set = models.ForeignKey(GoldSet, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=100)
    source = models.CharField(max_length=16, choices=RunSource.choices)
    retriever = models.ForeignKey(
        Retriever, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    index_built_at = models.DateTimeField(
        null=True, blank=True, help_text="When the retriever's index read the corpus."
    )
    depth = models.PositiveIntegerField(
        null=True, blank=True, help_text="Passages retrieved per question (built-in runs)."
    )
    file_name = models.CharField(max_length=255)
    content = models.BinaryField()
    sha256 = models.CharField(max_length=64)
    questions = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = EvaluationRunQuerySet.as_manager()

    class Meta:
        ordering = ["gold_set", "created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["gold_set", "name"], name="unique_run_name_per_gold_set"
            )
        ]

    def __str__(self) -> str:
        return self.name


class RunDeletion(models.Model):
    """A run a lead or admin deleted: what it was, who deleted it and when. The run itself, its
    figures and its points on a retriever's plot are gone; this row is what stays, shown on the
    evaluation page."""

    gold_set = models.ForeignKey(GoldSet, on_delete=models.CASCADE, related_name="run_deletions")
    name = models.CharField(max_length=100)
    source = models.CharField(max_length=16, choices=RunSource.choices)
    file_name = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the deleted run file.")
    questions = models.PositiveIntegerField(default=0)
    stored_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    stored_at = models.DateTimeField(help_text="When the run was stored.")
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    deleted_at = models.DateTimeField()

    class Meta:
        ordering = ["gold_set", "-deleted_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} deleted from {self.gold_set}"


class ReplaySource(models.TextChoices):
    RETRIEVER = "retriever", "A retriever, run as each test user"
    UPLOAD = "upload", "Uploaded runs, one per test user"


class PermissionReplayQuerySet(models.QuerySet):
    def in_project(self, project) -> PermissionReplayQuerySet:
        return self.filter(gold_set__question_set__project=project)


class PermissionReplay(models.Model):
    """Every question of a gold set (and the project's canary questions) run as each test user,
    checked against the documents' access groups as recorded in ``snapshot`` when it started."""

    gold_set = models.ForeignKey(
        GoldSet, on_delete=models.CASCADE, related_name="permission_replays"
    )
    source = models.CharField(max_length=16, choices=ReplaySource.choices)
    retriever = models.ForeignKey(
        Retriever, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    retriever_name = models.CharField(max_length=60, blank=True)
    k = models.PositiveIntegerField(help_text="Results asked for per question and user.")
    with_canaries = models.BooleanField(default=True)
    test_users = models.ManyToManyField(PermissionProfile, blank=True, related_name="+")
    snapshot = models.JSONField(
        default=dict,
        help_text="Each document's access groups and canary flag when the replay started.",
    )
    report = models.JSONField(default=dict, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PermissionReplayQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"permission replay {self.pk} of {self.gold_set}"


class PermissionReplayRun(models.Model):
    """One test user's run of a replay, stored as a JSONL run file (uploaded or retrieved)."""

    replay = models.ForeignKey(PermissionReplay, on_delete=models.CASCADE, related_name="runs")
    user_name = models.CharField(max_length=60, help_text="The test user, or 'unrestricted'.")
    test_user = models.ForeignKey(
        PermissionProfile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    file_name = models.CharField(max_length=255)
    content = models.BinaryField()
    questions = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["replay", "user_name"]
        constraints = [
            models.UniqueConstraint(fields=["replay", "user_name"], name="one_run_per_replay_user")
        ]

    def __str__(self) -> str:
        return f"{self.replay} as {self.user_name}"


class EvaluationReport(models.Model):
    """The evaluation page's figures for one choice of runs of a gold set, computed by a job
    and stored: opening the page renders them and scores nothing itself (scoring re-anchors
    spans and reads every run, which can take minutes). A gold set and its runs never change,
    so a report stays true; choosing other runs, or another k sent to the model, is another
    report."""

    gold_set = models.ForeignKey(GoldSet, on_delete=models.CASCADE, related_name="reports")
    key = models.CharField(max_length=64, help_text="SHA-256 of the choice.")
    choice = models.JSONField(help_text="The runs, the baseline and k sent to the model.")
    content = models.JSONField(help_text="What the page shows (evaluation.scoreboard.report_of).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["gold_set", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["gold_set", "key"], name="one_report_per_choice")
        ]

    def __str__(self) -> str:
        return f"report of {self.gold_set} ({self.key[:8]})"


class IndexEvaluation(models.Model):
    """A retriever's figures on one gold set for one of its index builds (a job), so the
    retriever page shows, per gold set, which change moved which metric."""

    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="+")
    gold_set = models.ForeignKey(GoldSet, on_delete=models.CASCADE, related_name="+")
    built_at = models.DateTimeField()
    change = models.CharField(max_length=40, help_text="What changed since the previous build.")
    scheme = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=300, blank=True)
    k = models.PositiveIntegerField()
    metrics = models.JSONField(default=dict)
    questions = models.PositiveIntegerField(default=0)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # An uploaded run of the team's system, tagged with what changed (instead of a build).
    run = models.ForeignKey(
        EvaluationRun, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["retriever", "built_at", "pk"]

    def __str__(self) -> str:
        return f"{self.retriever} built {self.built_at:%Y-%m-%d %H:%M} on {self.gold_set}"


class BuildEvaluationStart(models.Model):
    """One index build's evaluation on one gold set, started by
    `evaluation.tasks.evaluate_index_builds` (Celery beat) or from the retriever page: unique
    per (build, gold set), so a second start of the same is refused by the database and does
    nothing, while a newly finalised gold set gets the current build scored on it too."""

    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="+")
    built_at = models.DateTimeField()
    # Empty on starts made before figures were kept per gold set.
    gold_set = models.ForeignKey(
        GoldSet, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["retriever", "built_at", "gold_set"],
                name="one_evaluation_start_per_build_and_gold_set",
            )
        ]

    def __str__(self) -> str:
        return f"{self.retriever} built {self.built_at:%Y-%m-%d %H:%M}"
