"""Pool bias at finalise (issue 34): the bundle's pool.jsonl and reusability.json from the
pools' provenance, the gold set page's table, and the command reading the bundle alone."""

import json

import pytest
from django.urls import reverse

from corpus.models import AccessGroup, Retriever
from evaluation.services import gold_sets
from goldeval.cli import main
from labelling.models import Candidate, Provenance
from tests.factories import labelled_question_set, login


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lea"),
        "outsider": member("lead", username="otto"),
        "admin": member("admin", username="ada"),
    }


@pytest.fixture
def gold_set(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )
    group = AccessGroup.objects.get(project=project, name="hr-confidential")
    group.members.add(people["lead"], people["admin"])
    # bm25 pooled q1's two candidates and q2's first; dense q1's leave, q2's second and q3's.
    pooled = {
        "bm25": [("q1", "leave", 1), ("q1", "vpn", 2), ("q2", "vpn", 1, 0)],
        "dense": [("q1", "leave", 1), ("q2", "vpn", 1, 100), ("q3", "leave", 1)],
    }
    for name, rows in pooled.items():
        retriever = Retriever.objects.create(project=project, name=name, kind="bm25")
        for question_id, doc_id, rank, *start in rows:
            candidate = Candidate.objects.get(
                question__external_id=question_id,
                version__document__doc_id=doc_id,
                **({"start": start[0]} if start else {}),
            )
            Provenance.objects.create(
                candidate=candidate,
                retriever=retriever,
                rank=rank,
                start=candidate.start,
                end=candidate.end,
            )
    return gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])


def test_the_bundle_carries_the_pool_and_its_leave_one_out_report(gold_set):
    files = gold_sets.bundle_files(gold_set)
    assert {"pool.jsonl", "reusability.json"} <= set(files)
    assert {"pool.jsonl", "reusability.json"} <= set(gold_set.manifest["files"])
    lines = [json.loads(line) for line in files["pool.jsonl"].decode().splitlines()]
    assert [(line["question_id"], line["retriever"]) for line in lines] == [
        ("q1", "bm25"),
        ("q1", "dense"),
        ("q2", "bm25"),
        ("q2", "dense"),
        ("q3", "dense"),
    ]
    report = json.loads(files["reusability.json"])
    bm25, dense = report["retrievers"]
    # bm25 alone: q1's vpn candidate, q2's [0, 40) span and its candidate; dense alone: q2's
    # [100, 150) span and its candidate, and q3's candidate.
    assert (bm25["name"], bm25["unique_items"]) == ("bm25", 3)
    assert [(u["question_id"], u["start"]) for u in bm25["unique_relevant_units"]] == [("q2", 0)]
    assert (dense["name"], dense["unique_items"]) == ("dense", 3)
    assert [(u["question_id"], u["start"]) for u in dense["unique_relevant_units"]] == [("q2", 100)]


def test_the_command_on_the_bundle_alone_gives_the_same_report(gold_set, tmp_path, capsys):
    gold_sets.write_bundle(gold_set=gold_set, folder=tmp_path / "bundle")
    assert main(["reusability", "--gold", str(tmp_path / "bundle"), "--format", "json"]) == 0
    ours = json.loads(capsys.readouterr().out)
    assert ours == json.loads(gold_sets.bundle_files(gold_set)["reusability.json"])


def test_the_gold_set_page_shows_the_table_to_those_it_hides_nothing_from(
    client, project, people, gold_set
):
    url = reverse("evaluation:show-gold-set", args=[project.slug, gold_set.pk])
    page = login(people["lead"]).get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "<h2>Pool bias</h2>" in html
    assert '<th scope="row">bm25</th><td>3</td><td>1</td>' in html
    # A lead outside hr-confidential gets the refusal, and no pool figures.
    page = login(people["outsider"]).get(url)
    assert "Pool bias" not in page.content.decode()
    # Labellers never see a gold set page.
    assert login(people["ann"]).get(url).status_code == 403


def test_a_run_checked_against_the_bundle_pool(gold_set, tmp_path, capsys):
    gold_sets.write_bundle(gold_set=gold_set, folder=tmp_path / "bundle")
    run = tmp_path / "new.jsonl"
    run.write_text(
        '{"question_id": "q1", "results": [{"doc_id": "leave", "start": 300, "end": 340}]}\n'
    )
    bundle = str(tmp_path / "bundle")
    assert main(["reusability", "--gold", bundle, "--run", str(run), "--format", "json"]) == 0
    (checked,) = json.loads(capsys.readouterr().out)["runs"]
    assert (checked["name"], checked["unjudged@10"]) == ("new", 0.05)  # 1 of 10, q1 and q2
    # A checked run may not take a pooled retriever's name.
    assert main(["reusability", "--gold", bundle, "--run", f"bm25={run}"]) == 2
    assert "the name 'bm25' is a pooled retriever's" in capsys.readouterr().err
