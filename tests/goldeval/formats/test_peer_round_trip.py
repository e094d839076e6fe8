"""Every file of an exported bundle reads back identically through our own readers and through
the tools a RAG team reads it with: pytrec_eval, ir_measures and ranx (TREC files), BEIR's loader
(beir/), whatever the ids hold (spaces, non-ASCII, a spreadsheet formula, 255 characters).
Ids no format carries exactly (a tab, a line break, white space at either end) are refused."""

import csv
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from ranx import Qrels, Run

from goldeval.formats.bundle import BEIR_QRELS, QRELS_FILE, BundleError, CorpusVersion
from goldeval.formats.gold import load_gold
from goldeval.formats.qrels import read_qrels
from goldeval.formats.runfiles import trec_id
from goldeval.formats.textfiles import text_problem
from tests.goldeval.formats.test_bundle import FIXED_NOW, BundleInfo, ChunkSpec, build_bundle

REPO = Path(__file__).resolve().parents[3]

# Every kind of id the issue names, and their neighbours.
DOC_IDS = [
    "HR policy.txt",  # the name of an uploaded file
    "two  spaces and 100% sure",
    "nbsp\u00a0inside",
    "ideographic\u3000space",
    "Überstunden-規程.pdf",
    '=HYPERLINK("http://x","y")',
    "+1",
    "-2",
    "@SUM(A1)",
    'say "hi"',
    '"starts with a quote',
    "d" * 255,
    "long with spaces " + "x" * 238,
    "plain",
]
QUESTION_IDS = ["q 1", "=q2", "質問 3", "q" * 255]
TEXT = "alpha beta gamma delta"


@dataclass
class Span:
    doc_id: str
    version: int
    start: int
    end: int
    grade: int
    quote: str = ""


@dataclass
class Question:
    question_id: str
    text: str
    answerable: bool
    spans: list = field(default_factory=list)
    judged: list = field(default_factory=list)


def questions_over(doc_ids, question_ids=QUESTION_IDS):
    """Each question: some documents graded 2 or 1, the next one judged and not relevant."""
    questions = []
    for number, question_id in enumerate(question_ids):
        mine = doc_ids[number::2]
        spans = [Span(d, 1, 0, 5, 2 if i % 2 == 0 else 1) for i, d in enumerate(mine[:-1])]
        judged = [(mine[-1], 1, 6, 10)]
        questions.append(Question(question_id, f"question {number}", True, spans, judged))
    return questions


def bundle_of(questions, doc_ids):
    return build_bundle(
        info=BundleInfo(
            project="p",
            question_set="s",
            number=1,
            created_by="ada",
            created_at=FIXED_NOW,
            min_span_f1=0.5,
        ),
        questions=questions,
        corpus=[CorpusVersion(d, 1, f"title of {d}", TEXT, "h") for d in doc_ids],
        texts={(d, 1): TEXT for d in doc_ids},
        schemes={"six": ChunkSpec(strategy="fixed", unit="chars", size=6, overlap=0)},
        votes=[],
    )


def expected_grades(questions):
    grades = {}
    for question in questions:
        mine = grades.setdefault(question.question_id, {})
        for doc_id, *_ in question.judged:
            mine.setdefault(doc_id, 0)
        for span in question.spans:
            mine[span.doc_id] = max(mine.get(span.doc_id, 0), span.grade)
    return grades


def tokens(grades):
    return {trec_id(q): {trec_id(d): g for d, g in docs.items()} for q, docs in grades.items()}


@pytest.fixture
def exported(tmp_path):
    questions = questions_over(DOC_IDS)
    bundle = bundle_of(questions, DOC_IDS)
    for name, content in bundle.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    return tmp_path, expected_grades(questions)


def beir_loader(folder: Path):
    """BEIR's GenericDataLoader, as its source reads the three files (the package itself pulls
    in torch): JSON lines for corpus and queries, ``csv`` with tabs for the qrels."""
    corpus, queries, qrels = {}, {}, {}
    with open(folder / "corpus.jsonl", encoding="utf8") as lines:
        for line in lines:
            record = json.loads(line)
            corpus[record.get("_id")] = {"text": record.get("text"), "title": record.get("title")}
    with open(folder / "queries.jsonl", encoding="utf8") as lines:
        for line in lines:
            record = json.loads(line)
            queries[record.get("_id")] = record.get("text")
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as file:
        reader = csv.reader(file, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        for row in reader:
            query_id, corpus_id, score = row[0], row[1], int(row[2])
            qrels.setdefault(query_id, {})[corpus_id] = score
    return corpus, queries, qrels


def test_the_trec_qrels_read_the_same_through_every_reader(exported):
    folder, grades = exported
    path = folder / QRELS_FILE
    expected = tokens(grades)
    ours = read_qrels(path.read_text())
    assert ours.problems == [] and ours.grades == expected
    with open(path) as lines:
        assert pytrec_eval.parse_qrel(lines) == expected
    assert ranx_qrels(path) == expected
    read = {}
    for qrel in ir_measures.read_trec_qrels(str(path)):
        read.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    assert read == expected
    # Every token is the id, percent-encoded where it held white space or "%", nothing else.
    assert "HR%20policy.txt" in expected["q%201"]
    assert trec_id("ideographic\u3000space") == "ideographic%E3%80%80space"
    # A formula-like id is written as it is (goldeval.formats.bundle says why).
    assert '=HYPERLINK("http://x","y")' in expected["=q2"]


def test_chunk_qrels_read_the_same_through_every_reader(exported):
    folder, _ = exported
    path = folder / "qrels-six.trec"
    ours = read_qrels(path.read_text())
    assert ours.problems == [] and ours.grades
    with open(path) as lines:
        assert pytrec_eval.parse_qrel(lines) == ours.grades
    assert ranx_qrels(path) == ours.grades
    assert "HR%20policy.txt#0" in ours.grades["q%201"]


def ranx_qrels(path):
    return {q: dict(docs) for q, docs in Qrels.from_file(str(path), kind="trec").to_dict().items()}


def test_beir_files_hold_the_ids_as_they_are_for_beirs_loader_and_ours(exported):
    folder, grades = exported
    corpus, queries, qrels = beir_loader(folder / "beir")
    assert set(corpus) == set(DOC_IDS)
    assert set(queries) == set(QUESTION_IDS)
    assert qrels == grades  # the ids of the corpus, not a spelling of them
    ours = read_qrels((folder / BEIR_QRELS).read_text())
    assert ours.problems == [] and ours.grades == grades
    assert load_gold(folder / BEIR_QRELS).questions["q 1"].judged


def test_pytrec_eval_scores_a_perfect_run_of_the_beir_folder_one(exported):
    # The failure the issue names: qrels spelled "HR%20policy.txt" while the corpus (and so
    # every retriever) says "HR policy.txt" scored 0.
    folder, _ = exported
    corpus, _, qrels = beir_loader(folder / "beir")
    run = {
        q: {d: float(len(docs) - rank) for rank, d in enumerate(sorted(docs, key=docs.get)[::-1])}
        for q, docs in qrels.items()
    }
    assert all(d in corpus for docs in run.values() for d in docs)
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}).evaluate(run)
    assert {q: s["ndcg"] for q, s in scores.items()} == dict.fromkeys(qrels, 1.0)


