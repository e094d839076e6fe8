"""Permission replays in the app: every question of a gold set (and the project's canary
questions) run as each test user, through a retriever or from uploaded per-user runs, checked by
`goldeval.scoring.permission_replay` against the access groups recorded when the replay started.

The replay is a job: it searches (a built-in retriever filters by the test user's groups before
the top k; the HTTP retriever is called with their headers and ``{{user}}``), stores each user's
run as a JSONL file, and stores the report. A question the endpoint cannot answer fails the
replay, listed on the job; nothing is half-stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from corpus import jobs
from corpus.models import Document, Job, JobState, PermissionProfile, Retriever, RetrieverKind
from corpus.services import http_retrieval
from corpus.services.retrieval import check_searchable, retrieve
from corpus.services.test_users import RESERVED_NAME
from evaluation.models import GoldSet, PermissionReplay, PermissionReplayRun, ReplaySource
from evaluation.services.evaluation_runs import MAX_RUN_BYTES
from evaluation.services.gold_sets import GoldSetError, load_gold_set
from goldeval.formats.gold import EvaluationInputError
from goldeval.formats.runfiles import jsonl_run_line
from goldeval.scoring.permission_replay import (
    DEFAULT_KS,
    AccessSnapshot,
    TestUser,
    read_user_run,
    replay_permissions,
)
from goldset.batching import in_batches
from goldset.errors import ServiceError
from labelling.models import Question

REFERENCE = RESERVED_NAME  # the retriever run with no test user: what pools see
MAX_K = 100
SEARCH_BATCH = 64
MAX_LISTED_PROBLEMS = 500


class ReplayRejected(GoldSetError):
    """A replay that cannot start; nothing was stored."""


@dataclass(frozen=True)
class Upload:
    file_name: str
    data: bytes


def start_permission_replay(
    *,
    gold_set: GoldSet,
    test_users: Sequence[PermissionProfile],
    k: int,
    retriever: Retriever | None = None,
    uploads: Mapping[int, Upload] | None = None,
    with_canaries: bool = True,
    user=None,
) -> PermissionReplay:
    """Record the access groups of every document now, and queue the replay.

    Either ``retriever`` (run as each test user) or ``uploads`` (one run per test user, by the
    test user's pk) is given. Uploaded runs are read first: a bad file refuses the replay.
    """
    project = gold_set.question_set.project
    if not test_users:
        raise ReplayRejected("Choose at least one test user.")
    if any(profile.project_id != project.pk for profile in test_users):
        raise ReplayRejected("A test user belongs to another project.")
    if not 1 <= k <= MAX_K:
        raise ReplayRejected(f"k must be between 1 and {MAX_K}, not {k}.")
    if (retriever is None) == (not uploads):
        raise ReplayRejected("Choose a retriever to run, or upload one run per test user.")
    runs: list[PermissionReplayRun] = []
    if retriever is not None:
        _check_retriever(retriever, project)
    else:
        runs = _read_uploads(test_users, uploads)
    with transaction.atomic():
        replay = PermissionReplay.objects.create(
            gold_set=gold_set,
            source=ReplaySource.RETRIEVER if retriever else ReplaySource.UPLOAD,
            retriever=retriever,
            retriever_name=retriever.name if retriever else "",
            k=k,
            with_canaries=with_canaries,
            snapshot=snapshot_of(project),
            created_by=user,
        )
        replay.test_users.set(test_users)
        for run in runs:
            run.replay = replay
        PermissionReplayRun.objects.bulk_create(runs)
        searches = (len(test_users) + 1) * len(questions_of(replay)) if retriever else 0
        replay.job = jobs.start(
            project=project,
            task="evaluation.tasks.permission_replay",
            kind="permission_replay",
            user=user,
            params={"replay_id": replay.pk},
            total=searches,
            description=f"Permission replay of {gold_set} as "
            + ", ".join(p.name for p in test_users)
            + (f" through {retriever.name}" if retriever else " (uploaded runs)"),
        )
        replay.save(update_fields=["job"])
    return replay


def _check_retriever(retriever: Retriever, project) -> None:
    try:
        check_searchable(retriever, project=project)
    except ServiceError as error:
        raise ReplayRejected(str(error)) from None
    if retriever.kind == RetrieverKind.RUN:
        raise ReplayRejected(
            f"{retriever.name} replays one uploaded run; upload a run per test user instead."
        )


def _read_uploads(test_users, uploads) -> list[PermissionReplayRun]:
    missing = [p.name for p in test_users if p.pk not in uploads]
    if missing:
        raise ReplayRejected(f"Upload a run for {', '.join(missing)} too.")
    runs = []
    for profile in test_users:
        upload = uploads[profile.pk]
        if len(upload.data) > MAX_RUN_BYTES:
            raise ReplayRejected(f"{upload.file_name} is larger than {MAX_RUN_BYTES // 2**20} MB.")
        try:
            read = read_user_run(upload.data)
        except EvaluationInputError as error:
            where = f"line {error.line}: " if error.line is not None else ""
            raise ReplayRejected(
                f"{upload.file_name} ({profile.name}): {where}{error.message}. Nothing was stored."
            ) from None
        runs.append(
            PermissionReplayRun(
                user_name=profile.name,
                test_user=profile,
                file_name=upload.file_name[:255],
                content=upload.data,
                questions=len(read),
            )
        )
    return runs


def snapshot_of(project) -> dict:
    """Every document's access groups and canary flag, now (the replay's recorded snapshot)."""
    groups: dict[int, list[str]] = {}
    for document_id, name in (
        Document.access_groups.through.objects.filter(accessgroup__project=project)
        .order_by("accessgroup__name")
        .values_list("document_id", "accessgroup__name")
    ):
        groups.setdefault(document_id, []).append(name)
    documents = {
        doc_id: {"groups": groups.get(pk, []), "canary": canary}
        for pk, doc_id, canary in Document.objects.filter(project=project).values_list(
            "pk", "doc_id", "is_canary"
        )
    }
    taken = timezone.now()
    return {
        "source": f"the corpus of {project.slug} on {taken:%Y-%m-%d at %H:%M} UTC",
        "taken_at": taken.isoformat(),
        "documents": documents,
    }


def questions_of(replay: PermissionReplay) -> list[tuple[str, str]]:
    """(question id, text): the gold set's questions, then the project's canary questions."""
    gold = load_gold_set(replay.gold_set)
    questions = [(q.question_id, q.question) for q in gold.questions.values()]
    if replay.with_canaries:
        known = set(gold.questions)
        questions += [
            (external_id, text)
            for external_id, text in Question.objects.filter(
                question_set__project_id=replay.gold_set.question_set.project_id,
                question_set__is_canary=True,
            )
            .order_by("pk")
            .values_list("external_id", "text")
            if external_id not in known
        ]
    return questions


def report_ks(k: int, k_sent_to_model: int) -> tuple[int, ...]:
    return tuple(sorted({x for x in (*DEFAULT_KS, k_sent_to_model, k) if x <= k}))


def run_permission_replay(job: Job) -> None:
    """The job of `start_permission_replay`."""
    replay = PermissionReplay.objects.select_related(
        "gold_set__question_set__project", "retriever"
    ).get(pk=job.params["replay_id"], gold_set__question_set__project=job.project)
    if replay.report:  # a redelivered job: the report is stored
        jobs.finish(job, JobState.SUCCEEDED, _verdict(replay.report))
        return
    profiles = list(replay.test_users.prefetch_related("access_groups").order_by("name"))
    users = [
        TestUser(
            p.name,
            frozenset(g.name for g in p.access_groups.all()),
            unrestricted=p.unrestricted,
        )
        for p in profiles
    ]
    if replay.source == ReplaySource.RETRIEVER:
        if replay.retriever is None:
            raise ServiceError("The replay's retriever was deleted; start a new replay.")
        runs = _search(replay, profiles, job)
        reference = REFERENCE
        users.append(TestUser(REFERENCE, unrestricted=True))
    else:
        runs = list(replay.runs.all())
        reference = next((u.name for u in users if u.unrestricted), None)
    read = {run.user_name: read_user_run(bytes(run.content)) for run in runs}
    project = replay.gold_set.question_set.project
    report = replay_permissions(
        snapshot=AccessSnapshot.from_dict(replay.snapshot),
        users=users,
        runs=read,
        gold=load_gold_set(replay.gold_set),
        ks=report_ks(replay.k, project.k_sent_to_model),
        reference=reference,
    )
    replay.report = report.to_dict()
    with transaction.atomic():
        if replay.source == ReplaySource.RETRIEVER:
            replay.runs.all().delete()
            PermissionReplayRun.objects.bulk_create(runs)
        replay.save(update_fields=["report"])
    job.result = {"replay_id": replay.pk, "leaks": report.leaks}
    jobs.finish(job, JobState.SUCCEEDED, _verdict(replay.report))


def _verdict(report: dict) -> str:
    leaks = report.get("leaks", 0)
    if not leaks:
        return "No leak: no test user got a document outside their access groups."
    who = sorted({f["user"] for f in report.get("findings", [])})
    return f"{leaks} leak{'s' if leaks != 1 else ''} found (for {', '.join(who)})."


def _search(replay: PermissionReplay, profiles, job: Job) -> list[PermissionReplayRun]:
    questions = questions_of(replay)
    retriever = replay.retriever
    advance = jobs.progress(job)
    runs, errors, warnings = [], [], []
    for profile in [None, *profiles]:
        name = REFERENCE if profile is None else profile.name
        if retriever.kind == RetrieverKind.HTTP:
            found = http_retrieval.search_http(
                retriever=retriever,
                questions=questions,
                k=replay.k,
                profile=profile,
                progress=advance,
            )
            errors += found.errors
            warnings += found.warnings
            rankings = found.rankings
            if found.errors:
                continue
        else:
            rankings = _built_in(retriever, questions, replay.k, profile, advance)
        # The run format's own writer: it never writes a score its reader would refuse.
        content = "".join(
            jsonl_run_line(question_id=question_id, results=ranking)
            for (question_id, _), ranking in zip(questions, rankings, strict=True)
        ).encode()
        runs.append(
            PermissionReplayRun(
                replay=replay,
                user_name=name,
                test_user=profile,
                file_name=f"{name}.jsonl",
                content=content,
                questions=len(questions),
            )
        )
    job.errors = (errors + warnings)[:MAX_LISTED_PROBLEMS]
    if errors:
        raise ServiceError(
            f"{len(errors)} search{'es' if len(errors) != 1 else ''} got no usable answer "
            f"(listed below); no report was stored. First: {errors[0]['error']}"
        )
    return runs


def _built_in(retriever, questions, k, profile, advance):
    groups = None
    if profile is not None and not profile.unrestricted:
        groups = [g.pk for g in profile.access_groups.all()]
    rankings = []
    for batch in in_batches(questions, size=SEARCH_BATCH):
        rankings += retrieve(
            retriever=retriever,
            questions=[text for _, text in batch],
            k=k,
            groups=groups,
            with_canaries=True,
        )
        advance(len(batch))
    return rankings


# --- reading a replay ---------------------------------------------------------------------------

HIDDEN = "a document hidden from you"


def shown_report(*, replay: PermissionReplay, user) -> dict:
    """The replay's report as ``user`` may see it: a finding still counts and shows, but a
    document their access groups hide is never named, nor its groups."""
    report = dict(replay.report)
    if not report:
        return report
    named = {
        item["doc_id"]
        for key in ("findings", "over_restriction", "side_channels")
        for item in report.get(key, [])
    }
    project = replay.gold_set.question_set.project
    ordered = sorted(named)
    visible: set[str] = set()
    for batch in in_batches(ordered):
        visible.update(
            Document.objects.filter(project=project, doc_id__in=batch)
            .visible_to(user)
            .values_list("doc_id", flat=True)
        )

    def redact(item: dict) -> dict:
        if item["doc_id"] in visible:
            return {**item, "redacted": False}
        return {**item, "doc_id": HIDDEN, "groups": [], "redacted": True}

    for key in ("findings", "over_restriction", "side_channels"):
        report[key] = [redact(item) for item in report.get(key, [])]
    return report
