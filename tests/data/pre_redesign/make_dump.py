"""Make `demo.sql.gz` and `expected.json`: a PostgreSQL database filled by the code from before
the issue 31 redesign, for `tests/test_forward_migration.py`.

Run it at commit e7b2b4f (the last commit before models move between apps), from the
repository's root, with PostgreSQL reachable as user postgres::

    git switch --detach e7b2b4f
    PGHOST=127.0.0.1 PGUSER=postgres .venv/bin/python tests/data/pre_redesign/make_dump.py

It drops and creates the database `goldset_predump` (``--database`` to change it), runs
`manage.py migrate` and `manage.py load_demo` with REDIS_URL unset (jobs run in process), then
does what users do, through the services and management commands: both labellers grade the
demo pool with narrowed spans and verdicts, the lead resolves the double-labelled items they
disagree on, an admin finalises gold set v2, traces arrive at the trace intake with an API token,
a second sampling rule is saved, the answer run is reviewed (double reviews adjudicated), test
users are added, a permission replay runs, index health is checked and reported, the gold set
is evaluated, and an auth group and a user get some of the app's model permissions (so renamed
content types and permissions show). Then it writes the dump (`pg_dump --no-owner
--no-privileges`, gzipped) and the row count of every table, every content type and every
permission to `expected.json`.

Index artifacts (files in GOLDSET_ARTIFACT_DIR) are written to a temporary folder and left out:
the dump holds the database only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
COMMIT = "e7b2b4f"
# The narrowed evidence: a labeller selects the passage's first sentence (or its first
# characters when it has no full stop).
SENTENCE_END = ". "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="goldset_predump")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--populate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.populate:
        populate()
        return
    host = os.environ.get("PGHOST", "127.0.0.1")
    user = os.environ.get("PGUSER", "postgres")
    pg = {**os.environ, "PGHOST": host, "PGUSER": user}
    subprocess.run(["dropdb", "--if-exists", args.database], check=True, env=pg)
    subprocess.run(["createdb", args.database], check=True, env=pg)
    artifacts = tempfile.mkdtemp(prefix="goldset-predump-artifacts-")
    env = {
        **{k: v for k, v in pg.items() if k != "REDIS_URL"},
        "DATABASE_URL": f"postgres://{user}@{host}:5432/{args.database}",
        "DEBUG": "1",
        "GOLDSET_ARTIFACT_DIR": artifacts,
        "GOLDSET_LOCAL_WORKER": "0",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput"], check=True, env=env, cwd=ROOT)
    subprocess.run([*manage, "load_demo", "--no-logins"], check=True, env=env, cwd=ROOT)
    subprocess.run([sys.executable, __file__, "--populate"], check=True, env=env, cwd=ROOT)
    dump = subprocess.run(
        ["pg_dump", "--no-owner", "--no-privileges", args.database],
        check=True,
        env=pg,
        capture_output=True,
    ).stdout
    # mtime=0: the same dump gives the same file.
    (HERE / "demo.sql.gz").write_bytes(gzip.compress(dump, compresslevel=9, mtime=0))
    expected = describe(args.database, pg)
    expected["made_at_commit"] = COMMIT
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    if not args.keep:
        subprocess.run(["dropdb", args.database], check=True, env=pg)
    print(f"wrote {HERE / 'demo.sql.gz'} ({len(dump):,} bytes before gzip) and expected.json")


def describe(database: str, env: dict) -> dict:
    """Row counts of every table, content types and permissions, read with psql."""

    def rows(sql: str) -> list[list[str]]:
        out = subprocess.run(
            ["psql", "-d", database, "-AtF", "\t", "-c", sql],
            check=True,
            env=env,
            capture_output=True,
            text=True,
        ).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    # Exact counts, every table in one query (format's %I quotes the name).
    counts = {
        table: int(count)
        for table, count in rows(
            "select tablename, (xpath('/row/c/text()', query_to_xml("
            "format('select count(*) as c from %I', tablename), false, true, '')))[1]::text "
            "from pg_tables where schemaname = 'public' order by tablename"
        )
    }
    content_types = [
        [int(i), app, model]
        for i, app, model in rows(
            "select id, app_label, model from django_content_type order by id"
        )
    ]
    permissions = [
        [int(i), int(ct), codename]
        for i, ct, codename in rows(
            "select id, content_type_id, codename from auth_permission order by id"
        )
    ]
    return {"tables": counts, "content_types": content_types, "permissions": permissions}


class UserActions:
    """Users' work on the demo project, each step through the service or command a page or
    the command line calls (never rows written by hand)."""

    def run(self) -> None:
        from django.contrib.auth import get_user_model

        from corpus.models import Project

        self.project = Project.objects.get(slug="demo")
        self.users = {u.username: u for u in get_user_model().objects.all()}
        self.hints = {
            record["id"]: record
            for record in map(json.loads, (ROOT / "demo" / "questions.jsonl").open())
        }
        self.grade_demo_pool()
        self.adjudicate()
        self.review_answers()
        self.finalise()
        self.post_traces()
        self.sampling()
        self.test_users_and_replay()
        self.index_health()
        self.evaluate()
        self.permissions()

    def wait(self, job) -> None:
        from django.core.management.base import OutputWrapper

        from corpus.management.commands._jobs import wait_for_job
        from corpus.models import JobState

        job = wait_for_job(job, out=OutputWrapper(sys.stdout), timeout=600)
        if job.state != JobState.SUCCEEDED:
            raise SystemExit(f"{job.kind} failed: {job.message}")

    def grade_demo_pool(self) -> None:
        """Both labellers grade their assignments of the demo pool as the hints say: the
        answering document's passages 2 with the first sentence as evidence, the rest 0. On the
        first two double-labelled questions the second labeller grades the answer 1 instead,
        so the lead has disagreements to resolve."""
        from corpus.models import Document
        from labelling.models import Assignment, Candidate
        from labelling.services.judgements import (
            add_span,
            record_grade,
            record_note,
            record_verdict,
            verdict_revision,
        )

        doubled = list(
            Assignment.objects.filter(pool__name="demo-pool", slot=2)
            .order_by("question__external_id")
            .values_list("question_id", flat=True)
        )[:2]
        assignments = Assignment.objects.filter(pool__name="demo-pool").select_related(
            "question", "labeller"
        )
        for assignment in assignments.order_by("question__external_id", "slot"):
            labeller = assignment.labeller
            hint = self.hints[assignment.question.external_id]
            answer_doc = hint.get("answer_doc") if hint["answerable"] else None
            candidates = (
                Candidate.objects.filter(pool=assignment.pool, question=assignment.question)
                .exclude(version__document__in=Document.objects.hidden_from(labeller))
                .select_related("version__document")
                .order_by("pk")
            )
            for candidate in candidates:
                good = candidate.version.document.doc_id == answer_doc
                grade = 2 if good else 0
                if good and assignment.slot == 2 and assignment.question_id in doubled:
                    grade = 1
                done = record_grade(
                    assignment=assignment,
                    candidate_id=candidate.pk,
                    labeller=labeller,
                    grade=grade,
                    revision=0,
                    seconds=12.5,
                )
                if grade:
                    text = candidate.version.text[candidate.start : candidate.end]
                    cut = text.find(SENTENCE_END)
                    end = candidate.start + (cut + 1 if cut > 0 else min(len(text), 40))
                    done = add_span(
                        assignment=assignment,
                        candidate_id=candidate.pk,
                        labeller=labeller,
                        version_id=candidate.version_id,
                        start=candidate.start,
                        end=end,
                        quote=candidate.version.text[candidate.start : end],
                        revision=done.revision,
                        seconds=4.0,
                    )
                    if grade == 1:
                        record_note(
                            assignment=assignment,
                            candidate_id=candidate.pk,
                            labeller=labeller,
                            note="Only part of the rule; the form is not named.",
                            revision=done.revision,
                        )
            record_verdict(
                assignment=assignment,
                labeller=labeller,
                outcome="answerable" if answer_doc else "unanswerable",
                reason="",
                revision=verdict_revision(assignment),
            )

    def adjudicate(self) -> None:
        """The lead resolves every item the adjudication queue lists, keeping the higher
        grade with both labellers' evidence."""
        from labelling.models import QuestionSet
        from labelling.services.adjudication import (
            adjudication_queue,
            resolve,
            resolve_item_from,
        )

        lead = self.users["lead"]
        question_set = QuestionSet.objects.get(project=self.project, name="demo")
        for entry in adjudication_queue(question_set=question_set, viewer=lead):
            if entry.item is None:
                outcomes = entry.question_votes.outcomes
                resolve(
                    pool=entry.pool,
                    question=entry.question,
                    candidate=None,
                    user=lead,
                    outcome=outcomes[0],
                    note="Settled with the guideline.",
                )
                continue
            grade = max(vote.grade for vote in entry.item.votes)
            resolve_item_from(
                item=entry.item,
                user=lead,
                grade=grade,
                spans_from="both",
                note="The passage names the form: a full answer.",
            )

    def review_answers(self) -> None:
        """Every planned answer review, done; a double-reviewed answer's second review differs
        on one claim, and the lead picks the first."""
        from labelling.answer_models import AnswerAssignment
        from labelling.services.answer_adjudication import resolve_answer

        from labelling.services import answer_review as review

        assignments = AnswerAssignment.objects.select_related("answer", "labeller")
        for assignment in assignments.order_by("answer_id", "slot"):
            labeller = assignment.labeller
            for claim in assignment.claims.order_by("position"):
                support = "partial" if assignment.slot == 2 and claim.position == 0 else "full"
                review.record_claim_support(
                    assignment=assignment,
                    labeller=labeller,
                    claim=claim.position,
                    support=support,
                )
                for citation in claim.citations.all():
                    review.record_citation_grade(
                        assignment=assignment,
                        labeller=labeller,
                        claim=claim.position,
                        passage=citation.passage_id,
                        grade=2,
                    )
            reference = review.reference_for(assignment)
            if reference is not None and not assignment.answer.refused:
                for n, fact in enumerate(reference.facts.order_by("pk")):
                    review.record_fact_presence(
                        assignment=assignment,
                        labeller=labeller,
                        fact=fact.pk,
                        present="partly" if n == 1 else "yes",
                    )
            if assignment.answer.refused:
                review.set_wrongly_refused(assignment=assignment, labeller=labeller, value=True)
            review.finish_answer_review(assignment=assignment, labeller=labeller)
        doubled = assignments.filter(slot=1, answer__assignments__slot=2).order_by("answer_id")
        for first in doubled[:3]:
            resolve_answer(answer=first.answer, chosen=first, user=self.users["lead"])

    def finalise(self) -> None:
        from django.core.management import call_command

        out = Path(tempfile.mkdtemp(prefix="goldset-predump-bundle-"))
        call_command(
            "export_gold",
            project="demo",
            set_name="demo",
            out=out,
            finalise=True,
            user="admin",
        )

    def post_traces(self) -> None:
        """An API token, and traces sent to the trace intake as the team's system sends them."""
        from django.test import Client
        from labelling.services.traces import create_api_token

        _, raw = create_api_token(
            project=self.project, user=self.users["admin"], name="northwind-rag prod"
        )
        traces = [
            {
                "trace_id": f"intake-{n}",
                "occurred_at": f"2026-01-1{n}T09:30:00+00:00",
                "user": {"id": f"employee-{n}", "groups": ["hr-confidential"] if n else []},
                "question": question,
                "retrieved": [{"doc_id": "hr-pol-009-annual-leave.md", "rank": 1, "score": 3.5}],
                "answer": "" if n == 2 else "According to the policy: …",
                "refused": n == 2,
                "feedback": {"thumb": "down"} if n == 1 else None,
                "system_version": "northwind-rag-1.5",
            }
            for n, question in enumerate(
                ["how many leave days carry over", "carry over leave form?", "salary bands 2026"]
            )
        ]
        response = Client().post(
            "/api/p/demo/traces",
            data=json.dumps({"traces": traces}),
            content_type="application/json",
            headers={"Authorization": f"Bearer {raw}"},
        )
        if response.status_code >= 300:
            raise SystemExit(f"trace intake: {response.status_code} {response.content!r}")

    def sampling(self) -> None:
        from django.core.management import call_command

        call_command(
            "sampling_rule",
            project="demo",
            name="thumbs-down",
            strategy="uniform",
            size=5,
            seed=7,
        )

    def test_users_and_replay(self) -> None:
        from django.core.management import call_command

        call_command("add_test_user", project="demo", name="hr-alice", groups="hr-confidential")
        call_command("add_test_user", project="demo", name="outsider-bob", no_groups=True)
        call_command("add_test_user", project="demo", name="admin-carol", unrestricted=True)
        call_command("replay_permissions", project="demo", set_name="demo", retriever="bm25", k=5)

    def index_health(self) -> None:
        from django.core.management import call_command
        from evaluation.services.health_reports import start_health_report
        from evaluation.services.index_health import set_thresholds

        from corpus.models import Retriever

        set_thresholds(project=self.project, max_stale=0.05)
        call_command("check_index_health", project="demo")
        team = Retriever.objects.get(project=self.project, name="team-search")
        self.wait(start_health_report(retriever=team, user=self.users["admin"]))

    def evaluate(self) -> None:
        from django.core.management import call_command

        from corpus.models import Retriever
        from evaluation.models import GoldSet
        from evaluation.services.evaluation_runs import start_retriever_run

        gold_set = GoldSet.objects.filter(question_set__name="demo").order_by("-number").first()
        # Both built-in retrievers' runs are stored: the CLI cases (tests/data/goldeval_standalone)
        # read them from this dump, which holds no index artifacts to search again.
        for name in ("bm25", "minilm"):
            retriever = Retriever.objects.get(project=self.project, name=name)
            self.wait(
                start_retriever_run(gold_set=gold_set, retriever=retriever, user=self.users["lead"])
            )
        call_command("evaluate_index_builds", project="demo")

    def permissions(self) -> None:
        """A group with some of the app's model permissions and a user with one directly, on
        models the redesign moves (answers, traces, health) and ones it keeps."""
        from django.contrib.auth.models import Group, Permission

        wanted = [
            ("labelling", "view_judgement"),
            ("labelling", "view_answerrun"),
            ("labelling", "change_trace"),
            ("evaluation", "view_goldset"),
            ("evaluation", "view_indexhealthcheck"),
            ("corpus", "view_document"),
        ]
        perms = [
            Permission.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in wanted
        ]
        group = Group.objects.create(name="Gold set auditors")
        group.permissions.set(perms)
        auditor = self.users["lead"]
        auditor.groups.add(group)
        auditor.user_permissions.add(
            Permission.objects.get(content_type__app_label="labelling", codename="view_trace"),
            Permission.objects.get(
                content_type__app_label="corpus", codename="change_indexmanifest"
            ),
        )


def populate() -> None:
    """What users do after `load_demo`, in this process (Django set up on the new database)."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
    import django

    django.setup()
    UserActions().run()


if __name__ == "__main__":
    main()