def test_the_bundle_reads_back_with_every_id_as_it_is(exported):
    folder, grades = exported
    gold = load_gold(folder)
    assert set(gold.corpus) == set(DOC_IDS)
    assert set(gold.questions) == set(QUESTION_IDS)
    for question_id, docs in grades.items():
        question = gold.questions[question_id]
        relevant = {d: g for d, g in docs.items() if g > 0}
        assert {span.doc_id: span.grade for span in question.spans} == relevant


def cli(*arguments):
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-m", "goldeval", "evaluate", *map(str, arguments)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_trec_run_spelling_ids_as_qrels_trec_does_scores_alike_everywhere(exported):
    """A perfect TREC run names each document by its qrels.trec token: trec_eval's readers
    score it 1 against qrels.trec, and ours gives 1 against qrels.trec and the bundle alike."""
    folder, grades = exported
    lines = []
    for question_id, docs in grades.items():
        ranked = sorted(docs, key=lambda d: -docs[d])
        lines += [
            f"{trec_id(question_id)} Q0 {trec_id(d)} {rank} {100 - rank} sys\n"
            for rank, d in enumerate(ranked, start=1)
        ]
    run_path = folder.parent / "perfect.trec"
    run_path.write_text("".join(lines))
    qrels = tokens(grades)
    with open(run_path) as run_lines:
        run = pytrec_eval.parse_run(run_lines)
    measured = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}).evaluate(run)
    assert {s["ndcg"] for s in measured.values()} == {1.0}
    assert ir_measures.calc_aggregate(
        [ir_measures.nDCG @ 10, ir_measures.R @ 10],
        list(ir_measures.read_trec_qrels(str(folder / QRELS_FILE))),
        list(ir_measures.read_trec_run(str(run_path))),
    ) == {ir_measures.nDCG @ 10: 1.0, ir_measures.R @ 10: 1.0}
    assert {q: dict(d) for q, d in Run.from_file(str(run_path), kind="trec").to_dict().items()} == {
        q: dict(d) for q, d in run.items()
    }
    # A JSONL run holds the ids as they are.
    jsonl_path = folder.parent / "perfect-jsonl.jsonl"
    jsonl_path.write_text(
        "".join(
            json.dumps(
                {
                    "question_id": question_id,
                    "results": [{"doc_id": d} for d in sorted(docs, key=lambda d: -docs[d])],
                },
                ensure_ascii=False,
            )
            + "\n"
            for question_id, docs in grades.items()
        )
    )
    for gold in (folder, folder / QRELS_FILE, folder / BEIR_QRELS):
        result = cli(
            "--gold", gold, "--run", run_path, "--run", jsonl_path, "--no-baseline", "--k", "10"
        )
        assert result.returncode == 0, result.stderr
        for name in ("perfect", "perfect-jsonl"):
            metrics = json.loads(result.stdout)["runs"][name]["metrics"]
            assert metrics["ndcg@10"] == 1.0 and metrics["recall@10"] == 1.0, (gold, name)
        assert "skipped" not in result.stderr


@pytest.mark.parametrize(
    "bad",
    [
        "tab\there",
        "new\nline",
        "carriage\rreturn",
        "form\x0cfeed",
        "unit\x1fseparator",
        "next\x85line",
        "line\u2028separator",
        " leading",
        "trailing ",
        "trailing\u3000",
    ],
)
def test_an_id_no_format_carries_exactly_is_refused_at_the_source_and_at_export(bad):
    assert text_problem(bad, identifier=True)
    for doc_ids, question_ids in (([bad, "plain"], ["q"]), (["plain", "other"], [bad])):
        questions = questions_over(doc_ids, question_ids)
        with pytest.raises(BundleError) as error:
            bundle_of(questions, doc_ids)
        assert repr(bad) in str(error.value)
    # Spaces inside an id, any non-ASCII and a formula are fine.
    for good in DOC_IDS:
        assert text_problem(good, max_length=255, identifier=True) == ""
