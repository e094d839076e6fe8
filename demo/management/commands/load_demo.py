"""The demo project that `make run` starts with.

Safe to run again: it refreshes, never duplicates.
"""

import csv
import hashlib
import io
import json
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from celery import current_app
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from answers.services.review import plan_answer_review
from answers.services.runs import FactInput, import_answers, record_reference_answer
from corpus import jobs
from corpus.management.commands._exit import unusable
from corpus.management.commands._jobs import wait_for_job
from corpus.models import ChunkingScheme, Document, Job, JobState, Project, Retriever, Role
from corpus.services import documents, projects, retrieval
from corpus.sources import read_folder
from demo.management.commands._demo_traces import load_demo_traces
from evaluation.models import GoldSet
from evaluation.services.answer_scores import start_answers_report, stored_answers_report
from evaluation.services.gold_sets import start_finalise
from goldeval.formats.manifests import COLUMNS
from goldset.errors import ServiceError
from health.models import IndexManifest
from health.services import manifests
from health.services.checks import record_health_checks
from labelling.models import Assignment, PoolState, VerdictOutcome
from labelling.services.assignments import plan_assignments
from labelling.services.guidelines import current_guideline, save_guideline
from labelling.services.judgement_import import IMPORTED_POOL, import_judgements
from labelling.services.judgements import record_verdict, verdict_revision
from labelling.services.pools import start_pool
from labelling.services.questions import import_questions

# The demo's files, from every app, in one folder at the top of the repository.
DEMO_DIR = Path(__file__).resolve().parents[2] / "data"
# Demo accounts exist only in the demo project, never in a production install.
DEMO_USERS = [
    ("admin", "goldset-admin", Role.ADMIN),
    ("lead", "goldset-lead", Role.LEAD),
    ("labeller1", "goldset-labeller1", Role.LABELLER),
    ("labeller2", "goldset-labeller2", Role.LABELLER),
]
DEMO_GROUP_MEMBERS = {"hr-confidential": ["admin", "lead", "labeller1"]}
DEMO_QUESTION_SET = "demo"
DEMO_RETRIEVERS = [
    {"name": "bm25", "kind": "bm25", "stem": True, "stopwords": True, "k1": 0.9, "b": 0.4},
    {"name": "minilm", "kind": "embedding"},
]
DEMO_POOL = {"name": "demo-pool", "depth": 10}
DEMO_ANSWER_RUN = "northwind-rag"
DEMO_GUIDELINE = """# Relevance guideline

Grade each passage against the question **as the person asked it**.

- **2 — fully answers**: someone reading only this passage could act on the answer.
- **1 — partially answers**: it helps (the right policy, part of the rule) but something the
  person needs is missing.
- **0 — not relevant**: a different topic, or the right topic without anything that answers.

Mark the sentences that answer as spans (select them, press `s`); keep spans tight.
If no passage answers and you believe the corpus does not cover the question, mark the question
*unanswerable* (`u`). Use *can't tell* only when the question itself is unclear, and say why.

## Reviewing answers

You see the system's answer, the passages it was given (the context) and the facts a correct
answer states.

- **Claims**: each sentence is a claim. A sentence that says two things can be split. A claim is
  *supported* (`f`) when the context says it, *partly* (`p`) when the context says only some of
  it, *not supported* (`n`) when the context does not say it, even if it happens to be true.
- **Citations**: grade each cited passage against its claim: `2` it says the claim, `1` it says
  part of it, `0` it does not.
- **Facts**: `y` the answer states the fact, `p` partly or vaguely, `n` it is missing or wrong.
- A refusal of a question the context could answer is wrong: press `r`.
"""
# The demo's 41 documents build in seconds; a stuck worker should not hang `make run` forever.
DEMO_JOB_TIMEOUT = 600
DEMO_SCHEMES = [
    {"name": "paragraphs", "strategy": "paragraph", "unit": "words", "size": 120, "overlap": 0},
    {"name": "fixed-80w", "strategy": "fixed", "unit": "words", "size": 80, "overlap": 20},
]


