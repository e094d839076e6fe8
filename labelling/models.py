"""Questions and the judgements made about them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Coalesce

from corpus import visibility
from corpus.models import Document, DocumentVersion, Job, Project, Retriever
from goldeval.pooling import StoppingRule, Strategy
from goldset.sql import identifier
from labelling.resolution import PENDING_KINDS

# Answer runs and reference answers live in their own module; named here, Django finds them.
# What came in from files lives in its own module; re-exported so labelling.models stays the
# one place to import models from.


class QuestionSetQuerySet(models.QuerySet):
    def with_counts(self) -> QuestionSetQuerySet:
        """Each set with `question_count`, `duplicate_count` and `pool_count`."""
        return self.annotate(
            question_count=models.Count("questions", distinct=True),
            duplicate_count=models.Count(
                "questions", filter=Q(questions__duplicate_of__isnull=False), distinct=True
            ),
            pool_count=models.Count("pools", distinct=True),
        )

    def shown_to(self, access) -> QuestionSetQuerySet:
        """The sets a project member with ``access`` may open: a canary set (the questions of
        planted canary documents) is for the project's admins and permission replays only;
        labellers and leads never learn it exists."""
        return self if access.is_admin else self.filter(is_canary=False)

    def content(self) -> QuestionSetQuerySet:
        """The sets that are labelled, pooled and evaluated: not canary sets."""
        return self.filter(is_canary=False)


class QuestionSet(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="question_sets")
    name = models.SlugField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    is_canary = models.BooleanField(
        default=False,
        help_text="The questions of planted canary documents: asked by permission replays, "
        "seen by the project's admins only, never pooled or labelled.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = QuestionSetQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_question_set_name")
        ]

    def __str__(self) -> str:
        return self.name


def included_q(prefix: str = "") -> Q:
    """Questions still part of their set (not excluded by a lead), from a model that reaches a
    question: ``prefix`` is the lookup path to it (``"question__"`` from an assignment). The
    one home of the rule, with `included_sql` beside it; `Question.objects.included()` for
    questions themselves."""
    return Q(**{f"{prefix}excluded_at__isnull": True})


def work_q(prefix: str = "") -> Q:
    """Assignments that are work for their pool, not a calibration question (an adjudicated
    question given to a labeller to measure them against the gold: `labelling.services.
    calibration`), from a model that reaches an assignment: ``prefix`` is the lookup path to it
    (``"assignment__"`` from a judgement). Calibration answers never enter the gold, agreement,
    judge calibration, exports or a pool's progress: every such reader filters with this (or
    `AssignmentQuerySet.work`, or `work_sql` in a hand-written query)."""
    return Q(**{f"{prefix}purpose": AssignmentPurpose.WORK})


def work_sql(alias: str) -> str:
    """`work_q` as an SQL condition on the assignment table's ``alias``."""
    purpose = Assignment._meta.get_field("purpose")
    # The value is this module's constant (a plain word), never anything from a request.
    return f"{alias}.{identifier(purpose.column)} = '{AssignmentPurpose.WORK.value}'"


def included_sql(alias: str) -> str:
    """`included_q` as an SQL condition on the question table's ``alias``."""
    return f"{alias}.{identifier(Question._meta.get_field('excluded_at').column)} IS NULL"


class QuestionQuerySet(models.QuerySet):
    def duplicates(self) -> QuestionQuerySet:
        """Questions flagged as repeating an earlier question of their set."""
        return self.filter(duplicate_of__isnull=False)

    def included(self) -> QuestionQuerySet:
        """Questions still part of their set: not excluded by a lead (`included_q`)."""
        return self.filter(included_q())

    def excluded(self) -> QuestionQuerySet:
        return self.filter(excluded_at__isnull=False)


class Question(models.Model):
    """A real user question; `text` is stored byte-for-byte as given (typos and all)."""

    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="questions"
    )
    external_id = models.CharField(max_length=255)
    text = models.TextField()
    source = models.CharField(max_length=200, blank=True)
    tags = models.JSONField(default=list, blank=True)
    duplicate_of = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="duplicates",
        help_text="An earlier question of the set with the same text; flagged, never dropped.",
    )
    # A lead may take a question out of its set (a duplicate, a question nobody can answer
    # from this corpus): it leaves everyone's work and the gold set, and the record stays.
    excluded_at = models.DateTimeField(null=True, blank=True)
    excluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    exclusion_reason = models.CharField(max_length=500, blank=True)
    # Where a question came from beyond its file, as the gold set's manifest records it: for a
    # question promoted from a production sample, the trace, sample, rule and stratum. Written
    # by the app that made the question, so labelling and evaluation need not know that app.
    origin = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = QuestionQuerySet.as_manager()

    class Meta:
        ordering = ["question_set", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["question_set", "external_id"], name="unique_question_id_in_set"
            )
        ]

    def __str__(self) -> str:
        return self.external_id


