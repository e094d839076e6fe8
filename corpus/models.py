"""Projects, members, the versioned document corpus, chunking schemes and background jobs."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.db.models import Exists, OuterRef, Q
from django.db.models.signals import post_delete
from django.dispatch import receiver

from corpus import visibility
from corpus.services.artifacts import delete_artifacts


class Role(models.TextChoices):
    LABELLER = "labeller", "Labeller"
    LEAD = "lead", "Lead"
    ADMIN = "admin", "Admin"


# What each role may do; a role includes the rights of the roles before it.
ROLE_RANK = {Role.LABELLER: 1, Role.LEAD: 2, Role.ADMIN: 3}


class ProjectQuerySet(models.QuerySet):
    def for_member(self, user) -> ProjectQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user).distinct()


class EscalateOn(models.TextChoices):
    """When a double-labelled passage gets a third labeller before a lead decides it
    (`labelling.escalation`)."""

    TWO_APART = "two_apart", "when the two grades are two apart (0 against 2)"
    ANY_DIFFERENCE = "any_difference", "whenever the two grades differ"
    NEVER = "never", "never: disagreements go straight to a lead"


class Project(models.Model):
    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=200)
    duplicate_threshold = models.FloatField(
        default=0.9, help_text="Jaccard similarity above which documents are near-duplicates."
    )
    k_sent_to_model = models.PositiveIntegerField(
        default=5,
        help_text="How many passages the RAG system sends to the model; evaluation highlights it.",
    )
    escalate_on = models.CharField(
        max_length=16,
        choices=EscalateOn.choices,
        default=EscalateOn.TWO_APART,
        help_text="When a third blind labeller grades a passage two labellers disagree on.",
    )
    # A question a labeller claims from the pool is theirs for this long, renewed by their
    # activity; after it, if they graded nothing, it goes back to the pool
    # (`labelling.services.leases`). 0: claimed questions stay their labeller's.
    lease_minutes = models.PositiveIntegerField(
        default=60,
        help_text="Minutes a labeller's claim lasts without activity (0: no limit).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def members(self) -> models.QuerySet:
        """The users with a membership of this project, by username."""
        return get_user_model().objects.filter(memberships__project=self).order_by("username")


class MembershipQuerySet(models.QuerySet):
    def role_of(self, *, user, project) -> str | None:
        if not user.is_authenticated:
            return None
        return self.filter(user=user, project=project).values_list("role", flat=True).first()


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.LABELLER)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} as {self.role}"

    def allows(self, role: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]


class AccessGroup(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="access_groups")
    name = models.CharField(max_length=100)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="access_groups"
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_access_group_name")
        ]

    def __str__(self) -> str:
        return self.name


class ProjectInvitationQuerySet(models.QuerySet):
    def pending(self) -> ProjectInvitationQuerySet:
        """Not yet accepted, and younger than PASSWORD_RESET_TIMEOUT (an invitation link's)."""
        from datetime import timedelta

        from django.utils import timezone

        fresh = timezone.now() - timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT)
        return self.filter(accepted_at__isnull=True, created_at__gte=fresh)

    def for_user(self, user) -> ProjectInvitationQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(username__iexact=user.get_username())


