import json
import math
from types import SimpleNamespace

import pytest

from goldeval.formats.gold import CorpusDocument, Gold, GoldQuestion, Passage
from goldeval.formats.runfiles import MAX_SCORE, SCORES, jsonl_run_line, read_run_file
from goldeval.formats.runs import RunFormatError, check_run_against_gold, load_run, read_run


def test_jsonl_run_keeps_list_order(tmp_path):
    path = tmp_path / "dense.jsonl"
    path.write_text(
        json.dumps(
            {
                "question_id": "q1",
                "results": [
                    {"doc_id": "d2", "start": 0, "end": 500, "score": 1.0},
                    {"doc_id": "d1", "score": 3.2},
                ],
                "refused": False,
            }
        )
        + "\n\n"
        + json.dumps({"question_id": "q2", "results": [], "refused": True})
        + "\n"
    )
    run = load_run(path)
    assert run.name == "dense"
    # The list order is the ranking, even against the scores.
    assert run.rankings["q1"].passages == [Passage("d2", 0, 500), Passage("d1")]
    assert run.rankings["q1"].refused is False
    assert run.rankings["q2"].refused is True
    assert run.rankings["q2"].line == 3
    assert run.reports_refusals


def test_jsonl_run_without_refusals(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"question_id": "q1", "results": [{"doc_id": "d"}]}\n')
    run = load_run(path, name="mine")
    assert run.name == "mine"
    assert not run.reports_refusals


def test_comments_and_crlf_line_ends(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(
        b'# made by hand\r\n{"question_id": "q1", "results": [{"doc_id": "d\xe2\x80\xa8x"}]}\r\n'
    )
    run = load_run(path)
    assert run.rankings["q1"].passages == [Passage("d\u2028x")]
    assert run.rankings["q1"].line == 2


def test_trec_run_sorts_by_score_with_ties_in_file_order_when_asked(tmp_path):
    path = tmp_path / "bm25.trec"
    path.write_text(
        "q1 Q0 a 1 1.5 tag\n"
        "q1 Q0 b 2 2.0 tag\n"
        "# a comment\n"
        "q1 Q0 c 3 1.5 tag\n"
        "q1 Q0 d 4 1.5 tag trailing junk\n"
        "q2 Q0 e 1 -3 tag\n"
    )
    run = load_run(path, ties="file")
    assert [p.doc_id for p in run.rankings["q1"].passages] == ["b", "a", "c", "d"]
    assert run.ties_rule == "TREC runs: score descending, ties in file order"
    # By default, trec_eval's order: equal scores by docno descending.
    assert [p.doc_id for p in load_run(path).rankings["q1"].passages] == ["b", "d", "c", "a"]
    assert run.rankings["q1"].passages[0] == Passage("b", None, None)
    assert run.rankings["q2"].line == 6
    assert not run.reports_refusals


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('{"question_id": "q1", "results": []}\n{"question_id": "q1"}\n', 2, "already given"),
        ('{"question_id": "q1", "results": []}\n{"results": []}\n', 2, "question_id"),
        ('{"question_id": "q1", "results": []}\n[1, 2]\n', 2, "JSON object"),
        ('{"question_id": "q1", "results": []}\n{"question_id": "q2",\n', 2, "not valid JSON"),
        (
            '{"question_id": "q1", "results": [{"doc_id": "d", "start": 9, "end": 3}]}\n',
            1,
            "0 <= start < end",
        ),
        ('{"question_id": "q1", "results": [{"start": 0, "end": 3}]}\n', 1, "doc_id"),
        ('{"question_id": "q1", "results": [], "refused": "yes"}\n', 1, "refused"),
        ("q1 Q0 a 1 1.5 tag\nq1 Q0 b 2\n", 2, "qid Q0 docid rank score tag"),
        ("q1 Q0 a 1 1.5 tag\nq1 Q0 b 2 high tag\n", 2, "not a number"),
    ],
)
def test_malformed_runs_name_the_line(tmp_path, text, line, fragment):
    path = tmp_path / "run.txt"
    path.write_text(text)
    with pytest.raises(RunFormatError) as error:
        load_run(path)
    assert error.value.line == line
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert fragment in str(error.value)


def test_missing_run_file(tmp_path):
    with pytest.raises(RunFormatError, match="no such file"):
        load_run(tmp_path / "absent.jsonl")


def gold_with_corpus(corpus):
    question = GoldQuestion(question_id="q1", question="?", answerable=False, spans=())
    return Gold(questions={"q1": question}, corpus=corpus)


def test_unknown_question_id_is_reported_with_its_line(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"question_id": "q1", "results": []}\n{"question_id": "q7", "results": []}\n')
    with pytest.raises(RunFormatError) as error:
        check_run_against_gold(load_run(path), gold_with_corpus(None), strict=True)
    assert error.value.line == 2
    assert "'q7' is not in the gold set" in str(error.value)


def test_unknown_questions_are_skipped_and_named_without_strict(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"question_id": "q1", "results": []}\n{"question_id": "q7", "results": []}\n')
    run = load_run(path)
    check_run_against_gold(run, gold_with_corpus(None))
    assert list(run.rankings) == ["q1"]
    assert run.skipped == ["q7"]
    assert run.warnings() == [f"{path}: 1 question(s) not in the gold set skipped ('q7')"]