class PoolState(models.TextChoices):
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class PoolQuerySet(models.QuerySet):
    def in_project(self, project) -> PoolQuerySet:
        return self.filter(question_set__project=project)

    def with_question_count(self) -> PoolQuerySet:
        return self.annotate(question_count=models.Count("question_set__questions", distinct=True))

    def with_slot_counts(self) -> PoolQuerySet:
        """Each pool with its `questions`, assignment `slots` and `unclaimed` slots (counted
        apart, each by its own index, not over a join of questions and slots)."""
        slots = (
            Assignment.objects.filter(work_q(), pool=models.OuterRef("pk"))
            .order_by()
            .values("pool")
        )
        questions = (
            Question.objects.filter(question_set=models.OuterRef("question_set"))
            .order_by()
            .values("question_set")
        )

        def count(rows) -> models.Func:
            return Coalesce(models.Subquery(rows.annotate(n=models.Count("pk")).values("n")), 0)

        return self.annotate(
            questions=count(questions),
            slots=count(slots),
            unclaimed=count(slots.filter(labeller__isnull=True)),
        )


class Pool(models.Model):
    """Candidates for every question of a set: the depth-k union of several retrievers."""

    question_set = models.ForeignKey(QuestionSet, on_delete=models.CASCADE, related_name="pools")
    name = models.SlugField(max_length=100)
    depth = models.PositiveIntegerField(default=10)
    # The order labellers judge a question's candidates in and when they may stop
    # (`goldeval.pooling`; `labelling.services.judging_order` applies it).
    strategy = models.CharField(
        max_length=16, choices=[(s.value, s.label) for s in Strategy], default=Strategy.DEPTH.value
    )
    stop_misses = models.PositiveSmallIntegerField(null=True, blank=True)
    stop_budget = models.PositiveSmallIntegerField(null=True, blank=True)
    retrievers = models.ManyToManyField(Retriever, related_name="pools")
    state = models.CharField(max_length=16, choices=PoolState.choices, default=PoolState.BUILDING)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PoolQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["question_set", "name"], name="unique_pool_name")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def stopping_rule(self) -> StoppingRule:
        return StoppingRule(misses=self.stop_misses, budget=self.stop_budget)

    @property
    def adaptive(self) -> bool:
        """Whether labellers judge in an order other than the shuffled one, or may stop early."""
        return self.strategy != Strategy.DEPTH or self.stopping_rule.active


class CandidateQuerySet(models.QuerySet):
    def not_hidden_from(self, user) -> CandidateQuerySet:
        """Candidates whose document no access group hides from the user
        (`corpus.visibility.not_hidden_q`); for the user, the others do not exist.

        Project membership is not checked here: callers have already scoped the candidates to
        an assignment of a project the user is a member of (`corpus.access.project_access`).
        """
        if not user.is_authenticated:
            return self.none()
        return self.filter(visibility.not_hidden_q(user, prefix="version__document__"))

    def of_assignment(self, assignment) -> CandidateQuerySet:
        """The candidates the assignment's page shows (before access is applied): its
        question's in its pool, or for a third labeller's slot only the escalated ones
        (`EscalatedItem`; `labelling.grading_passages` has the same rule in SQL)."""
        candidates = self.filter(pool_id=assignment.pool_id, question_id=assignment.question_id)
        if assignment.slot > 2:
            escalated = EscalatedItem.objects.filter(assignment_id=assignment.pk)
            if escalated.exists():
                candidates = candidates.filter(pk__in=escalated.values("candidate_id"))
        return candidates

    def with_provenance(self) -> CandidateQuerySet:
        """With `provenance` read ahead (retriever by name, then rank): for leads only."""
        return self.prefetch_related(
            models.Prefetch(
                "provenance",
                queryset=Provenance.objects.select_related("retriever").order_by(
                    "retriever__name", "rank"
                ),
            )
        )