class ProjectInvitation(models.Model):
    """A project admin's invitation of an account by its username, to join with a role once its
    owner accepts. Stored by name, whether or not an account has it: what the admin sees never
    tells them which usernames exist."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    username = models.CharField(max_length=150)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.LABELLER)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectInvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "username"], name="one_invitation_per_username"
            )
        ]

    def __str__(self) -> str:
        return f"{self.username} to {self.project} as {self.role}"


class AccessGroupChange(models.Model):
    """One account added to or removed from an access group: who did it, whom, when. Names are
    copied, so the record outlives the accounts and the group. Read-only once written."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="access_group_changes"
    )
    group = models.ForeignKey(
        AccessGroup, on_delete=models.SET_NULL, null=True, related_name="changes"
    )
    group_name = models.CharField(max_length=100)
    member = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    member_name = models.CharField(max_length=150)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty for a change made on the command line or by a script.",
    )
    changed_by_name = models.CharField(max_length=150, blank=True)
    added = models.BooleanField(help_text="Added to the group (else removed from it).")
    self_added = models.BooleanField(
        default=False, help_text="Someone added themselves to the group: worth a second look."
    )
    changed_at = models.DateTimeField()

    class Meta:
        ordering = ["-changed_at", "-pk"]

    def __str__(self) -> str:
        verb = "added" if self.added else "removed"
        return f"{self.changed_by_name or 'a script'} {verb} {self.member_name} ({self.group_name})"


class OneTimePassword(models.Model):
    """The password an admin issued an account (as its hash): while the account still has it,
    every page but the password change sends its owner there (`corpus.one_time_passwords`).
    Any change of password, by any path, ends it: the hashes no longer match."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="one_time_password"
    )
    password = models.CharField(max_length=128)
    issued_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"one-time password of {self.user}"


class DuplicateGroup(models.Model):
    """Near-duplicate documents; only the representative stays searchable."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="duplicate_groups")
    representative = models.ForeignKey(
        "Document", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"duplicate group {self.pk}"


class DocumentQuerySet(models.QuerySet):
    def visible_to(self, user) -> DocumentQuerySet:
        """Documents of the user's projects that no access group hides from them (the rule of
        `corpus.visibility`): nothing about the others may reach them, not even a count."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(visibility.visible_q(user))

    def hidden_from(self, user) -> DocumentQuerySet:
        """Restricted documents none of whose groups the user is a member of, in any project
        (`corpus.visibility.hidden_q`)."""
        return self.filter(visibility.hidden_q(user))

    def searchable_for(self, user) -> DocumentQuerySet:
        """`searchable()` as the user sees the corpus: quality accepted, and the copy of its
        near-duplicate group the user's searches return (`copies_for`)."""
        return (
            self.filter(latest_version__isnull=False)
            .filter(
                Q(latest_version__quality_flagged=False)
                | Q(latest_version__quality_accepted_at__isnull=False)
            )
            .copies_for(user)
        )

    def copies_for(self, user) -> DocumentQuerySet:
        """Documents outside any near-duplicate group, and each group's searchable copy as the
        user sees it: the representative, or, when it is hidden from them, the group's first
        member they may see (lowest pk). So the visible twin of a restricted document stays
        findable, and nothing tells them the hidden one exists (`corpus.services.retrieval`
        applies the same rule to searches)."""
        hidden = Document.objects.hidden_from(user)
        stand_in = (
            Document.objects.filter(duplicate_group=OuterRef("duplicate_group"))
            .exclude(pk__in=hidden.values("pk"))
            .order_by("pk")
            .values("pk")[:1]
        )
        return self.alias(
            representative_hidden=Exists(
                hidden.filter(pk=OuterRef("duplicate_group__representative"))
            ),
            stand_in=models.Subquery(stand_in),
        ).filter(
            Q(duplicate_group__isnull=True)
            | Q(duplicate_group__representative=models.F("pk"), representative_hidden=False)
            | Q(representative_hidden=True, pk=models.F("stand_in"))
        )

    def with_visible_twin(self, user) -> DocumentQuerySet:
        """Documents with another member of their near-duplicate group that the user may see:
        the only ones that are near-duplicates as far as the user can tell."""
        twins = (
            Document.objects.visible_to(user)
            .filter(duplicate_group=OuterRef("duplicate_group"))
            .exclude(pk=OuterRef("pk"))
        )
        return self.filter(duplicate_group__isnull=False).filter(Exists(twins))

    def held_back(self) -> DocumentQuerySet:
        """Documents whose newest version is flagged by the quality check and not accepted."""
        return self.filter(
            latest_version__quality_flagged=True, latest_version__quality_accepted_at__isnull=True
        )

    def in_duplicate_group(self) -> DocumentQuerySet:
        return self.filter(duplicate_group__isnull=False)

    def restricted(self) -> DocumentQuerySet:
        """Documents with an access group (one row per group: callers add `distinct()`)."""
        return self.filter(access_groups__isnull=False)

    def duplicates_of(self, document) -> DocumentQuerySet:
        """The other documents of ``document``'s duplicate group."""
        return self.filter(duplicate_group_id=document.duplicate_group_id).exclude(pk=document.pk)

    def matching(self, text: str) -> DocumentQuerySet:
        """Documents whose id or title contains ``text`` (any case)."""
        return self.filter(Q(doc_id__icontains=text) | Q(title__icontains=text))

    def with_latest_version(self) -> DocumentQuerySet:
        """With the newest version read alongside, but not its text or MinHash: lists show
        only what describes it."""
        return self.select_related("latest_version").defer(
            "latest_version__text", "latest_version__minhash"
        )

    def changed_since(self, moment) -> DocumentQuerySet:
        """Documents whose newest version is younger than ``moment`` (added or changed since)."""
        return self.filter(latest_version__created_at__gt=moment)

    def content(self) -> DocumentQuerySet:
        """Documents that are corpus content: planted canaries are not."""
        return self.filter(is_canary=False)

    def searchable(self) -> DocumentQuerySet:
        """Documents whose newest version may be retrieved.

        Its quality is accepted and it is not a hidden near-duplicate.
        """
        return (
            self.filter(latest_version__isnull=False)
            .filter(
                Q(latest_version__quality_flagged=False)
                | Q(latest_version__quality_accepted_at__isnull=False)
            )
            .filter(
                Q(duplicate_group__isnull=True) | Q(duplicate_group__representative=models.F("pk"))
            )
        )


class Document(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="documents")
    doc_id = models.CharField(max_length=255, help_text="Stable external identifier.")
    title = models.CharField(max_length=500, blank=True)
    access_groups = models.ManyToManyField(AccessGroup, blank=True, related_name="documents")
    latest_version = models.ForeignKey(
        "DocumentVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    duplicate_group = models.ForeignKey(
        DuplicateGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="documents"
    )
    is_canary = models.BooleanField(
        default=False,
        help_text="A planted restricted document with a unique token: permission replays look "
        "for it; pools, gold sets and baselines never count it as content.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["doc_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "doc_id"], name="unique_doc_id_in_project")
        ]
        # Every search leaves canaries out: a small indexed set, not a scan of every document.
        indexes = [
            models.Index(fields=["project"], condition=Q(is_canary=True), name="canary_document")
        ]

    def __str__(self) -> str:
        return self.doc_id

    @property
    def is_restricted(self) -> bool:
        return self.access_groups.exists()