# The team's own index, as its manifest describes it (issue 17), so Index health has figures:
# a few documents re-imported after the nightly indexing (stale), a slice re-embedded with a
# newer revision of the model (mixed), one never indexed and one deleted from the corpus.
DEMO_TEAM_INDEX = {
    "retriever": "team-search",
    "model": "bge-small-en-v1.5",
    "revision": "2025-06",
    "newer_revision": "2026-01",
    "dimension": 384,
    "stale": [
        "hr-pol-009-annual-leave.md",
        "fin-pol-012-per-diem.md",
        "hr-pol-021-remote-and-flexible-work.md",
    ],
    "mixed": ["it-proc-015-vpn-access.txt", "it-sec-007-passwords-and-mfa.md"],
    "missing": ["it-proc-022-software-requests.md"],
    "deleted": ["fin-pol-007-travel-booking-2024.md"],
}


def demo_index_manifest(project: Project, *, now: datetime, plan: dict = DEMO_TEAM_INDEX) -> bytes:
    """The team index's manifest (CSV) over the project's searchable documents, per ``plan``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    searchable = (
        Document.objects.filter(project=project).content().searchable().with_latest_version()
    )
    for document in searchable.order_by("doc_id"):
        if document.doc_id in plan["missing"]:
            continue
        version = document.latest_version
        modified = version.source_modified_at or now - timedelta(days=30)
        digest, indexed_at = version.content_hash, modified + timedelta(hours=6)
        if document.doc_id in plan["stale"]:
            # The index holds the text before the newest re-import.
            digest = hashlib.sha256(f"older text of {document.doc_id}".encode()).hexdigest()
            indexed_at = modified - timedelta(days=3)
        revision = plan["newer_revision"] if document.doc_id in plan["mixed"] else plan["revision"]
        model = (plan["model"], revision, plan["dimension"])
        writer.writerow(
            [document.doc_id, version.version, digest, "", "", indexed_at.isoformat(), *model]
        )
    for doc_id in plan["deleted"]:
        writer.writerow(
            [
                doc_id,
                1,
                "",
                "",
                "",
                (now - timedelta(days=200)).isoformat(),
                plan["model"],
                plan["revision"],
                plan["dimension"],
            ]
        )
    return buffer.getvalue().encode("utf-8")


def login_lines() -> list[str]:
    """The demo accounts, as `load_demo` and `quickstart` print them."""
    return [
        f"  {username:<10} password {password:<20} ({role.label.lower()})"
        for username, password, role in DEMO_USERS
    ]


# What the demo's load does, in order: its job shows the step it is at (`run_demo_load`).
DEMO_STEPS = (
    "Importing and chunking the documents",
    "Importing the questions and their reference facts",
    "Finalising the first labelling round as gold set v1",
    "Building the bm25 and minilm indexes",
    "Pooling candidates for labelling",
    "Planning the labelling",
    "Importing the answer run and planning its review",
    "Computing the answer scores",
    "Importing the team index's manifest",
    "Importing production traces and drawing this week's sample",
    "Checking index health",
)
DEMO_SLUG = "demo"
LOAD_KIND = "load_demo"


class Command(BaseCommand):
    help = "Create or refresh the demo project with its documents and demo accounts."

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-logins",
            action="store_true",
            help="do not print the demo logins (`quickstart` prints them once the site is up)",
        )
        parser.add_argument(
            "--background",
            action="store_true",
            help="create the project and its accounts, then queue the rest as a job for the "
            "worker and return at once (what `quickstart` does); nothing when the demo is "
            "loaded already",
        )

    def handle(self, *args, no_logins=False, background=False, **options):
        if background and demo_is_loaded():
            self.stdout.write("The demo is loaded already.")
            return
        project, users = self.accounts()
        if background:
            job = queue_demo_load(project, users["admin"])
            self.stdout.write(f"The demo is loading as job {job.pk} of project {DEMO_SLUG}.")
            return
        self.load(project, users)
        if no_logins:
            self.stdout.write(self.style.SUCCESS("Demo project 'demo' is ready."))
            return
        self.stdout.write(self.style.SUCCESS("Demo project 'demo' is ready. Log in as:"))
        for line in login_lines():
            self.stdout.write(line)

    def accounts(self) -> tuple[Project, dict]:
        """The demo project and its accounts: enough to log in while the rest loads."""
        with transaction.atomic():
            project = Project.objects.filter(slug=DEMO_SLUG).first() or projects.create_project(
                slug=DEMO_SLUG, name="Northwind demo"
            )
            return project, self._users(project)

    def load(self, project, users, *, step=None):
        """Everything of the demo but its accounts, refreshed, never duplicated. ``step(number,
        text)`` is told each of DEMO_STEPS as it begins."""
        steps = iter(enumerate(DEMO_STEPS, start=1))

        def begin() -> None:
            number, text = next(steps)
            if step is not None:
                step(number, text)

        begin()
        with transaction.atomic():
            for spec in DEMO_SCHEMES:
                if not ChunkingScheme.objects.filter(project=project, name=spec["name"]).exists():
                    documents.add_chunking_scheme(project=project, **spec)
            self._documents(project)
            for scheme in project.chunking_schemes.all():
                documents.chunk_corpus(scheme=scheme)
            for group, names in DEMO_GROUP_MEMBERS.items():
                projects.set_access_group_members(
                    project=project, name=group, users=[users[n] for n in names]
                )
        # Outside the transaction above: index builds and pooling run as jobs, queued on commit.
        begin()
        question_set = self._questions(project)
        self._reference_facts(question_set, users)
        begin()
        self._first_round(question_set, users)
        begin()
        retrievers = self._retrievers(project)
        begin()
        self._pool(question_set, retrievers)
        begin()
        self._labelling(project, question_set, users)
        begin()
        self._answers(question_set, users)
        begin()
        self._answer_scores(question_set, users)
        begin()
        self._team_index(project)
        begin()
        load_demo_traces(
            project=project, users=users, demo_dir=DEMO_DIR, wait=self._wait, out=self.stdout
        )
        begin()
        # The first index health check (the beat task repeats it daily), so the Index health
        # page has its history and the project page its banner.
        record_health_checks(project=project)

    def _users(self, project):
        User = get_user_model()
        users = {}
        for username, password, role in DEMO_USERS:
            user, _ = User.objects.get_or_create(username=username)
            user.set_password(password)
            user.is_staff = user.is_superuser = role == Role.ADMIN
            user.save()
            projects.add_member(project=project, user=user, role=role)
            users[username] = user
        return users

    def _documents(self, project):
        manifest = json.loads((DEMO_DIR / "manifest.json").read_text())
        restricted = manifest.get("restricted", {})
        modified = manifest.get("modified_at", {})
        for file, batch in read_folder(DEMO_DIR / "documents"):
            batch.records = [
                replace(
                    record,
                    access_groups=tuple(restricted.get(file.name, ())),
                    modified_at=datetime.fromisoformat(modified[file.name].replace("Z", "+00:00"))
                    if file.name in modified
                    else None,
                )
                for record in batch.records
            ]
            result = documents.ingest_batch(
                project=project, batch=batch, importer=documents.Importer.command_line()
            )
            for error in result.errors:
                self.stderr.write(f"demo: {error}")

    def _questions(self, project):

        # The file's `answerable` and `answer_doc` keys are hints for tests; they are not imported.
        result = import_questions(
            project=project,
            set_name=DEMO_QUESTION_SET,
            data=(DEMO_DIR / "questions.jsonl").read_bytes(),
            format="jsonl",
        )
        self.stdout.write(
            f"Question set {DEMO_QUESTION_SET}: {result.created} new, {result.unchanged} kept."
        )
        return result.question_set

    def _first_round(self, question_set, users):
        """An earlier labelling round (labeller1 alone, whole answering documents, the four
        unanswerable questions marked so), finalised as gold set v1 before the pool of the next
        round opens: a finalised gold set, so the Evaluation and Answers pages have figures."""
        if GoldSet.objects.filter(question_set=question_set).exists():
            return
        if question_set.pools.exists():
            self.stdout.write("Gold set: not finalised (a demo from before had pools already).")
            return
        result = import_judgements(
            project=question_set.project,
            name="demo/first_round.jsonl",
            data=(DEMO_DIR / "first_round.jsonl").read_bytes(),
            set_name=question_set.name,
        )
        for error in result.errors:
            raise unusable(f"demo: {error}")
        unanswerable = [
            json.loads(line)["id"]
            for line in (DEMO_DIR / "questions.jsonl").read_text().splitlines()
            if not json.loads(line)["answerable"]
        ]
        labeller = users["labeller1"]
        for assignment in Assignment.objects.filter(
            pool__question_set=question_set,
            pool__name=IMPORTED_POOL,
            question__external_id__in=unanswerable,
            labeller=labeller,
        ):
            record_verdict(
                assignment=assignment,
                labeller=labeller,
                outcome=VerdictOutcome.UNANSWERABLE,
                reason="",
                revision=verdict_revision(assignment),
            )
        self._wait(start_finalise(question_set=question_set, user=users["admin"]), "gold set")

    def _reference_facts(self, question_set, users):
        """Reference facts for most questions (frozen into the gold set with it)."""
        lead = users["lead"]
        for line in (DEMO_DIR / "reference_facts.jsonl").read_text().splitlines():
            record = json.loads(line)
            question = question_set.questions.filter(external_id=record["question_id"]).first()
            if question is None:
                continue
            record_reference_answer(
                question=question,
                facts=[
                    FactInput(text=fact["text"], vital=fact["importance"] == "vital")
                    for fact in record["facts"]
                ],
                user=lead,
            )  # the same facts again make no new version

    def _answer_scores(self, question_set, users):
        """The Answers page's figures for the newest gold set, computed by its job now."""
        gold_set = GoldSet.objects.filter(question_set=question_set).order_by("-number").first()
        if gold_set is None or stored_answers_report(gold_set) is not None:
            return
        self._wait(start_answers_report(gold_set=gold_set, user=users["lead"]), "answer scores")

    def _retrievers(self, project):
        scheme = ChunkingScheme.objects.get(project=project, name="paragraphs")
        retrievers = []
        for spec in DEMO_RETRIEVERS:
            retriever = Retriever.objects.filter(project=project, name=spec["name"]).first()
            if retriever is None:
                retriever = retrieval.add_retriever(project=project, scheme=scheme, **spec)
            if retriever.active_index_id is None or retrieval.stale_documents(retriever).exists():
                self._wait(retrieval.start_index_build(retriever=retriever), retriever.name)
                retriever.refresh_from_db()
            retrievers.append(retriever)
        return retrievers

    def _pool(self, question_set, retrievers):

        existing = question_set.pools.filter(name=DEMO_POOL["name"]).first()
        if existing is not None and existing.state == PoolState.FAILED:
            existing.delete()
            existing = None
        if existing is None:
            pool = start_pool(question_set=question_set, retrievers=retrievers, **DEMO_POOL)
            self._wait(pool.job, pool.name)

    def _labelling(self, project, question_set, users):
        """A first guideline, and the demo labellers holding assignments, some double."""

        if current_guideline(project) is None:
            save_guideline(project=project, text=DEMO_GUIDELINE, user=users["lead"])
        pool = question_set.pools.get(name=DEMO_POOL["name"])
        result = plan_assignments(
            pool=pool,
            labellers=[users["labeller1"], users["labeller2"]],
            double_count=8,
            user=users["lead"],
        )
        self.stdout.write(result.describe())

    def _answers(self, question_set, users):
        """Reference facts for most questions, and an answer run of the team's system (some
        answers faithful, some not, some citing the wrong document, some refusing, a few of
        those refusals wrong), planned for review."""
        self._reference_facts(question_set, users)
        if question_set.answer_runs.filter(name=DEMO_ANSWER_RUN).exists():
            return
        result = import_answers(
            question_set=question_set,
            data=(DEMO_DIR / "answers.jsonl").read_bytes(),
            run_name=DEMO_ANSWER_RUN,
            source="demo/answers.jsonl",
        )
        plan = plan_answer_review(
            run=result.run,
            labellers=[users["labeller1"], users["labeller2"]],
            double_share=0.2,
        )
        self.stdout.write(
            f"Answer run {result.run.name}: {result.answers} answers, {plan.assignments} reviews "
            "planned."
        )

    def _team_index(self, project):
        team = Retriever.objects.filter(project=project, name=DEMO_TEAM_INDEX["retriever"]).first()
        if team is None:
            team = retrieval.add_retriever(
                project=project, name=DEMO_TEAM_INDEX["retriever"], kind="run"
            )
        if IndexManifest.objects.filter(retriever=team).exists():
            return
        stored = manifests.import_manifest(
            retriever=team,
            data=demo_index_manifest(project, now=datetime.now().astimezone()),
            file_name="team-search-manifest.csv",
        )
        self.stdout.write(f"The team's index manifest: {stored.rows} rows (see Index health).")

    def _wait(self, job, what):
        try:
            job = wait_for_job(job, out=self.stdout, timeout=DEMO_JOB_TIMEOUT)
        except TimeoutError as exc:
            raise unusable(f"demo: {what}: {exc}")
        if job.state != JobState.SUCCEEDED:
            raise unusable(f"demo: {what} failed: {job.message}")
        self.stdout.write(job.message)