class Candidate(models.Model):
    """A passage `(version, start, end)` proposed for a question. Labellers see it in
    `shuffle_rank` order and never its provenance."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="candidates")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="candidates")
    version = models.ForeignKey(
        DocumentVersion, on_delete=models.PROTECT, related_name="candidates"
    )
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    shuffle_rank = models.PositiveIntegerField(default=0)

    objects = CandidateQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "question", "shuffle_rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "question", "version", "start", "end"], name="unique_candidate"
            ),
            models.CheckConstraint(
                condition=Q(end__gt=models.F("start")), name="candidate_not_empty"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.question} {self.version} [{self.start}:{self.end})"

    @property
    def text(self) -> str:
        return self.version.text[self.start : self.end]


class Provenance(models.Model):
    """Which retriever found a candidate, at which rank and score. Never shown to labellers."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="provenance")
    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True, blank=True)
    start = models.PositiveIntegerField(help_text="The retriever's own passage, before merging.")
    end = models.PositiveIntegerField()

    class Meta:
        ordering = ["retriever", "rank"]

    def __str__(self) -> str:
        return f"{self.retriever} #{self.rank}"


class PoolHit(models.Model):
    """A retriever's raw top-k for a question while a pool is built; merged into candidates
    when every retriever task of the pool has finished."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="hits")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="+")
    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True, blank=True)
    version = models.ForeignKey(DocumentVersion, on_delete=models.CASCADE, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        # A run result without offsets stands for all of its document's chunks, which share
        # the result's rank; so a rank is unique only together with its passage.
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "question", "retriever", "rank", "version", "start", "end"],
                name="one_hit_per_rank_and_passage",
            )
        ]

    def __str__(self) -> str:
        return f"{self.retriever} {self.question} #{self.rank}"


class Guideline(models.Model):
    """The lead's relevance guideline (Markdown). Every edit is a new version."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="guidelines")
    version = models.PositiveIntegerField()
    text = models.TextField()
    # Users with work are deactivated, never deleted: who wrote, graded or decided what stays.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["project", "version"], name="unique_guideline_version")
        ]

    def __str__(self) -> str:
        return f"{self.project} guideline v{self.version}"


class AssignmentPurpose(models.TextChoices):
    """Why a labeller holds an assignment: never rendered on any page a labeller sees."""

    WORK = "work", "Work"
    CALIBRATION = "calibration", "Calibration"


