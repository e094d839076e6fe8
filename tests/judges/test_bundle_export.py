"""Finalising a gold set exports the set's AI judgements (issue 35, 5b) in their own file,
ai-judgements.jsonl: the newest graded one per candidate and judge, never in gold.jsonl or the
qrels, listed by the manifest; a restricted document's AI judgement reaches only those who may
see the document (the bundle's own rule: anyone else gets no bundle)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.urls import reverse

from corpus.models import AccessGroup, Document
from evaluation.services import gold_sets
from goldeval.formats.ai_judgements import read_ai_judgements
from goldeval.formats.gold import read_bundle
from judges.models import AIJudgement, Judge, JudgePrompt, JudgingPass
from labelling.models import Assignment, Candidate, Judgement, Pool
from tests.factories import add_documents, labelled_question_set, login

SECRET = "Board memo: the merger with Contoso closes on 3 March."


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lea"),
        "insider": member("lead", username="ina"),
    }


def judge_named(project, name, *versions):
    judge = Judge.objects.create(project=project, name=name, url="http://127.0.0.1/v1", model="m")
    return judge, [
        JudgePrompt.objects.create(judge=judge, version=v, text="{{question}} {{passage}}")
        for v in versions
    ]


def grade(judge, prompt, candidate, value, *, error="", judging_pass=JudgingPass.FIRST):
    return AIJudgement.objects.create(
        judge=judge,
        prompt=prompt,
        candidate=candidate,
        grade=value,
        error=error,
        model=f"model-of-{judge.name}",
        judging_pass=judging_pass,
    )


def candidate(question_set, external_id, doc_id, start, end):
    return Candidate.objects.get(
        pool__question_set=question_set,
        question__external_id=external_id,
        version__document__doc_id=doc_id,
        start=start,
        end=end,
    )


def test_finalising_writes_the_newest_graded_judgement_per_candidate_and_judge(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    without = gold_sets.finalise_gold_set(question_set=question_set, user=people["lead"])
    assert "ai-judgements.jsonl" not in gold_sets.bundle_files(without)
    assert "ai_judgements" not in without.manifest

    qwen, (v1, v2) = judge_named(project, "qwen", 1, 2)
    llama, (l1,) = judge_named(project, "llama", 1)
    leave = candidate(question_set, "q1", "leave", 0, 180)
    vpn = candidate(question_set, "q2", "vpn", 0, 60)
    grade(qwen, v1, leave, 1)
    grade(qwen, v2, leave, 2)  # the newest prompt version wins
    grade(llama, l1, leave, 0)  # another judge: its own line
    grade(qwen, v2, vpn, None, error="not JSON")  # an error is no judgement
    with_ai = gold_sets.finalise_gold_set(question_set=question_set, user=people["lead"])
    files = gold_sets.bundle_files(with_ai)

    lines = [json.loads(line) for line in files["ai-judgements.jsonl"].decode().splitlines()]
    assert lines == [
        {
            "question_id": "q1",
            "doc_id": "leave",
            "version": 1,
            "start": 0,
            "end": 180,
            "grade": 0,
            "judge": "llama",
            "model": "model-of-llama",
            "prompt_version": 1,
        },
        {
            "question_id": "q1",
            "doc_id": "leave",
            "version": 1,
            "start": 0,
            "end": 180,
            "grade": 2,
            "judge": "qwen",
            "model": "model-of-qwen",
            "prompt_version": 2,
        },
    ]
    assert len(read_ai_judgements(files["ai-judgements.jsonl"]).judgements) == 2
    # Never mixed into the gold: gold.jsonl and the qrels are those of the set without them.
    before = gold_sets.bundle_files(without)
    for name in ("gold.jsonl", "qrels.trec", "beir/qrels/test.tsv"):
        assert files[name] == before[name]
    assert read_bundle(files).questions == read_bundle(before).questions
    # The manifest lists the file, with its checksum, and says what it is.
    manifest = with_ai.manifest
    assert "ai-judgements.jsonl" in manifest["files"]
    assert manifest["ai_judgements"] == {
        "file": "ai-judgements.jsonl",
        "judgements": 2,
        "judges": ["llama", "qwen"],
        "in_gold": False,
    }
    assert gold_sets.verify_gold_set(with_ai) == []


def test_a_restricted_documents_ai_judgement_reaches_only_those_who_may_see_it(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    add_documents(project, ("memo", SECRET, ["board"]))
    AccessGroup.objects.get(project=project, name="board").members.add(
        people["insider"], people["ann"]
    )
    memo = Document.objects.get(project=project, doc_id="memo")
    pool = Pool.objects.get(question_set=question_set)
    # A pooled passage of a restricted document, graded by ann (a member) and by the judge.
    memo_passage = Candidate.objects.create(
        pool=pool,
        question=question_set.questions.get(external_id="q2"),
        version=memo.latest_version,
        start=0,
        end=30,
        shuffle_rank=9,
    )
    assignment = Assignment.objects.get(
        pool=pool, question=memo_passage.question, labeller=people["ann"]
    )
    Judgement.objects.create(assignment=assignment, candidate=memo_passage, grade=0)
    judge, (prompt,) = judge_named(project, "qwen", 1)
    grade(judge, prompt, memo_passage, 2)
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["insider"])
    assert b'"doc_id": "memo"' in gold_sets.bundle_files(gold_set)["ai-judgements.jsonl"]
    assert gold_set.documents.filter(pk=memo.pk).exists()

    url = reverse("evaluation:download-gold-set", args=[project.slug, gold_set.pk])
    outsider = login(people["lead"]).get(url)
    assert outsider.status_code == 403 and "Content-Disposition" not in outsider
    assert "memo" not in outsider.content.decode()

    insider = login(people["insider"]).get(url)
    assert insider.status_code == 200
    with zipfile.ZipFile(io.BytesIO(insider.content)) as archive:
        name = next(n for n in archive.namelist() if n.endswith("ai-judgements.jsonl"))
        (line,) = archive.read(name).decode().splitlines()
    assert json.loads(line)["doc_id"] == "memo"
