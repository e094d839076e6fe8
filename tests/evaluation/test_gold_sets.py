"""Finalising gold sets and the export bundle: every file parsed back in its exact format."""

import csv
import hashlib
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Document
from corpus.services import documents
from evaluation.models import GoldSet, GoldSetFile
from evaluation.services import gold_sets
from goldeval.formats.bundle import JUDGEMENT_COLUMNS, spreadsheet_safe
from goldeval.formats.gold import load_corpus_versions, load_gold, load_qrels
from goldeval.text.chunking import ChunkSpec, chunk_spans
from labelling.models import Question
from labelling.services import adjudication
from labelling.services.gold import resolve_gold
from tests.factories import (
    POLICY_TEXT,
    VPN_TEXT,
    DocumentVersionFactory,
    QuestionFactory,
    add_documents,
    labelled_question_set,
)

BUNDLE_FILES = {
    "gold.jsonl",
    "corpus.jsonl",
    "manifest.json",
    "qrels.trec",
    "qrels-fixed-100.trec",
    "qrels-whole.trec",
    "beir/corpus.jsonl",
    "beir/queries.jsonl",
    "beir/qrels/test.tsv",
    "judgements.csv",
    "documents.jsonl",
}


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lea"),
        "admin": member("admin", username="ada"),
    }


@pytest.fixture
def question_set(project, people):
    documents.add_chunking_scheme(
        project=project, name="fixed-100", strategy="fixed", unit="chars", size=100, overlap=0
    )
    documents.add_chunking_scheme(project=project, name="whole", strategy="document")
    return labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )


@pytest.fixture
def bundle(question_set, people, tmp_path):
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    gold_sets.write_bundle(gold_set=gold_set, folder=tmp_path)
    return gold_set, tmp_path


def test_finalise_is_blocked_while_items_are_unresolved_and_lists_them(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], resolve=False
    )
    QuestionFactory(question_set=question_set, external_id="q9", text="never pooled")
    with pytest.raises(gold_sets.FinaliseBlocked) as blocked:
        gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    described = [item.describe() for item in blocked.value.unresolved]
    assert described == [
        "q1 (pool p) — vpn [0–50): grades differ (0 vs 1)",
        "q9 — question: not labelled: no pool has assigned it to a labeller",
    ]
    assert "2 items are unresolved" in str(blocked.value)
    assert not GoldSet.objects.exists() and not GoldSetFile.objects.exists()


def test_gold_sets_are_numbered_and_a_finalised_one_never_changes(question_set, people):
    first = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    files_before = gold_sets.bundle_files(first)
    # Labels change after v1: v2 carries them, v1 stays as it was.
    q2 = Question.objects.get(question_set=question_set, external_id="q2")
    q2.text = "vpn client install, edited later"
    q2.save()
    second = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    assert [first.label, second.label] == ["v1", "v2"]
    assert (first.number, second.number) == (1, 2)
    first.refresh_from_db()
    assert gold_sets.bundle_files(first) == files_before
    assert first.checksum != second.checksum
    assert gold_sets.newest_gold_set(question_set) == second
    assert json.loads(gold_sets.bundle_files(second)["manifest.json"])["gold_set"] == "v2"
    assert gold_sets.verify_gold_set(first) == [] and gold_sets.verify_gold_set(second) == []


def test_manifest_names_every_file_with_its_checksum(bundle, people):
    gold_set, folder = bundle
    files = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}
    assert files == BUNDLE_FILES
    manifest_bytes = (folder / "manifest.json").read_bytes()
    assert hashlib.sha256(manifest_bytes).hexdigest() == gold_set.checksum
    manifest = json.loads(manifest_bytes)
    assert manifest == gold_set.manifest
    assert set(manifest["files"]) == BUNDLE_FILES - {"manifest.json"}
    for name, entry in manifest["files"].items():
        content = (folder / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(content).hexdigest(), "bytes": len(content)}
    assert manifest["project"] == gold_set.question_set.project.slug
    assert (manifest["question_set"], manifest["gold_set"], manifest["number"]) == ("hr", "v1", 1)
    assert manifest["created_by"] == "ada"
    assert (manifest["questions"], manifest["answerable"], manifest["unanswerable"]) == (3, 2, 1)
    assert (manifest["spans"], manifest["judged_passages"], manifest["votes"]) == (3, 5, 12)
    assert [s["name"] for s in manifest["chunking_schemes"]] == ["fixed-100", "whole"]
    # The fingerprint is reproducible from corpus.jsonl alone.
    lines = sorted(
        f"{doc.doc_id}\t{doc.version}\t{hashlib.sha256(doc.text.encode()).hexdigest()}\n"
        for versions in load_corpus_versions(folder / "corpus.jsonl").values()
        for doc in versions
    )
    fingerprint = hashlib.sha256("".join(lines).encode()).hexdigest()
    assert manifest["corpus"] == {"documents": 3, "versions": 3, "fingerprint": fingerprint}


