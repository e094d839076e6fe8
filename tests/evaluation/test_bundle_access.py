"""Gold-set downloads and pages check every document a bundle names, not only the texts of
corpus.jsonl: a restricted document that is judged but not searchable (held back by the quality
check, superseded by a flagged version, a hidden near-duplicate) appears in the qrels, the
``judged`` lists and judgements.csv (with labellers' notes), so it refuses them too."""

from __future__ import annotations

import importlib
import io
import re
import zipfile

import pytest
from django.urls import reverse
from django.utils import timezone

from corpus.models import AccessGroup, Document, DuplicateGroup
from evaluation.models import EvaluationRun, GoldSet
from evaluation.services import gold_sets
from labelling.models import Assignment, Candidate, Judgement, Pool
from tests.factories import POLICY_TEXT, add_documents, labelled_question_set, login

MEMO = "Board memo: the merger with Contoso closes on 3 March. Staff are told on 10 March."
NOTE = "memo-note: merger date, do not share"


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lea"),
        "admin": member("admin", username="ada"),
        "insider": member("lead", username="ina"),
    }


def judged_restricted(project, people, how: str) -> GoldSet:
    """The demo-like set, plus q3 (ann alone) judging a passage of "memo", a document of the
    group "board" that is not searchable in the way ``how`` says."""
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    add_documents(project, ("memo", MEMO, ["board"]))
    memo = Document.objects.get(project=project, doc_id="memo")
    AccessGroup.objects.get(project=project, name="board").members.add(
        people["insider"], people["ann"]
    )
    judged_version = memo.latest_version
    if how == "flagged":
        memo.latest_version.quality_flagged = True
        memo.latest_version.save()
    elif how == "superseded":
        add_documents(project, ("memo", MEMO + " Updated: postponed."))
        memo.refresh_from_db()
        memo.latest_version.quality_flagged = True  # the newest version is held back
        memo.latest_version.save()
    elif how == "duplicate":
        add_documents(project, ("memo-public", POLICY_TEXT))
        twin = Document.objects.get(project=project, doc_id="memo-public")
        group = DuplicateGroup.objects.create(project=project, representative=twin)
        Document.objects.filter(pk__in=[memo.pk, twin.pk]).update(duplicate_group=group)
    assert not Document.objects.filter(pk=memo.pk).searchable().exists()
    pool = Pool.objects.get(question_set=question_set)
    q3 = question_set.questions.get(external_id="q3")
    candidate = Candidate.objects.create(
        pool=pool, question=q3, version=judged_version, start=0, end=40, shuffle_rank=9
    )
    assignment = Assignment.objects.get(pool=pool, question=q3, labeller=people["ann"])
    Judgement.objects.create(assignment=assignment, candidate=candidate, grade=0, note=NOTE)
    Assignment.objects.filter(pk=assignment.pk).update(completed_at=timezone.now())
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["insider"])
    EvaluationRun.objects.create(
        gold_set=gold_set,
        name="r",
        source="upload",
        file_name="r.jsonl",
        content=b"{}\n",
        sha256="0" * 64,
    )
    return gold_set


def bundle(gold_set) -> dict[str, bytes]:
    return gold_sets.bundle_files(gold_set)


@pytest.mark.parametrize("how", ["flagged", "superseded", "duplicate"])
def test_a_judged_restricted_document_outside_corpus_jsonl_refuses_every_download(
    project, people, how
):
    gold_set = judged_restricted(project, people, how)
    files = bundle(gold_set)
    # The memo is named in the bundle although its text is not in corpus.jsonl.
    assert b'"doc_id": "memo"' not in files["corpus.jsonl"]
    assert b"memo" in files["qrels.trec"] and b"memo" in files["judgements.csv"]
    assert NOTE.encode() in files["judgements.csv"]
    assert b'"doc_id": "memo"' in files["gold.jsonl"]

    slug, pk = project.slug, gold_set.pk
    run = EvaluationRun.objects.get(gold_set=gold_set)
    for outsider in (people["lead"], people["admin"]):
        client = login(outsider)
        download = client.get(reverse("evaluation:download-gold-set", args=[slug, pk]))
        assert download.status_code == 403 and "Content-Disposition" not in download
        body = download.content.decode()
        assert "names documents that an access group hides from you" in body
        assert "memo" not in body and "1 document" not in body
        run_file = client.get(reverse("evaluation:download-run", args=[slug, pk, run.pk]))
        assert run_file.status_code == 403
        page = client.get(reverse("evaluation:show-gold-set", args=[slug, pk])).content.decode()
        assert "Download the bundle" not in page and "access group hides from you" in page
        evaluation = client.get(reverse("evaluation:show-evaluation", args=[slug]))
        assert evaluation.status_code == 403
        for secret in ("memo", "merger", NOTE):
            assert secret not in page and secret not in evaluation.content.decode()

    # A member of the group gets the whole bundle, the memo's vote and note included.
    insider = login(people["insider"])
    download = insider.get(reverse("evaluation:download-gold-set", args=[slug, pk]))
    assert download.status_code == 200
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        csv_name = next(n for n in archive.namelist() if n.endswith("judgements.csv"))
        assert NOTE.encode() in archive.read(csv_name)


def test_the_refusal_is_the_same_however_many_documents_are_hidden(project, people):
    gold_set = judged_restricted(project, people, "flagged")
    client = login(people["lead"])
    url = reverse("evaluation:download-gold-set", args=[project.slug, gold_set.pk])
    csrf = re.compile(rb'"X-CSRFToken": "[^"]+"|name="csrfmiddlewaretoken" value="[^"]+"')
    one = csrf.sub(b"", client.get(url).content)
    add_documents(project, ("minutes", MEMO + " Minutes.", ["board"]))
    gold_set.documents.add(Document.objects.get(doc_id="minutes"))
    GoldSet.objects.filter(pk=gold_set.pk).update(document_count=gold_set.document_count + 1)
    assert csrf.sub(b"", client.get(url).content) == one


def test_gold_sets_finalised_before_record_every_document_once_migrated(project, people):
    gold_set = judged_restricted(project, people, "flagged")
    memo = Document.objects.get(doc_id="memo")
    # What finalising recorded before: the documents of corpus.jsonl only.
    gold_set.documents.remove(memo)
    GoldSet.objects.filter(pk=gold_set.pk).update(document_count=gold_set.documents.count())
    client = login(people["lead"])
    url = reverse("evaluation:download-gold-set", args=[project.slug, gold_set.pk])
    assert client.get(url).status_code == 200  # the hole this issue closes
    migration = importlib.import_module("evaluation.migrations.0003_issue12_every_bundle_document")
    from django.apps import apps

    migration.record_every_document(apps, None)
    assert gold_set.documents.filter(pk=memo.pk).exists()
    assert client.get(url).status_code == 403