def test_offsets_past_a_known_document_are_refused(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"question_id": "q1", "results": [{"doc_id": "d", "start": 0, "end": 5},'
        ' {"doc_id": "unknown", "start": 0, "end": 900}, {"doc_id": "d", "start": 2, "end": 12}]}\n'
    )
    corpus = {"d": CorpusDocument(doc_id="d", version=1, title="", text="ten chars!")}
    with pytest.raises(RunFormatError) as error:
        check_run_against_gold(load_run(path), gold_with_corpus(corpus))
    assert error.value.line == 1
    assert "ends at 12" in str(error.value)
    # Without corpus text nothing can be checked.
    check_run_against_gold(load_run(path), gold_with_corpus(None))


def test_a_questions_lines_may_be_anywhere_in_a_trec_run(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 3 s\nq2 Q0 b 1 1 s\n\n# note\nq1 Q0 c 2 5 s\nq1 Q0 d 3 1 s\n")
    run = load_run(path)
    assert [p.doc_id for p in run.rankings["q1"].passages] == ["c", "a", "d"]
    assert (run.rankings["q1"].line, run.rankings["q2"].line) == (1, 2)


def test_repeated_trec_lines_keep_the_best_and_are_counted(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 1 s\nq1 Q0 b 2 2 s\nq1 Q0 a 3 3 s\nq1 Q0 a 4 3 s\n")
    for ties in ("trec_eval", "file"):
        run = load_run(path, ties=ties)
        assert [p.doc_id for p in run.rankings["q1"].passages] == ["a", "b"]
        assert run.repeats == 2


def test_a_trec_rankings_passages_read_like_a_list():
    from goldeval.formats.runfiles import WholeDocuments

    passages = WholeDocuments(["a", "b", "c"])
    expected = [Passage("a"), Passage("b"), Passage("c")]
    assert len(passages) == 3 and list(passages) == expected
    assert passages[1] == Passage("b", None, None) and passages[-1] == Passage("c")
    assert passages[:2] == expected[:2] and passages == expected and expected == passages
    assert passages == WholeDocuments(("a", "b", "c")) and passages != expected[:2]
    assert set(passages) == set(expected)


# --- scores a run can hold -------------------------------------------------------------------


@pytest.mark.parametrize(
    "score",
    ["NaN", "Infinity", "-Infinity", "1e400", "3.5e38", "-3.5e38", "9" * 400, '"0.5"', "true"],
)
def test_a_jsonl_score_no_reader_can_hold_is_refused_with_its_line(score):
    data = (
        '{"question_id": "q1", "results": [{"doc_id": "a", "score": 1}]}\n'
        '{"question_id": "q2", "results": [{"doc_id": "a", "score": ' + score + "}]}\n"
    ).encode()
    with pytest.raises(RunFormatError) as caught:
        read_run(data, name="r", source="r.jsonl")
    assert caught.value.line == 2 and "result 1 (a) has a score" in caught.value.message


@pytest.mark.parametrize("score", ["nan", "inf", "-Infinity", "1e400", "3.5e38", "-1e39"])
def test_a_trec_score_no_reader_can_hold_is_refused_with_its_line(score):
    data = f"q1 Q0 a 1 2.0 r\nq1 Q0 b 2 {score} r\n".encode()
    with pytest.raises(RunFormatError) as caught:
        read_run(data, name="r", source="r.trec")
    assert caught.value.line == 2 and repr(score) in caught.value.message


@pytest.mark.parametrize("scores", SCORES)
def test_the_largest_score_allowed_reads_in_both_precisions(scores):
    data = f"q1 Q0 a 1 {MAX_SCORE!r} r\nq1 Q0 b 2 {-MAX_SCORE!r} r\n".encode()
    run = read_run(data, name="r", scores=scores)
    assert [p.doc_id for p in run.rankings["q1"].passages] == ["a", "b"]
    parsed = read_run_file(data, scores=scores)
    assert all(math.isfinite(s) for s in parsed.rankings["q1"].scores)


def test_the_writer_never_writes_a_score_its_reader_refuses():
    hits = [
        SimpleNamespace(doc_id="a", start=0, end=5, score=float("nan")),
        SimpleNamespace(doc_id="b", start=None, end=None, score=float("inf")),
        SimpleNamespace(doc_id="c", start=None, end=None, score=1e39),
        SimpleNamespace(doc_id="d", start=None, end=None, score=0.25),
    ]
    line = jsonl_run_line(question_id="q1", results=hits)
    run = read_run(line.encode(), name="r")  # reads back, in the same order
    assert [p.doc_id for p in run.rankings["q1"].passages] == ["a", "b", "c", "d"]
    assert [r["score"] for r in json.loads(line)["results"]] == [None, None, None, 0.25]


@pytest.mark.parametrize("bad_id", ["a\\u0000b", "a\\ud800b"])
def test_an_id_no_column_or_message_can_hold_is_refused_without_being_quoted(bad_id):
    for line in (
        '{"question_id": "q1", "results": [{"doc_id": "' + bad_id + '"}]}',
        '{"question_id": "' + bad_id + '", "results": [{"doc_id": "a"}]}',
    ):
        with pytest.raises(RunFormatError) as caught:
            read_run(("\n" + line + "\n").encode(), name="r", source="r.jsonl")
        message = caught.value.message
        assert caught.value.line == 2
        assert "\x00" not in message and "\ud800" not in message
        assert "NUL" in message or "surrogate" in message