def test_a_tampered_file_is_caught_by_verify(bundle):
    gold_set, _ = bundle
    GoldSetFile.objects.filter(gold_set=gold_set, name="qrels.trec").update(content=b"q1 0 x 2\n")
    assert gold_sets.verify_gold_set(gold_set) == [
        "qrels.trec does not match its SHA-256 in the manifest"
    ]


def test_gold_jsonl_has_the_exact_line_format_and_loads_back(bundle):
    _, folder = bundle
    lines = [json.loads(line) for line in (folder / "gold.jsonl").read_text().splitlines()]
    assert (
        lines[0]
        == {
            "question_id": "q1",
            "question": "how many days carry over?? \u00e9t\u00e9  ",  # verbatim
            "answerable": True,
            "spans": [
                # ann [0, 100) and bob [20, 120) agreed: their union, grade 2
                {
                    "doc_id": "leave",
                    "start": 0,
                    "end": 120,
                    "grade": 2,
                    "version": 1,
                    "quote": POLICY_TEXT[:120],
                },
            ],
            "judged": [
                {"doc_id": "leave", "start": 0, "end": 180, "version": 1},
                {"doc_id": "vpn", "start": 0, "end": 50, "version": 1},
            ],
        }
    )
    assert [list(line) for line in lines] == [
        ["question_id", "question", "answerable", "spans", "judged"]
    ] * 3
    assert [(s["start"], s["end"], s["grade"]) for s in lines[1]["spans"]] == [
        (0, 40, 2),
        (100, 150, 1),
    ]
    assert lines[2]["answerable"] is False and lines[2]["spans"] == []

    gold = load_gold(folder)  # the CLI's own loader, bundle folder ...
    assert list(gold.questions) == ["q1", "q2", "q3"]
    assert gold.questions["q1"].question == "how many days carry over?? \u00e9t\u00e9  "
    assert gold.questions["q1"].spans[0].quote == POLICY_TEXT[:120]
    assert not gold.questions["q3"].answerable
    assert set(gold.corpus) == {"leave", "vpn", "salaries"} and gold.unanchored == []
    assert list(load_gold(folder / "gold.jsonl").questions) == ["q1", "q2", "q3"]  # ... and file


