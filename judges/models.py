"""The team's LLM as a judge: its configuration, its prompt versions and its judgements.

An AI judgement is its own row, never a `labelling.Judgement`: it is a vote a lead may read
beside the humans', never gold, and no labeller sees it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from corpus import visibility
from corpus.models import AccessGroup, Project
from judges.prompt import guideline_scale, render_prompt
from labelling.models import Candidate, Guideline


class JudgeTemplate(models.TextChoices):
    OPENAI = "openai", "OpenAI-compatible chat completions"
    GENERIC = "generic", "Generic JSON (prompt in, grade out)"


class Judge(models.Model):
    """An LLM endpoint that grades candidates. Passages of documents restricted to access
    groups it is not given are never sent to it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judges")
    name = models.SlugField(max_length=100)
    template = models.CharField(
        max_length=16, choices=JudgeTemplate.choices, default=JudgeTemplate.OPENAI
    )
    url = models.CharField(max_length=2000)
    model = models.CharField(max_length=200, blank=True)
    api_key = models.CharField(
        max_length=200,
        blank=True,
        help_text="env:NAME: the environment variable holding the key where judging runs.",
    )
    temperature = models.FloatField(default=0.0)
    seed = models.IntegerField(null=True, blank=True, default=0)
    timeout = models.FloatField(default=30.0)
    retries = models.PositiveSmallIntegerField(default=2)
    backoff = models.FloatField(default=1.0)
    concurrency = models.PositiveSmallIntegerField(default=4)
    access_groups = models.ManyToManyField(AccessGroup, blank=True, related_name="judges")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_judge_name")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def prompt(self) -> JudgePrompt:
        return self.prompts.order_by("-version").first()


class JudgePrompt(models.Model):
    """One version of a judge's prompt: its text and the project's guideline version its
    ``{{scale}}`` carries. An edit of either is a new version, so calibration is per version."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="prompts")
    version = models.PositiveIntegerField()
    text = models.TextField()
    guideline = models.ForeignKey(
        Guideline,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The guideline version sent with the scale; none: the fixed scale alone.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["judge", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "version"], name="unique_judge_prompt")
        ]

    def __str__(self) -> str:
        return f"{self.judge} prompt v{self.version}"

    def render(self, *, question: str, passage: str) -> str:
        """The prompt sent for one item (`judges.prompt.render_prompt`), its scale with this
        version's guideline."""
        scale = guideline_scale(self.guideline.text if self.guideline_id else "")
        return render_prompt(self.text, question=question, passage=passage, scale=scale)


class JudgingPass(models.TextChoices):
    FIRST = "first", "First pass"
    AGAIN = "again", "Judged again (self-consistency)"
    REVERSED = "reversed", "Judged in reverse order (order sensitivity)"


class AIJudgementQuerySet(models.QuerySet):
    def not_hidden_from(self, user) -> AIJudgementQuerySet:
        """Judgements of candidates whose document no access group hides from ``user``
        (`corpus.visibility.not_hidden_q`)."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(visibility.not_hidden_q(user, prefix="candidate__version__document__"))

    def graded(self) -> AIJudgementQuerySet:
        return self.filter(grade__isnull=False)


class AIJudgement(models.Model):
    """A judge's grade of one candidate under one prompt version, in one pass: the answer
    as given (bounded), the grade and quote read from it, or the error that stopped it."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="judgements")
    prompt = models.ForeignKey(JudgePrompt, on_delete=models.CASCADE, related_name="judgements")
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="ai_judgements")
    judging_pass = models.CharField(
        max_length=16, choices=JudgingPass.choices, default=JudgingPass.FIRST
    )
    model = models.CharField(max_length=200, blank=True)
    temperature = models.FloatField(default=0.0)
    seed = models.IntegerField(null=True, blank=True)
    grade = models.PositiveSmallIntegerField(null=True, blank=True)
    quote = models.TextField(blank=True)
    span_start = models.PositiveIntegerField(null=True, blank=True)
    span_end = models.PositiveIntegerField(null=True, blank=True)
    placed = models.CharField(
        max_length=16, blank=True, help_text="How the quote became a span: exact, fuzzy, or not."
    )
    raw = models.TextField(blank=True, help_text="The answer, bounded; for admins only.")
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    judged_at = models.DateTimeField(auto_now=True)

    objects = AIJudgementQuerySet.as_manager()

    class Meta:
        ordering = ["candidate", "judging_pass"]
        constraints = [
            models.UniqueConstraint(
                fields=["prompt", "candidate", "judging_pass"], name="one_ai_judgement_per_pass"
            ),
            models.CheckConstraint(
                condition=Q(grade__isnull=True) | Q(grade__lte=2), name="ai_grade_0_to_2"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge} on {self.candidate}: {self.grade}"


class CanaryKind(models.TextChoices):
    STUFFING = "stuffing", "Keyword stuffing (must be 0)"
    INSTRUCTION = "instruction", "An instruction to the grader (must be 0)"
    PARAPHRASE = "paraphrase", "A relevant paraphrase (must not be 0)"
    RESTATED = "restated", "The question restated (must be 0)"


class JudgeCanary(models.Model):
    """A passage planted to catch a judge that can be gamed (`judges.canaries`). Never a
    candidate: no labeller, gold set or metric sees it. A paraphrase canary is a real passage
    of the gold (``candidate``); the others are written text."""

    question_set = models.ForeignKey(
        "labelling.QuestionSet", on_delete=models.CASCADE, related_name="judge_canaries"
    )
    question = models.ForeignKey(
        "labelling.Question", on_delete=models.CASCADE, related_name="judge_canaries"
    )
    kind = models.CharField(max_length=16, choices=CanaryKind.choices)
    text = models.TextField(blank=True)
    candidate = models.ForeignKey(
        Candidate, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question_set", "kind", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["question", "kind"],
                condition=Q(candidate__isnull=True),
                name="one_written_canary_per_kind",
            ),
            models.UniqueConstraint(
                fields=["question", "kind", "candidate"], name="one_canary_per_passage"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} canary of {self.question}"

    @property
    def passage(self) -> str:
        return self.candidate.text if self.candidate_id else self.text


class JudgeCanaryResult(models.Model):
    """A judge's grade of one canary under one prompt version."""

    canary = models.ForeignKey(JudgeCanary, on_delete=models.CASCADE, related_name="results")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="canary_results")
    prompt = models.ForeignKey(JudgePrompt, on_delete=models.CASCADE, related_name="+")
    grade = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    raw = models.TextField(blank=True)
    judged_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["canary", "prompt"], name="one_canary_result"),
        ]

    def __str__(self) -> str:
        return f"{self.judge} on {self.canary}: {self.grade}"


class GoldVoteSwitch(models.Model):
    """A lead's switch for one question set: whether its gold rule counts ``judge``'s vote
    (its newest valid AI judgement of an item, as one vote beside the labellers'). Off unless a
    lead turned it on; finalising records in the gold set's manifest how it stood."""

    question_set = models.OneToOneField(
        "labelling.QuestionSet", on_delete=models.CASCADE, related_name="gold_vote_switch"
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="gold_vote_switches")
    on = models.BooleanField(default=False)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        state = "counts" if self.on else "does not count"
        return f"the gold rule of {self.question_set} {state} {self.judge}'s vote"