def demo_is_loaded() -> bool:
    """Whether the demo's load finished and its indexes are current: then `quickstart` only
    starts (a restart), instead of loading it again."""
    project = Project.objects.filter(slug=DEMO_SLUG).first()
    if project is None:
        return False
    if not project.jobs.filter(kind=LOAD_KIND, state=JobState.SUCCEEDED).exists():
        return False
    for spec in DEMO_RETRIEVERS:
        retriever = (
            Retriever.objects.filter(project=project, name=spec["name"])
            .select_related("active_index")
            .first()
        )
        if retriever is None or retriever.active_index_id is None:
            return False
        if retrieval.stale_documents(retriever).exists():
            return False
    return True


def queue_demo_load(project: Project, user) -> Job:
    """The demo's load as a job for the worker (`run_demo_load`), or the one already under way.

    Jobs an earlier quickstart left unfinished (stopped mid-way) are queued again first, as the
    reconciler would after its wait: with no worker running before this one, none is alive.
    """
    jobs.reconcile(stale_after=timedelta(0))
    unfinished = project.jobs.filter(kind=LOAD_KIND).unfinished().first()
    if unfinished is not None:
        return unfinished
    return jobs.start(
        project=project,
        task="demo.tasks.load_demo",
        kind=LOAD_KIND,
        description="Load the demo",
        user=user,
        total=len(DEMO_STEPS),
    )


def run_demo_load(job: Job) -> None:
    """The job of `queue_demo_load`: each step of the demo in turn, shown on the job's page.

    The jobs it starts (index builds, pooling, finalising, scoring), and the tasks those fan out
    to (a pool's batches), keep their rows and pages but run here, in this worker process, as
    they are queued (Celery's ``task_always_eager``, for this job only): on a worker of one
    slot, this job holds it, and waiting for their messages would wait for itself."""
    command = Command(stdout=io.StringIO(), stderr=io.StringIO())
    users = {
        user.username: user
        for user in get_user_model().objects.filter(username__in=[u for u, *_ in DEMO_USERS])
    }
    advance = jobs.progress(job)

    def step(number: int, text: str) -> None:
        if number > 1:
            advance(1)
        jobs.say(job, f"{text}…")

    try:
        with tasks_run_here():
            command.load(job.project, users, step=step)
    except CommandError as exc:
        raise ServiceError(str(exc)) from exc
    advance(1)
    jobs.finish(job, JobState.SUCCEEDED, "The demo is ready.")


@contextmanager
def tasks_run_here():
    """Tasks queued meanwhile run in this process at once (a prefork worker's child runs one
    task at a time, so nothing else here sees the setting)."""
    app = current_app
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before
