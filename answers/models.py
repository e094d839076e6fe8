"""Answer runs and reference answers: what the answer review grades, and against what.

Kept apart from `labelling.models` (which re-exports them, so Django and the migrations see
them there) because that module already holds a room of its own. Foreign keys to labelling's
own models are named by string, so this module needs nothing from `labelling.models`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from corpus.models import DocumentVersion, Project


class AnswerRun(models.Model):
    """A team's generated answers for a question set, as imported (one file, all or nothing)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="answer_runs")
    question_set = models.ForeignKey(
        "labelling.QuestionSet", on_delete=models.CASCADE, related_name="answer_runs"
    )
    name = models.SlugField(max_length=100)
    # What the file said of the system that answered (the first line's values, when all agree).
    system = models.CharField(max_length=200, blank=True)
    system_version = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labelling_answerrun"
        ordering = ["question_set_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["question_set", "name"], name="unique_answer_run_name")
        ]

    def __str__(self) -> str:
        return self.name


class Answer(models.Model):
    run = models.ForeignKey(AnswerRun, on_delete=models.CASCADE, related_name="answers")
    question = models.ForeignKey(
        "labelling.Question", on_delete=models.CASCADE, related_name="answers"
    )
    text = models.TextField(blank=True)
    refused = models.BooleanField()
    # False when Goldset split the answer into sentences itself (the file gave none).
    sentences_given = models.BooleanField(default=True)
    # `goldeval.formats.answers.answer_key`: human grades apply to exactly what was graded.
    key = models.CharField(max_length=64)
    line = models.PositiveIntegerField(help_text="The line of the file it was read from.")

    class Meta:
        db_table = "labelling_answer"
        ordering = ["run_id", "question_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "question"], name="unique_answer_per_question")
        ]

    def __str__(self) -> str:
        return f"{self.run} / {self.question_id}"


class AnswerSentence(models.Model):
    """A sentence of an answer, ``[start, end)`` in its text; claims default to sentences."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="sentences")
    position = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        db_table = "labelling_answersentence"
        ordering = ["answer_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["answer", "position"], name="unique_answer_sentence_position"
            )
        ]

    def __str__(self) -> str:
        return f"{self.answer_id} sentence {self.position}"


class AnswerPassageRole(models.TextChoices):
    CITATION = "citation", "citation"
    CONTEXT = "context", "context sent to the model"


class AnswerPassage(models.Model):
    """A passage an answer cites (on a sentence) or was given in its context (by rank), in
    the newest version of its document when imported; no offsets: the whole document."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="passages")
    role = models.CharField(max_length=10, choices=AnswerPassageRole.choices)
    sentence = models.ForeignKey(
        AnswerSentence,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="citations",
    )
    position = models.PositiveIntegerField(help_text="Rank in the context, or order of citation.")
    version = models.ForeignKey(DocumentVersion, on_delete=models.PROTECT, related_name="+")
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        db_table = "labelling_answerpassage"
        ordering = ["answer_id", "role", "sentence_id", "position"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(role="context", sentence__isnull=True)
                | models.Q(role="citation", sentence__isnull=False),
                name="answer_passage_role_matches_sentence",
            )
        ]

    def __str__(self) -> str:
        return f"{self.answer_id} {self.role} {self.position}"


class ReferenceAnswer(models.Model):
    """A lead's reference answer to a question as a list of facts. Every edit is a new
    version, as with the guideline; grades of facts keep the version they graded."""

    question = models.ForeignKey(
        "labelling.Question", on_delete=models.CASCADE, related_name="reference_answers"
    )
    version = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labelling_referenceanswer"
        ordering = ["question_id", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["question", "version"], name="unique_reference_answer_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.question_id} reference v{self.version}"


class ReferenceFact(models.Model):
    """A fact ("nugget") a correct answer contains: vital, or okay to have."""

    reference = models.ForeignKey(ReferenceAnswer, on_delete=models.CASCADE, related_name="facts")
    position = models.PositiveIntegerField()
    text = models.TextField()
    vital = models.BooleanField(default=True)
    # Gold spans it rests on, optional: [{"doc_id", "version", "start", "end"}].
    spans = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "labelling_referencefact"
        ordering = ["reference_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["reference", "position"], name="unique_reference_fact_position"
            )
        ]

    def __str__(self) -> str:
        return self.text[:80]


# The answer review (issue 15): a labeller's grades of one answer ------------------------------


