"""The demo's production loop (demo/management/commands/_demo_traces.py): synthetic traces
over four weeks, a weekly rule, one sample drawn, pooled and labelled; safe to run again."""

import json
from io import StringIO

from corpus.services import documents, retrieval
from demo.management.commands._demo_traces import TRACES, load_demo_traces
from labelling.models import Assignment, Judgement
from production.models import Sample, Trace
from tests.conftest import wait_for_job
from tests.factories import POLICY_TEXT, MembershipFactory, UserFactory, add_documents


def test_the_demo_gets_traces_and_a_labelled_sample(worker, project, tmp_path):
    users = {"lead": UserFactory(), "labeller1": UserFactory()}
    MembershipFactory(project=project, user=users["lead"], role="lead")
    MembershipFactory(project=project, user=users["labeller1"])
    add_documents(
        project, ("leave.md", POLICY_TEXT), ("travel.md", "Travel costs are paid monthly.")
    )
    scheme = documents.add_chunking_scheme(
        project=project, name="p", strategy="fixed", size=60, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    hints = [
        {
            "question": "how many leave days carry over",
            "answerable": True,
            "answer_doc": "leave.md",
        },
        {"question": "when are travel costs paid", "answerable": True, "answer_doc": "travel.md"},
        {"question": "is there a gym discount", "answerable": False},
    ]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(h) + "\n" for h in hints))

    def wait(job, what):
        assert wait_for_job(job).state == "succeeded", what

    out = StringIO()
    load_demo_traces(project=project, users=users, demo_dir=tmp_path, wait=wait, out=out)
    assert Trace.objects.filter(project=project).count() == TRACES
    sample = Sample.objects.get(project=project)
    assert sample.question_set.name.startswith("production-")
    assignments = Assignment.objects.filter(pool__question_set=sample.question_set)
    assert assignments.exists() and not assignments.filter(completed_at__isnull=True).exists()
    assert Judgement.objects.filter(assignment__in=assignments, grade=2).exists()
    assert "drawn, pooled and labelled" in out.getvalue()

    load_demo_traces(project=project, users=users, demo_dir=tmp_path, wait=wait, out=StringIO())
    assert Trace.objects.filter(project=project).count() == TRACES
    assert Sample.objects.filter(project=project).count() == 1