class DocumentVersion(models.Model):
    """An immutable text snapshot; offsets everywhere refer to `text`."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    text = models.TextField()
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the stored text.")
    source_name = models.CharField(max_length=500, blank=True)
    source_modified_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    indexed_at = models.DateTimeField(
        null=True, blank=True, help_text="When an index last took this version in."
    )
    extraction = models.JSONField(default=dict, help_text="The extraction quality report.")
    quality_flagged = models.BooleanField(default=False)
    quality_accepted_at = models.DateTimeField(null=True, blank=True)
    quality_accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    minhash = models.BinaryField(editable=False, default=b"")

    class Meta:
        ordering = ["document", "version"]
        constraints = [
            models.UniqueConstraint(fields=["document", "version"], name="unique_version_number")
        ]
        # Retrieval filters every search by these two small sets (held-back versions, versions
        # newer than an index); without indexes each search scans every version's text.
        indexes = [
            models.Index(
                fields=["document"],
                condition=Q(quality_flagged=True, quality_accepted_at__isnull=True),
                name="held_back_version",
            ),
            models.Index(fields=["created_at"], name="version_created_at"),
        ]

    def __str__(self) -> str:
        return f"{self.document.doc_id} v{self.version}"

    @property
    def held_back(self) -> bool:
        return self.quality_flagged and self.quality_accepted_at is None


class ChunkingStrategy(models.TextChoices):
    FIXED = "fixed", "Fixed size with overlap"
    PARAGRAPH = "paragraph", "Paragraph-aware"
    DOCUMENT = "document", "Whole document"


class ChunkUnit(models.TextChoices):
    WORDS = "words", "Words"
    CHARS = "chars", "Characters"


class ChunkingSchemeQuerySet(models.QuerySet):
    def with_chunk_count(self, viewer=None) -> ChunkingSchemeQuerySet:
        """Each scheme with `chunk_count`; with a ``viewer``, only chunks of documents they may
        see (a count must not reveal a restricted document)."""
        if viewer is None:
            return self.annotate(chunk_count=models.Count("chunks"))
        hidden = Document.objects.hidden_from(viewer).values("pk")
        return self.annotate(
            chunk_count=models.Count("chunks", filter=~Q(chunks__version__document__in=hidden))
        )


class ChunkingScheme(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="chunking_schemes")
    name = models.SlugField(max_length=60)
    strategy = models.CharField(max_length=16, choices=ChunkingStrategy.choices)
    unit = models.CharField(max_length=8, choices=ChunkUnit.choices, default=ChunkUnit.WORDS)
    size = models.PositiveIntegerField(default=200)
    overlap = models.PositiveIntegerField(default=50)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ChunkingSchemeQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_scheme_name")
        ]

    def __str__(self) -> str:
        return self.name

    def describe(self) -> str:
        if self.strategy == ChunkingStrategy.DOCUMENT:
            return "whole document"
        return f"{self.get_strategy_display()}, {self.size} {self.unit}, overlap {self.overlap}"


class Chunk(models.Model):
    """A derived passage of one version under one scheme. Never labelled directly."""

    scheme = models.ForeignKey(ChunkingScheme, on_delete=models.CASCADE, related_name="chunks")
    version = models.ForeignKey(DocumentVersion, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text_hash = models.CharField(max_length=32, help_text="Hash of the passage text, for caches.")

    class Meta:
        ordering = ["version", "ordinal"]
        constraints = [
            models.UniqueConstraint(
                fields=["scheme", "version", "ordinal"], name="unique_chunk_position"
            ),
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="chunk_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.version} [{self.start}:{self.end})"


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class JobQuerySet(models.QuerySet):
    def unfinished(self) -> JobQuerySet:
        return self.filter(state__in=[JobState.QUEUED, JobState.RUNNING])

    def index_builds_of(self, retriever) -> JobQuerySet:
        return self.filter(
            project_id=retriever.project_id,
            kind="build_index",
            params__retriever_id=retriever.pk,
        )


class Job(models.Model):
    """Long work done by a worker; the browser polls it for progress."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=40)
    task = models.CharField(
        max_length=200,
        blank=True,
        help_text="Dotted name of the Celery task that does this job; blank for work done "
        "in the calling process (a command).",
    )
    description = models.CharField(max_length=300, blank=True)
    params = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    errors = models.JSONField(default=list, help_text="Per-item problems: [{item, line, error}].")
    result = models.JSONField(default=dict)
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life from the worker doing this job."
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (JobState.SUCCEEDED, JobState.FAILED)

    @property
    def percent(self) -> int:
        if self.finished:
            return 100
        return int(100 * self.done / self.total) if self.total else 0