def test_corpus_carries_span_versions_and_the_newest_searchable_version_of_each_document(
    question_set, people, project, tmp_path
):
    # vpn changes after labelling: the spans keep pointing at v1, runs search v2.
    add_documents(project, ("vpn", "Intro line.\n\n" + VPN_TEXT))
    # A document held back by its extraction report is not searchable: not in the corpus.
    held = DocumentVersionFactory(
        document__project=project, document__doc_id="scan", quality_flagged=True
    )
    assert Document.objects.get(doc_id="scan").latest_version_id == held.pk
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    gold_sets.write_bundle(gold_set=gold_set, folder=tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert [(r["doc_id"], r["version"]) for r in rows] == [
        ("leave", 1),
        ("salaries", 1),
        ("vpn", 1),
        ("vpn", 2),
    ]
    assert [list(r) for r in rows][0] == ["doc_id", "version", "title", "text", "access_groups"]
    assert rows[1]["access_groups"] == ["hr-confidential"] and rows[0]["access_groups"] == []
    assert rows[3]["text"] == "Intro line.\n\n" + VPN_TEXT
    # documents.jsonl (the index health checks) names every document, the held-back one too.
    states = [json.loads(line) for line in (tmp_path / "documents.jsonl").read_text().splitlines()]
    assert [(r["doc_id"], r["version"], r["searchable"]) for r in states] == [
        ("leave", 1, True),
        ("salaries", 1, True),
        ("scan", 1, False),
        ("vpn", 2, True),
    ]
    assert set(gold_set.documents.values_list("doc_id", flat=True)) == {
        "leave",
        "salaries",
        "scan",
        "vpn",
    }
    # The CLI's loader moves the v1 spans onto v2 by their quotes.
    gold = load_gold(tmp_path)
    span = gold.questions["q2"].spans[0]
    assert (span.version, span.start, span.end) == (2, 13, 53)
    assert len(gold.questions["q2"].spans) == 2 and gold.unanchored == []
    assert gold_set.manifest["corpus"]["versions"] == 4


def test_document_level_qrels_take_the_highest_grade_and_judged_documents_as_zero(bundle):
    _, folder = bundle
    expected = "q1 0 leave 2\nq1 0 vpn 0\nq2 0 vpn 2\nq3 0 leave 0\n"
    assert (folder / "qrels.trec").read_text() == expected
    questions = load_qrels(folder / "qrels.trec")
    assert [s.doc_id for s in questions["q1"].spans] == ["leave"]
    assert not questions["q3"].answerable


def test_chunk_level_qrels_grade_each_chunk_by_the_spans_it_overlaps(bundle):
    _, folder = bundle
    assert (folder / "qrels-fixed-100.trec").read_text() == (
        "q1 0 leave#0 2\nq1 0 leave#1 2\nq1 0 vpn#0 0\nq2 0 vpn#0 2\nq2 0 vpn#1 1\nq3 0 leave#2 0\n"
    )
    # One whole-document chunk holds both q2 spans: it takes the higher grade.
    assert (folder / "qrels-whole.trec").read_text() == (
        "q1 0 leave#0 2\nq1 0 vpn#0 0\nq2 0 vpn#0 2\nq3 0 leave#0 0\n"
    )
    # The same rule checked against the chunker itself.
    spec = ChunkSpec(strategy="fixed", unit="chars", size=100, overlap=0)
    chunks = {"leave": chunk_spans(POLICY_TEXT, spec), "vpn": chunk_spans(VPN_TEXT, spec)}
    spans = {"q1": [("leave", 0, 120, 2)], "q2": [("vpn", 0, 40, 2), ("vpn", 100, 150, 1)]}
    for line in (folder / "qrels-fixed-100.trec").read_text().splitlines():
        qid, _, chunk_id, grade = line.split()
        doc_id, ordinal = chunk_id.split("#")
        start, end = chunks[doc_id][int(ordinal)]
        overlapping = [
            g for d, s, e, g in spans.get(qid, []) if d == doc_id and s < end and start < e
        ]
        assert int(grade) == max(overlapping, default=0), line
    assert load_qrels(folder / "qrels-fixed-100.trec")["q2"].spans[1].doc_id == "vpn#1"


def test_beir_folder(bundle):
    _, folder = bundle
    corpus = [json.loads(line) for line in (folder / "beir/corpus.jsonl").read_text().splitlines()]
    assert [(d["_id"], d["title"]) for d in corpus] == [
        ("leave", "leave"),
        ("salaries", "salaries"),
        ("vpn", "vpn"),
    ]
    assert corpus[0]["text"] == POLICY_TEXT
    queries = [
        json.loads(line) for line in (folder / "beir/queries.jsonl").read_text().splitlines()
    ]
    assert queries[0] == {"_id": "q1", "text": "how many days carry over?? \u00e9t\u00e9  "}
    assert (folder / "beir/qrels/test.tsv").read_text() == (
        "query-id\tcorpus-id\tscore\nq1\tleave\t2\nq1\tvpn\t0\nq2\tvpn\t2\nq3\tleave\t0\n"
    )
    assert load_qrels(folder / "beir/qrels/test.tsv")["q2"].spans[0].grade == 2


def test_judgements_csv_keeps_every_vote_and_defuses_formulas(bundle):
    _, folder = bundle
    text = (folder / "judgements.csv").read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == JUDGEMENT_COLUMNS
    kinds = [row["kind"] for row in rows]
    assert kinds.count("judgement") == 7 and kinds.count("resolution") == 1
    assert kinds.count("verdict") == 4  # q3's explicit one and three finished without marking
    note = next(
        r
        for r in rows
        if r["labeller"] == "ann" and r["doc_id"] == "vpn" and r["question_id"] == "q1"
    )
    assert note["note"] == "'=cmd()" and note["grade"] == "0" and note["spans"] == "[]"
    resolution = next(r for r in rows if r["kind"] == "resolution")
    assert (resolution["labeller"], resolution["grade"], resolution["note"]) == (
        "lea",
        "0",
        "'+not relevant",
    )
    bob = next(r for r in rows if r["labeller"] == "bob" and r["doc_id"] == "leave")
    assert json.loads(bob["spans"]) == [[20, 120]]
    verdict = next(r for r in rows if r["kind"] == "verdict" and r["question_id"] == "q3")
    assert (verdict["outcome"], verdict["note"]) == ("unanswerable", "no such perk")
    # No cell anywhere starts like a formula.
    for row in csv.reader(io.StringIO(text)):
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row)


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=cmd()", "'=cmd()"),
        ("+1", "'+1"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("plain = text", "plain = text"),
        (None, ""),
        (2, "2"),
    ],
)
def test_spreadsheet_cells_are_escaped(value, cell):
    assert spreadsheet_safe(value) == cell


