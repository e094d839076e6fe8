"""A 150,000-line question file through the import page, as a lead sends it: how long the
request takes (it only queues the job), how long the job takes and what its progress showed,
then the same file again (idempotent: nothing added).

Runs on a fresh SQLite file unless DATABASE_URL names a database (for PostgreSQL, an empty one:
it is migrated and written to).

    python benchmarks/question_import.py [--lines 150000]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=150_000)
    args = parser.parse_args()
    if "DATABASE_URL" not in os.environ:
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/questions.sqlite3"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "goldset.settings"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    from corpus import jobs
    from corpus.models import Job
    from corpus.services import projects
    from labelling.models import Question
    from labelling.services import questions

    settings.ALLOWED_HOSTS = ["*"]
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    slug = f"bench-{int(time.time())}"
    project = projects.create_project(slug=slug)
    lead = get_user_model().objects.create_user(username=f"lead-{slug}", password="x" * 12)
    projects.add_member(project=project, user=lead, role="lead")
    client = Client()
    client.force_login(lead)
    data = "".join(
        json.dumps({"question": f"how do I request leave for reason {n} in year {n % 7}?"}) + "\n"
        for n in range(args.lines)
    ).encode()
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(f"{args.lines:,} lines, {len(data) / 2**20:.1f} MB, {engine}")
    queued = []
    jobs.queue = lambda job: queued.append(job.pk)  # the job is run below, in this process
    for attempt in ("first import", "same file again"):
        upload = io.BytesIO(data)
        upload.name = "questions.jsonl"
        started = time.perf_counter()
        response = client.post(
            reverse("labelling:import-questions", args=[slug]), {"set_name": "big", "file": upload}
        )
        request = time.perf_counter() - started
        assert response.status_code == 302 and "/jobs/" in response["Location"], response
        job_id = queued[-1]
        started = time.perf_counter()
        jobs.run(job_id, questions.run_question_import)
        seconds = time.perf_counter() - started
        job = Job.objects.get(pk=job_id)
        print(
            f"{attempt}: request {request * 1000:.0f} ms (queues the job); job {seconds:.1f} s, "
            f"{job.state}: {job.message} ({job.done:,}/{job.total:,})"
        )
    count = Question.objects.filter(question_set__name="big", question_set__project=project).count()
    print(f"questions in the set: {count:,}")


if __name__ == "__main__":
    main()