class AnswerAssignment(models.Model):
    """An answer given to a labeller to review (first or second slot, as passages are)."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="assignments")
    labeller = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="answer_assignments"
    )
    slot = models.PositiveSmallIntegerField()
    # The reference facts graded: the version current at the first fact grade, kept after.
    reference = models.ForeignKey(
        ReferenceAnswer, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # An answerable question's answer refused (the labeller's one key).
    wrongly_refused = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "labelling_answerassignment"
        ordering = ["answer_id", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "slot"], name="unique_answer_slot"),
            models.UniqueConstraint(fields=["answer", "labeller"], name="unique_answer_labeller"),
        ]

    def __str__(self) -> str:
        return f"{self.answer} slot {self.slot}"


class ClaimSupport(models.TextChoices):
    FULL = "full", "supported"
    PARTIAL = "partial", "partly supported"
    NONE = "none", "not supported"


class ClaimJudgement(models.Model):
    """One claim of the answer, ``[start, end)`` in its text (a sentence unless the labeller
    split it), and whether the context sent supports it ("" until graded)."""

    assignment = models.ForeignKey(
        AnswerAssignment, on_delete=models.CASCADE, related_name="claims"
    )
    position = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    support = models.CharField(max_length=10, choices=ClaimSupport.choices, blank=True)
    # Groups of the claim's citations (0-based positions in its citations, passage order) that
    # together support it: ALCE's precision asks whether the others support it without one.
    supporting_sets = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "labelling_claimjudgement"
        ordering = ["assignment_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "position"], name="unique_claim_position")
        ]

    def __str__(self) -> str:
        return f"{self.assignment_id} claim {self.position}"


class ClaimEvidence(models.Model):
    """Where the context sent supports a claim: a span of one of the answer's context passages,
    with its quote, marked with the same selection widget as passage evidence."""

    claim = models.ForeignKey(ClaimJudgement, on_delete=models.CASCADE, related_name="evidence")
    version = models.ForeignKey(DocumentVersion, on_delete=models.PROTECT, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    quote = models.TextField()

    class Meta:
        db_table = "labelling_claimevidence"
        ordering = ["claim_id", "start"]

    def __str__(self) -> str:
        return f"{self.claim} evidence [{self.start}, {self.end})"


class CitationJudgement(models.Model):
    """A citation of the claim's sentence graded against the claim: 2 supports it, 1 partly,
    0 does not (ALCE's human grades); None until graded."""

    claim = models.ForeignKey(ClaimJudgement, on_delete=models.CASCADE, related_name="citations")
    passage = models.ForeignKey(AnswerPassage, on_delete=models.CASCADE, related_name="+")
    grade = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        db_table = "labelling_citationjudgement"
        ordering = ["claim_id", "passage_id"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "passage"], name="unique_citation_grade")
        ]

    def __str__(self) -> str:
        return f"{self.claim} citation {self.passage_id}"


class FactPresence(models.TextChoices):
    YES = "yes", "present"
    PARTLY = "partly", "partly"
    NO = "no", "missing"


class FactJudgement(models.Model):
    assignment = models.ForeignKey(AnswerAssignment, on_delete=models.CASCADE, related_name="facts")
    fact = models.ForeignKey(ReferenceFact, on_delete=models.PROTECT, related_name="+")
    present = models.CharField(max_length=10, choices=FactPresence.choices)

    class Meta:
        db_table = "labelling_factjudgement"
        ordering = ["assignment_id", "fact_id"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "fact"], name="unique_fact_grade")
        ]

    def __str__(self) -> str:
        return f"{self.assignment_id} fact {self.fact_id}"


class AnswerResolution(models.Model):
    """A lead's decision on an answer whose two reviews disagree: the review that stands. Both
    reviews stay as they were (every vote is kept)."""

    answer = models.OneToOneField(Answer, on_delete=models.CASCADE, related_name="resolution")
    chosen = models.ForeignKey(AnswerAssignment, on_delete=models.PROTECT, related_name="+")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "labelling_answerresolution"

    def __str__(self) -> str:
        return f"{self.answer} resolved"


class AnswerItemDecision(models.Model):
    """A lead's decision on one item of an answer's two reviews that differ (issue 36 item 6):
    a claim's support, a citation's grade, a group of citations, a fact's presence or the
    refusal call. `item` is the item's key (`answers.services.items`), the same in both
    reviews; `value` is in the reviews' own terms ("full", 2, "yes", true, [[0, 1]]). Items the
    reviewers agree on need none; both reviews stay as they were."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="item_decisions")
    item = models.CharField(max_length=100)
    value = models.JSONField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "answers_answeritemdecision"
        ordering = ["answer_id", "item"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "item"], name="unique_answer_item_decision")
        ]

    def __str__(self) -> str:
        return f"{self.answer} {self.item}"