def test_ids_with_whitespace_are_percent_encoded_in_trec_files(project, people, tmp_path):
    labelled_question_set(project, ann=people["ann"], bob=people["bob"], lead=people["lead"])
    Document.objects.filter(doc_id="vpn").update(doc_id="vpn guide 100%")
    question_set = Question.objects.get(external_id="q1").question_set
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    gold_sets.write_bundle(gold_set=gold_set, folder=tmp_path)
    assert "q1 0 vpn%20guide%20100%25 0\n" in (tmp_path / "qrels.trec").read_text()
    assert load_gold(tmp_path).questions["q2"].spans[0].doc_id == "vpn guide 100%"


def test_a_question_without_candidates_takes_its_verdict(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    from django.utils import timezone

    from labelling.models import Assignment, Pool, Verdict

    q4 = QuestionFactory(question_set=question_set, external_id="q4", text="nothing found")
    assignment = Assignment.objects.create(
        pool=Pool.objects.get(question_set=question_set),
        question=q4,
        labeller=people["ann"],
        assigned_at=timezone.now(),
    )
    with pytest.raises(gold_sets.FinaliseBlocked, match="1 item is unresolved"):
        gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    Verdict.objects.create(assignment=assignment, outcome="unanswerable")
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    last = gold_sets.bundle_files(gold_set)["gold.jsonl"].decode().splitlines()[-1]
    assert json.loads(last) == {
        "question_id": "q4",
        "question": "nothing found",
        "answerable": False,
        "spans": [],
        "judged": [],
    }


def test_export_gold_command(question_set, project, tmp_path, people):
    slug = project.slug
    with pytest.raises(CommandError, match="no gold set yet: run again with --finalise") as error:
        call_command("export_gold", "--project", slug, "--set", "hr", "--out", str(tmp_path / "a"))
    assert error.value.returncode == 2
    call_command(
        "export_gold",
        "--project",
        slug,
        "--set",
        "hr",
        "--out",
        str(tmp_path / "a"),
        "--finalise",
        "--user",
        "ada",
    )
    gold_set = GoldSet.objects.get()
    assert gold_set.created_by == people["admin"]
    assert load_gold(tmp_path / "a").manifest["gold_set"] == "v1"
    call_command("export_gold", "--project", slug, "--set", "hr", "--out", str(tmp_path / "b"))
    assert GoldSet.objects.count() == 1  # without --finalise: the newest, nothing new
    assert (tmp_path / "b" / "manifest.json").read_bytes() == (
        tmp_path / "a" / "manifest.json"
    ).read_bytes()
    with pytest.raises(CommandError, match="not an admin") as error:
        call_command(
            "export_gold",
            "--project",
            slug,
            "--set",
            "hr",
            "--out",
            str(tmp_path / "c"),
            "--finalise",
            "--user",
            "lea",
        )
    assert error.value.returncode == 2 and GoldSet.objects.count() == 1


def test_export_gold_exits_2_listing_what_blocks_finalising(project, people, tmp_path):
    labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], resolve=False
    )
    with pytest.raises(CommandError) as error:
        call_command(
            "export_gold",
            "--project",
            project.slug,
            "--set",
            "hr",
            "--out",
            str(tmp_path),
            "--finalise",
        )
    assert error.value.returncode == 2
    assert "Cannot finalise: 1 item is unresolved" in str(error.value)
    assert "q1 (pool p) — vpn [0–50): grades differ (0 vs 1)" in str(error.value)
    assert not GoldSet.objects.exists() and not any(tmp_path.iterdir())