class AssignmentQuerySet(models.QuerySet):
    def work(self) -> AssignmentQuerySet:
        """Assignments that are the pool's work, not calibration questions (`work_q`)."""
        return self.filter(work_q())

    def calibration(self) -> AssignmentQuerySet:
        return self.filter(purpose=AssignmentPurpose.CALIBRATION)

    def in_project(self, project) -> AssignmentQuerySet:
        return self.filter(pool__question_set__project=project)

    def held_by(self, user) -> AssignmentQuerySet:
        """The user's assignments on questions still in their set: an excluded question is
        nobody's work any more (its judgements stay, for the record)."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(included_q("question__"), labeller=user)

    def open(self) -> AssignmentQuerySet:
        return self.filter(completed_at__isnull=True)

    def open_for(self, user) -> AssignmentQuerySet:
        return self.held_by(user).open()

    def unclaimed(self) -> AssignmentQuerySet:
        return self.filter(labeller__isnull=True)

    def claimable_by(self, user) -> AssignmentQuerySet:
        """Unclaimed slots of ready pools for questions the user does not already label (and
        that are still in their set).

        Never a slot with work in it (one left without its labeller before labellers' accounts
        were protected from deletion): its grades, note and verdict are someone else's.
        """
        already = Assignment.objects.filter(
            pool=models.OuterRef("pool"), question=models.OuterRef("question"), labeller=user
        )
        return (
            self.unclaimed()
            .filter(included_q("question__"), work_q(), pool__state=PoolState.READY)
            .exclude(models.Exists(already))
            .exclude(models.Exists(Judgement.objects.filter(assignment=models.OuterRef("pk"))))
            .exclude(models.Exists(Verdict.objects.filter(assignment=models.OuterRef("pk"))))
            # A third labeller's slot is handed on, never claimed from the pool: it shows only
            # disputed passages, which whoever claimed it might not be allowed to see.
            .exclude(models.Exists(EscalatedItem.objects.filter(assignment=models.OuterRef("pk"))))
        )

    def started(self) -> AssignmentQuerySet:
        """Assignments with work in them (a judgement or a verdict): they stay their labeller's,
        never handed to someone else (`labelling.services.assignments`, the admin)."""
        return self.filter(
            models.Exists(Judgement.objects.filter(assignment=models.OuterRef("pk")))
            | models.Exists(Verdict.objects.filter(assignment=models.OuterRef("pk")))
        )

    def in_queue_order(self) -> AssignmentQuerySet:
        # By question, never by slot: a labeller's order must not hint at double-labelling.
        return self.order_by("pool_id", "question_id")

    def for_question(self, *, pool_id, question_id) -> AssignmentQuerySet:
        return self.filter(pool_id=pool_id, question_id=question_id)

    def other_slots_of(self, assignment) -> AssignmentQuerySet:
        """The other assignments of the same question of the same pool (double-labelling)."""
        return self.for_question(
            pool_id=assignment.pool_id, question_id=assignment.question_id
        ).exclude(pk=assignment.pk)

    def with_progress(self, viewer, project=None) -> AssignmentQuerySet:
        """Each assignment with `graded` (its judgements on passages ``viewer`` may see now)
        and `has_verdict`. A count must not reveal a restricted document, nor keep counting a
        passage whose access group was revoked.

        Counted per assignment by a subquery, so a page of them counts its own rows only. With
        ``project`` (the assignments' own), the candidates on its documents hidden from the
        viewer are left out by their ids (`visibility.hidden_document_ids`), without a test
        per judgement: the same rule, a cheaper plan whatever the planner knows."""
        judgements = Judgement.objects.filter(assignment=models.OuterRef("pk"))
        if project is not None:
            hidden = visibility.hidden_document_ids(project=project, user=viewer)
            unseen = Candidate.objects.filter(version__document_id__in=hidden).values("pk")
            judgements = judgements.exclude(candidate_id__in=unseen)
        else:
            judgements = judgements.filter(
                visibility.not_hidden_q(viewer, prefix="candidate__version__document__")
            )
        graded = (
            judgements.order_by().values("assignment").annotate(n=models.Count("pk")).values("n")
        )
        return self.annotate(
            graded=Coalesce(models.Subquery(graded), 0)
            if viewer.is_authenticated
            else models.Value(0)  # for whom every restricted document is hidden: nothing seen
        ).annotate(
            has_verdict=models.Exists(Verdict.objects.filter(assignment=models.OuterRef("pk")))
        )

    def queue_counts(self) -> dict[str, int]:
        """How many of these assignments are `done` and how many `remaining`."""
        return self.aggregate(
            done=models.Count("pk", filter=Q(completed_at__isnull=False)),
            remaining=models.Count("pk", filter=Q(completed_at__isnull=True)),
        )


class Assignment(models.Model):
    """A question of a pool given to a labeller. Slot 1 is the first labeller, slot 2 the
    second of a double-labelled question; an assignment without a labeller waits to be claimed.

    A calibration assignment (`purpose`, slot 0) gives a labeller an adjudicated question to
    measure them against the gold; it looks like any other to them and counts for nothing else.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="assignments")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="assignments")
    slot = models.PositiveSmallIntegerField(default=1)
    # PROTECT: deleting a labeller used to free their started assignment, and the next
    # labeller got their grades as their own. People with work are deactivated instead.
    labeller = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="assignments",
    )
    assigned_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Set on a slot its labeller claimed from the pool while the project had leases on; renewed
    # by their activity. None: a lead's plan or hand-over, or leases off: it never lapses.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    purpose = models.CharField(
        max_length=16, choices=AssignmentPurpose.choices, default=AssignmentPurpose.WORK
    )

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "question", "slot"]
        constraints = [
            # Calibration assignments are slot 0, any number of them (one per labeller).
            models.UniqueConstraint(
                fields=["pool", "question", "slot"],
                condition=Q(purpose="work"),
                name="one_assignment_per_slot",
            ),
            models.UniqueConstraint(
                fields=["pool", "question", "labeller"],
                condition=Q(labeller__isnull=False),
                name="a_labeller_labels_a_question_once",
            ),
        ]
        indexes = [
            models.Index(
                fields=["lease_expires_at"],
                condition=Q(lease_expires_at__isnull=False),
                name="assignment_lease_expiry",
            )
        ]

    def __str__(self) -> str:
        return f"{self.question} slot {self.slot} → {self.labeller or 'unassigned'}"