class Upload(models.Model):
    """An uploaded original, kept in the database so any worker can read it.

    Never served back from the app's origin.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="uploads")
    name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    content = models.BinaryField()

    def __str__(self) -> str:
        return self.name


class RetrieverKind(models.TextChoices):
    BM25 = "bm25", "BM25 (keyword)"
    EMBEDDING = "embedding", "Embedding (sentence-transformers)"
    RUN = "run", "Uploaded run (the team's own system)"
    HTTP = "http", "HTTP search API (the team's live system)"


class Retriever(models.Model):
    """A named retrieval configuration. Built-in kinds search an Index; `run` replays uploads."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="retrievers")
    name = models.SlugField(max_length=60)
    kind = models.CharField(max_length=16, choices=RetrieverKind.choices)
    scheme = models.ForeignKey(
        ChunkingScheme,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="retrievers",
        help_text="The passages it searches (for a run: what results without offsets map to).",
    )
    params = models.JSONField(default=dict, blank=True, help_text="bm25: k1, b, stem, stopwords.")
    model_path = models.CharField(
        max_length=500,
        blank=True,
        help_text="Embedding model folder; blank = the packaged default.",
    )
    endpoint = models.JSONField(
        default=dict,
        blank=True,
        help_text="http: method, URL and body templates, headers (secrets as env:NAME, never "
        "values), response mapping, timeout, retries, backoff, concurrency.",
    )
    active_index = models.ForeignKey(
        "Index", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_retriever_name")
        ]

    def __str__(self) -> str:
        return self.name