def test_resolving_after_a_block_lets_finalise_through(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], resolve=False
    )
    with pytest.raises(gold_sets.FinaliseBlocked):
        gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    entry = resolve_gold(question_set=question_set).unresolved[0]
    adjudication.resolve(
        pool=entry.pool,
        question=entry.question,
        candidate=entry.candidate,
        user=people["lead"],
        grade=1,
        spans=[(0, 26)],
    )
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    gold = json.loads(gold_sets.bundle_files(gold_set)["gold.jsonl"].decode().splitlines()[0])
    assert {
        "doc_id": "vpn",
        "start": 0,
        "end": 26,
        "grade": 1,
        "version": 1,
        "quote": VPN_TEXT[:26],
    } in gold["spans"]
    assert set(gold_set.documents.values_list("doc_id", flat=True)) == {"leave", "vpn"}


@pytest.mark.parametrize(
    "name", ["qrels.trec", "qrels-fixed-100.trec", "qrels-whole.trec", "beir/qrels/test.tsv"]
)
def test_the_bundle_qrels_read_by_ir_measures_and_ranx_give_the_cli_figures(
    bundle, tmp_path, capsys, name
):
    import ir_measures
    import pandas
    import ranx

    from goldeval.cli import main

    _, folder = bundle
    path = folder / name
    if name.endswith(".tsv"):
        frame = pandas.read_csv(path, sep="\t", dtype=str).astype(object)
        frame["score"] = frame["score"].astype(int)
        qrels_ranx = ranx.Qrels.from_df(frame, "query-id", "corpus-id", "score")
        qrels_ir = frame.rename(
            columns={"query-id": "query_id", "corpus-id": "doc_id", "score": "relevance"}
        )
    else:
        qrels_ranx = ranx.Qrels.from_file(str(path), kind="trec")
        qrels_ir = list(ir_measures.read_trec_qrels(str(path)))
    judged = qrels_ranx.to_dict()
    # Every judged document of each question, one unjudged first, distinct scores (no ties).
    run = {
        q: {"unjudged": 10.0, **{d: 9.0 - i for i, d in enumerate(sorted(docs, reverse=True))}}
        for q, docs in judged.items()
    }
    run_path = tmp_path / "oracle.trec"
    run_path.write_text(
        "".join(f"{q} Q0 {d} 1 {s} sys\n" for q, docs in run.items() for d, s in docs.items())
    )
    # ir_measures and ranx average over every qrels question: trec_eval -c's convention.
    status = main(
        [
            "evaluate",
            "--gold",
            str(path),
            "--run",
            str(run_path),
            "--compat",
            "trec_eval-c",
            "--k",
            "1,3",
            "--mrr-cutoff",
            "1000",
            "--no-baseline",
            "--per-question",
        ]
    )
    assert status == 0
    ours = json.loads(capsys.readouterr().out)["runs"]["oracle"]
    ir = ir_measures.calc_aggregate(
        [ir_measures.nDCG @ 3, ir_measures.R @ 3, ir_measures.P @ 1, ir_measures.RR],
        qrels_ir,
        run,
    )
    assert ours["metrics"]["ndcg@3"] == pytest.approx(ir[ir_measures.nDCG @ 3])
    assert ours["metrics"]["recall@3"] == pytest.approx(ir[ir_measures.R @ 3])
    assert ours["metrics"]["precision@1"] == pytest.approx(ir[ir_measures.P @ 1])
    assert ours["metrics"]["mrr@1000"] == pytest.approx(ir[ir_measures.RR])
    per_query = ranx.evaluate(
        qrels_ranx, ranx.Run(run), ["ndcg@3", "recall@3", "precision@1", "mrr"], return_mean=False
    )
    question_ids = list(qrels_ranx.keys())
    for metric, ranx_name in (
        ("ndcg@3", "ndcg@3"),
        ("recall@3", "recall@3"),
        ("precision@1", "precision@1"),
        ("mrr@1000", "mrr"),
    ):
        mine = [ours["per_question"][q][metric] for q in question_ids]
        assert mine == pytest.approx(list(per_query[ranx_name])), metric