class CalibrationShare(models.Model):
    """The share of "next question"s a project's labellers get as calibration questions
    (`labelling.services.calibration`); a lead sets it, 0 (none) to 50 percent."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="calibration_share"
    )
    percent = models.PositiveSmallIntegerField(default=0)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(percent__lte=100), name="calibration_share_at_most_100"
            )
        ]

    def __str__(self) -> str:
        return f"{self.project}: {self.percent}% calibration"


class Judgement(models.Model):
    """One labeller's grade of one candidate: 0 not relevant, 1 partially, 2 fully answers."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="judgements")
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="judgements")
    grade = models.PositiveSmallIntegerField()
    note = models.TextField(blank=True)
    guideline = models.ForeignKey(
        Guideline, on_delete=models.PROTECT, null=True, blank=True, related_name="judgements"
    )
    seconds_spent = models.FloatField(default=0)
    revision = models.PositiveIntegerField(
        default=1, help_text="Bumped on every change; stale edits get 409."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "candidate"], name="one_judgement_per_candidate"
            ),
            models.CheckConstraint(condition=Q(grade__lte=2), name="grade_0_to_2"),
        ]

    def __str__(self) -> str:
        return f"{self.candidate} = {self.grade}"


class Span(models.Model):
    """Evidence: a stretch of a document version's text, with its quote for re-anchoring."""

    judgement = models.ForeignKey(
        Judgement, on_delete=models.CASCADE, null=True, blank=True, related_name="spans"
    )
    resolution = models.ForeignKey(
        "Resolution", on_delete=models.CASCADE, null=True, blank=True, related_name="spans"
    )
    version = models.ForeignKey(DocumentVersion, on_delete=models.PROTECT, related_name="spans")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    quote = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version", "start"]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="span_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.version} [{self.start}:{self.end})"


class VerdictOutcome(models.TextChoices):
    ANSWERABLE = "answerable", "Answerable"
    UNANSWERABLE = "unanswerable", "No passage answers this question"
    CANT_TELL = "cant_tell", "Can't tell"


class Verdict(models.Model):
    """One labeller's question-level outcome."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="verdict")
    outcome = models.CharField(max_length=16, choices=VerdictOutcome.choices)
    reason = models.TextField(blank=True)
    guideline = models.ForeignKey(
        Guideline, on_delete=models.PROTECT, null=True, blank=True, related_name="verdicts"
    )
    revision = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.assignment}: {self.outcome}"


class ChangeSubject(models.TextChoices):
    JUDGEMENT = "judgement", "Judgement"
    VERDICT = "verdict", "Verdict"
    ASSIGNMENT = "assignment", "Assignment"
    RECHECK = "recheck", "Re-check of evidence on a changed document"


class Change(models.Model):
    """Append-only history of every change a labeller makes; never updated or deleted."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="changes")
    candidate = models.ForeignKey(
        Candidate, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    subject = models.CharField(
        max_length=16, choices=ChangeSubject.choices, default=ChangeSubject.JUDGEMENT
    )
    action = models.CharField(max_length=32)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    undoes = models.OneToOneField(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="undone_by",
        help_text="For an undo: the change it reverted (each change is undone at most once).",
    )
    made_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    made_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["assignment", "made_at", "pk"]
        indexes = [models.Index(fields=["assignment", "subject", "candidate"])]

    def __str__(self) -> str:
        return f"{self.action} on {self.assignment}"


class EscalatedItem(models.Model):
    """A passage the first two labellers of a question graded far enough apart (the project's
    `escalate_on`) to get a third, blind labeller before a lead decides it
    (`labelling.services.escalation`).

    ``assignment`` is the third labeller's slot, which shows only its escalated passages; None
    when no other labeller of the project could see the passage, so it went straight to a lead.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="+")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="+")
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="+")
    assignment = models.ForeignKey(
        Assignment,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="escalated_items",
    )
    # The first two grades as they were when the item was escalated, for the record.
    grades = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["candidate"], name="one_escalation_per_candidate")
        ]
        indexes = [models.Index(fields=["pool", "question"])]

    def __str__(self) -> str:
        return f"escalated {self.candidate} → {self.assignment or 'a lead'}"


class Resolution(models.Model):
    """A lead's adjudicated outcome for a disagreement; the labellers' votes are all kept.

    With a candidate it settles that candidate's grade (and spans, via `Span.resolution`);
    without one it settles the question's verdict.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="resolutions")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="resolutions")
    candidate = models.ForeignKey(
        Candidate, on_delete=models.CASCADE, null=True, blank=True, related_name="resolutions"
    )
    grade = models.PositiveSmallIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=VerdictOutcome.choices, blank=True)
    note = models.TextField(blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    resolved_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "question", "candidate"], name="one_resolution_per_item"
            ),
            models.UniqueConstraint(
                fields=["pool", "question"],
                condition=Q(candidate__isnull=True),
                name="one_verdict_resolution_per_question",
            ),
            models.CheckConstraint(condition=Q(grade__lte=2), name="resolved_grade_0_to_2"),
        ]

    def __str__(self) -> str:
        return f"resolution of {self.question} {self.candidate or 'verdict'}"