class PermissionProfile(models.Model):
    """A test user: the access groups they are meant to have, and how the team's system is told
    to act as them (headers, and the value of ``{{user}}``; either may be ``env:NAME``)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="test_users")
    name = models.SlugField(max_length=60)
    access_groups = models.ManyToManyField(AccessGroup, blank=True, related_name="test_users")
    unrestricted = models.BooleanField(
        default=False,
        help_text="Meant to see every document (an admin): never leaks, and is the reference "
        "run for over-restriction.",
    )
    headers = models.JSONField(
        default=dict, blank=True, help_text="Extra request headers; secrets as env:NAME."
    )
    user_value = models.JSONField(
        null=True,
        blank=True,
        help_text="What {{user}} becomes in the retriever's templates (blank: the name).",
    )
    description = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_test_user_name")
        ]

    def __str__(self) -> str:
        return self.name


class IndexState(models.TextChoices):
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class Index(models.Model):
    """The built artefact of a retriever for one corpus state. Never mixes two models."""

    retriever = models.ForeignKey(Retriever, on_delete=models.CASCADE, related_name="indexes")
    state = models.CharField(max_length=16, choices=IndexState.choices, default=IndexState.BUILDING)
    built_at = models.DateTimeField(null=True, blank=True)
    passages = models.PositiveIntegerField(default=0)
    model_name = models.CharField(max_length=200, blank=True)
    model_version = models.CharField(max_length=100, blank=True)
    dimension = models.PositiveIntegerField(null=True, blank=True)
    # The artefact is a file in the "artifacts" storage; the row keeps its name and checksum.
    artifact_name = models.CharField(max_length=500, blank=True, editable=False)
    artifact_size = models.BigIntegerField(default=0, editable=False)
    artifact_sha256 = models.CharField(max_length=64, blank=True, editable=False)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.retriever} index {self.pk} ({self.state})"


@receiver(post_delete, sender=Index, dispatch_uid="corpus-index-artifact")
def _delete_artifact(sender, instance: Index, **kwargs) -> None:
    """However the row goes (a rebuild, a cascade from its retriever or project), its file goes."""
    name = instance.artifact_name  # empty for a failed build; delete_artifacts skips it
    transaction.on_commit(lambda: delete_artifacts([name]))


class EmbeddingCache(models.Model):
    """One passage vector per (model version, passage text): re-indexing re-embeds nothing known."""

    model_version = models.CharField(max_length=100)
    text_hash = models.CharField(max_length=32)
    vector = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["model_version", "text_hash"], name="one_vector_per_model_and_text"
            )
        ]

    def __str__(self) -> str:
        return f"{self.model_version} {self.text_hash}"
