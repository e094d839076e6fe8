"""A gold set whose ids hold spaces, non-ASCII, a spreadsheet formula or 255 characters is
exported so that our own import_beir, our CLI and the TREC tools read the same ids back; an id
no format carries exactly (older data with a tab) stops finalising with a message naming it."""

import ir_measures
import pytest
from django.core.management import call_command

from corpus.models import Document
from evaluation.models import GoldSet
from evaluation.services import gold_sets
from evaluation.services.evaluation_runs import RunRejected, record_uploaded_run
from goldeval.formats.gold import load_gold, load_qrels
from goldeval.formats.runfiles import trec_id
from labelling.models import ImportedJudgement, Question
from tests.factories import ProjectFactory, labelled_question_set

RENAMED = {"leave": "HR policy.txt", "vpn": "=VPN Überblick 100% " + "v" * 235}


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lea"),
        "admin": member("admin", username="ada"),
    }


def finalised_with_odd_ids(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    for old, new in RENAMED.items():
        Document.objects.filter(project=project, doc_id=old).update(doc_id=new)
    Question.objects.filter(question_set=question_set, external_id="q2").update(
        external_id="+q 2 質問"
    )
    return gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])


def test_our_own_export_imports_back_through_import_beir(project, people, tmp_path):
    assert len(RENAMED["vpn"]) == 255
    gold_set = finalised_with_odd_ids(project, people)
    gold_sets.write_bundle(gold_set=gold_set, folder=tmp_path)
    exported = load_qrels(tmp_path / "beir" / "qrels" / "test.tsv")
    expected = {
        (question_id, doc_id): grade
        for question_id, question in exported.items()
        for doc_id, grade in _grades(question).items()
    }
    assert ("+q 2 質問", RENAMED["vpn"]) in expected

    copy = ProjectFactory(slug="copy")
    call_command("import_beir", str(tmp_path / "beir"), "--project", "copy", "--set", "copy")

    assert set(Document.objects.filter(project=copy).values_list("doc_id", flat=True)) == set(
        RENAMED.values()
    )
    imported = {
        (row.question.external_id, row.document.doc_id): row.grade
        for row in ImportedJudgement.objects.filter(document__project=copy).select_related(
            "question", "document"
        )
    }
    assert imported == expected
    # The TREC qrels say the same, each id spelled as a TREC token, for every TREC reader.
    peers = {
        (qrel.query_id, qrel.doc_id): qrel.relevance
        for qrel in ir_measures.read_trec_qrels(str(tmp_path / "qrels.trec"))
    }
    assert peers == {(trec_id(q), trec_id(d)): grade for (q, d), grade in expected.items()}
    # And the bundle, read by the CLI, holds the ids as they are.
    gold = load_gold(tmp_path)
    assert set(RENAMED.values()) <= set(gold.corpus)
    assert "+q 2 質問" in gold.questions


def _grades(question):
    grades = {passage.doc_id: 0 for passage in question.judged}
    grades.update({span.doc_id: span.grade for span in question.spans})
    return grades


@pytest.mark.parametrize("bad", ["leave\tpolicy", "leave\npolicy", " leave", "leave\u2028x"])
def test_an_id_no_format_carries_exactly_stops_finalising_naming_it(project, people, bad):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    Document.objects.filter(project=project, doc_id="leave").update(doc_id=bad)
    with pytest.raises(gold_sets.GoldSetError) as error:
        gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    assert f"The doc id {bad!r}" in str(error.value)
    assert "rename it" in str(error.value)
    assert not GoldSet.objects.exists()


def test_an_uploaded_trec_run_spelled_as_qrels_trec_matches_the_gold_sets_ids(project, people):
    gold_set = finalised_with_odd_ids(project, people)
    lines = "".join(
        f"{trec_id(q)} Q0 {trec_id(d)} {rank} {10 - rank} t\n"
        for rank, (q, d) in enumerate(
            [("q1", RENAMED["leave"]), ("+q 2 質問", RENAMED["vpn"]), ("q3", RENAMED["leave"])],
            start=1,
        )
    )
    run = record_uploaded_run(
        gold_set=gold_set, name="spelled", file_name="spelled.trec", data=lines.encode()
    )
    assert run.questions == 3  # "+q%202%20%E8%B3%AA%E5%95%8F" is the gold set's "+q 2 質問"
    # A space other than ASCII's inside a field: refused with its line, nothing stored.
    with pytest.raises(RunRejected) as error:
        record_uploaded_run(
            gold_set=gold_set,
            name="ideographic",
            file_name="ideographic.trec",
            data="q1 Q0 leave 1 2 t\rq1 Q0 HR\u3000policy.txt 2 1 t\r".encode(),
        )
    assert "ideographic.trec: line 2: U+3000 (IDEOGRAPHIC SPACE)" in str(error.value)
    assert gold_set.runs.filter(name="ideographic").count() == 0