# The production loop's rows and the Re-check answers live in their own modules; named here so
# Django finds them.


# What came into labelling from files as it was given: imported document-level grades and the
# results of uploaded runs.


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


# Answers on the Re-check page (`labelling.services.recheck`): for each span on a document that
# changed after it was marked (a labeller's own, a lead's for a resolution's), confirmed, the
# facts changed, re-marked or gone.


class SpanRecheck(models.Model):
    """The answer for a span on a changed document (by its labeller, or a lead for a
    resolution's span), which the gold rule uses; a labeller's history is `Change` rows
    (subject recheck)."""

    span = models.OneToOneField("labelling.Span", on_delete=models.CASCADE, related_name="recheck")
    # "confirmed" (it moved, same words), "facts_changed" (confirmed where its words differ:
    # "40 percent" is now "50 percent"), "re-marked" or "gone".
    outcome = models.CharField(max_length=16)
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


# What the gold rule decided about each item, stored so the lead pages read it instead of
# deciding 60,000 items per request (`labelling.services.gold_state` keeps it and is its one
# writer).


class ItemState(models.Model):
    """The gold rule's decision on one item of a pooled, assigned question, at the default
    span F1 minimum: a candidate's (``candidate`` and its ``document`` set) or the question's
    verdict (both None). Viewer-independent: a page filters the rows by the documents its
    viewer may see, at read time."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="+")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="+")
    candidate = models.ForeignKey(
        Candidate, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    # "single", "agreed", "resolved" (decided), or a `labelling.resolution.PENDING_KINDS` key.
    kind = models.CharField(max_length=16)
    resolved = models.BooleanField(default=False)  # a lead's resolution exists for the item
    single_by_access = models.BooleanField(default=False)
    answerable = models.BooleanField(null=True)  # a decided verdict's outcome
    # The adjudication queue's order and its third-labeller section (`labelling.escalation`):
    # the highest grade minus the lowest among the votes, and whether a third labeller holds
    # the passage (an `EscalatedItem` with a slot).
    distance = models.PositiveSmallIntegerField(default=0)
    escalated = models.BooleanField(default=False)
    # What the Gold and Adjudication pages show of the item beyond its kind, as the votes gave
    # it when the row was computed (`gold_state.SHOWN`): a decided item's grade and spans, why a
    # pending one waits, who it waits for, its labellers' grades, and so on; empty keys left
    # out. Derived like the rest of the row, so a stale mark corrects it.
    shown = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["pool", "question"], name="itemstate_question"),
            # The rows the Adjudication page and the Gold page's counts read across a whole
            # set (`gold_state.QUEUE`): pending, resolved, single votes, escalated.
            models.Index(
                fields=["pool", "question"],
                name="itemstate_queue",
                condition=Q(kind__in=list(PENDING_KINDS))
                | Q(resolved=True)
                | Q(single_by_access=True)
                | Q(escalated=True),
            ),
            # The questions' verdicts alone (one a question, not one a candidate): the set's
            # stored version (`gold_state.version`) is read from them, by the index alone.
            models.Index(
                fields=["pool", "id"], name="itemstate_verdict", condition=Q(candidate=None)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.candidate_id or 'verdict'} of question {self.question_id}"


class ItemStateStale(models.Model):
    """A question whose stored `ItemState` rows may be out of date: written by every write
    that can change its votes (one small insert), removed when the rows are recomputed."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="+")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"question {self.question_id} of pool {self.pool_id} is stale"
