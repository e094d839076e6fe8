import json

import pytest

from goldeval.formats.gold import (
    FUZZY_MIN_RATIO,
    GoldFormatError,
    GoldSpan,
    Passage,
    load_gold,
    reanchor,
)


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_gold_jsonl(tmp_path):
    path = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {
                "question_id": "q1",
                "question": "How many  days of leave?",
                "answerable": True,
                "spans": [
                    {
                        "doc_id": "d1",
                        "start": 120,
                        "end": 410,
                        "grade": 2,
                        "version": 3,
                        "quote": "...",
                    },
                    {"doc_id": "d2", "grade": 1},
                ],
                "judged": [{"doc_id": "d1", "start": 0, "end": 500}],
            },
            {"question_id": "q2", "question": "Unanswerable?", "answerable": False, "spans": []},
            {"question_id": "q3", "question": "no flag", "spans": [{"doc_id": "d3", "grade": 0}]},
        ],
    )
    gold = load_gold(path)
    q1 = gold.questions["q1"]
    assert q1.question == "How many  days of leave?"
    assert q1.spans == (
        GoldSpan(doc_id="d1", start=120, end=410, grade=2, version=3, quote="..."),
        GoldSpan(doc_id="d2", start=None, end=None, grade=1),
    )
    assert q1.spans[1].whole_document
    assert q1.judged == (Passage("d1", 0, 500),)
    assert gold.questions["q2"].answerable is False
    # Without the flag, answerability follows the grades.
    assert gold.questions["q3"].answerable is False
    assert gold.corpus is None


def test_trec_qrels(tmp_path):
    path = tmp_path / "qrels.trec"
    path.write_text("# comment\n1 0 d1 2\n1 0 d2 0\n2 0 d3 0\n1 0 d4 1\n")
    gold = load_gold(path)
    q1 = gold.questions["1"]
    assert [(s.doc_id, s.grade, s.start) for s in q1.spans] == [("d1", 2, None), ("d4", 1, None)]
    assert [p.doc_id for p in q1.judged] == ["d1", "d2", "d4"]
    assert q1.answerable
    assert not gold.questions["2"].answerable


def test_beir_qrels_with_header(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n")
    gold = load_gold(path)
    assert [(s.doc_id, s.grade) for s in gold.questions["q1"].spans] == [("d1", 1)]


def test_qrels_keep_grades_above_two(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("7 0 d1 4\n7 0 d2 -1\n")
    q = load_gold(path).questions["7"]
    assert [s.grade for s in q.spans] == [4]
    # -1: in the pool but unjudged, as trec_eval reads it (infAP tells it from outside the pool).
    assert q.judged == (Passage("d1"),)
    assert q.pooled_unjudged == (Passage("d2"),)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("1 0 d1 2\n1 0 d2 1 extra\n", 2, "expected 'qid 0 docid grade'"),
        ("1 0 d1 2\n1 0 d1 high\n", 2, "not an integer"),
        # A grade nDCG's gain (2**grade - 1, a float) cannot hold is the line's error, not a crash.
        ("1 0 d1 2\n1 0 d2 2000\n", 2, "out of range"),
        ("1 0 d1 2\n1 0 d2 -999999999\n", 2, "out of range"),
        ("1 0 d1 2\n1 0 d2 101\n", 2, "out of range"),
        ("1 0 d1 2\n1 0 d2 11\n", 2, "out of range"),
    ],
)
def test_malformed_qrels_names_the_line(tmp_path, text, line, message):
    path = tmp_path / "qrels"
    path.write_text(text)
    with pytest.raises(GoldFormatError) as error:
        load_gold(path)
    assert error.value.line == line
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ('{"question": "no id"}', "question_id"),
        ('{"question_id": "q9", "spans": [{"doc_id": "d", "start": 5, "grade": 1}]}', "both"),
        (
            '{"question_id": "q9", "spans": [{"doc_id": "d", "start": 5, "end": 5, "grade": 1}]}',
            "empty",
        ),
        ('{"question_id": "q9", "spans": [{"doc_id": "d", "grade": "2"}]}', "grade"),
        (
            '{"question_id": "q9", "answerable": false, "spans": [{"doc_id": "d", "grade": 1}]}',
            "unanswerable",
        ),
        ('{"question_id": "q1"}', "already given on line 1"),
        ('{"question_id": "q9", "spans": [{"doc_id": "d", "grade": 2000}]}', "out of range"),
        ('{"question_id": "q9", "spans": [{"doc_id": "d", "grade": -101}]}', "out of range"),
    ],
)
def test_malformed_gold_line_names_file_and_line(tmp_path, line, fragment):
    path = tmp_path / "gold.jsonl"
    path.write_text('{"question_id": "q1", "spans": []}\n\n' + line + "\n")
    with pytest.raises(GoldFormatError) as error:
        load_gold(path)
    assert error.value.line == 3
    assert str(error.value).startswith(f"{path}:3: ")
    assert fragment in str(error.value)


def test_missing_gold_path(tmp_path):
    with pytest.raises(GoldFormatError, match="no such file"):
        load_gold(tmp_path / "nope.jsonl")


def make_bundle(tmp_path, *, questions, documents, manifest=None):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    write_jsonl(bundle / "gold.jsonl", questions)
    write_jsonl(bundle / "corpus.jsonl", documents)
    if manifest is not None:
        (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def test_bundle_with_corpus_and_manifest(tmp_path):
    bundle = make_bundle(
        tmp_path,
        questions=[
            {
                "question_id": "q1",
                "question": "leave?",
                "spans": [
                    {
                        "doc_id": "d1",
                        "start": 0,
                        "end": 5,
                        "grade": 2,
                        "version": 1,
                        "quote": "Staff",
                    }
                ],
            }
        ],
        documents=[
            {
                "doc_id": "d1",
                "version": 1,
                "title": "Leave",
                "text": "Staff get leave.",
                "access_groups": ["hr"],
            },
            {"doc_id": "d2", "version": 4, "title": "Other", "text": "Other text."},
        ],
        manifest={"gold_set": "v1"},
    )
    gold = load_gold(bundle)
    assert gold.manifest == {"gold_set": "v1"}
    assert set(gold.corpus) == {"d1", "d2"}
    assert gold.corpus["d1"].access_groups == ("hr",)
    assert gold.corpus["d2"].version == 4
    assert gold.unanchored == []
    assert gold.questions["q1"].spans[0].start == 0


def test_bundle_without_gold_file(tmp_path):
    with pytest.raises(GoldFormatError, match="no gold.jsonl"):
        load_gold(tmp_path)


def test_bundle_span_past_the_document_end(tmp_path):
    bundle = make_bundle(
        tmp_path,
        questions=[
            {"question_id": "q1", "spans": [{"doc_id": "d1", "start": 0, "end": 99, "grade": 1}]}
        ],
        documents=[{"doc_id": "d1", "text": "short"}],
    )
    with pytest.raises(GoldFormatError, match="past the end"):
        load_gold(bundle)


def test_bundle_span_on_unknown_document(tmp_path):
    bundle = make_bundle(
        tmp_path,
        questions=[{"question_id": "q1", "spans": [{"doc_id": "ghost", "grade": 1}]}],
        documents=[{"doc_id": "d1", "text": "short"}],
    )
    with pytest.raises(GoldFormatError, match="ghost"):
        load_gold(bundle)


OLD_TEXT = "Intro. Staff get 25 days of annual leave. Carry-over needs approval. End."
NEW_TEXT = (
    "New preface paragraph. Intro. Staff get 25 days of annual leave. "
    "Carry-over of up to five days needs approval from the manager. End."
)


def test_bundle_reanchors_spans_to_the_newest_version(tmp_path):
    quote = "Staff get 25 days of annual leave."
    start = OLD_TEXT.index(quote)
    lost_quote = "Sabbaticals are granted after seven years."
    bundle = make_bundle(
        tmp_path,
        questions=[
            {
                "question_id": "q1",
                "spans": [
                    {
                        "doc_id": "d1",
                        "start": start,
                        "end": start + len(quote),
                        "grade": 2,
                        "version": 1,
                        "quote": quote,
                    },
                    {
                        "doc_id": "d1",
                        "start": 0,
                        "end": 6,
                        "grade": 1,
                        "version": 1,
                        "quote": lost_quote[:6],
                    },
                ],
            },
        ],
        documents=[
            {"doc_id": "d1", "version": 1, "text": OLD_TEXT + " " + lost_quote},
            {"doc_id": "d1", "version": 2, "text": NEW_TEXT},
        ],
    )
    gold = load_gold(bundle)
    moved, lost = gold.questions["q1"].spans
    assert gold.corpus["d1"].version == 2
    assert NEW_TEXT[moved.start : moved.end] == quote
    assert moved.version == 2
    assert [(item.question_id, item.span) for item in gold.unanchored] == [("q1", lost)]
    assert gold.unanchored[0].corpus_version == 2


def test_bundle_reanchors_a_whole_word_span_whose_number_changed_onto_the_whole_number(
    tmp_path,
):
    old = "Sports. The company refunds 40 percent of the gym fee."
    new = "Sports, revised. The company refunds 50 percent of the gym fee."
    start = old.index("40 percent")
    bundle = make_bundle(
        tmp_path,
        questions=[
            {
                "question_id": "q1",
                "spans": [
                    {
                        "doc_id": "d1",
                        "start": start,
                        "end": start + len("40 percent"),
                        "grade": 2,
                        "version": 1,
                        "quote": "40 percent",
                    }
                ],
            }
        ],
        documents=[
            {"doc_id": "d1", "version": 1, "text": old},
            {"doc_id": "d1", "version": 2, "text": new},
        ],
    )
    gold = load_gold(bundle)
    (span,) = gold.questions["q1"].spans
    assert new[span.start : span.end] == "50 percent"
    (changed,) = gold.changed_words
    assert (changed.question_id, changed.new_quote, changed.corpus_version) == (
        "q1",
        "50 percent",
        2,
    )
    assert any("[-40-] {+50+} percent" in warning for warning in gold.warnings)


def test_reanchor_exact_prefers_the_occurrence_nearest_the_old_offset():
    text = "leave policy. " * 3
    span = GoldSpan(doc_id="d", start=15, end=27, grade=1, version=1, quote="leave policy")
    assert reanchor(span, text) == (14, 26)
    span_far = GoldSpan(doc_id="d", start=40, end=52, grade=1, version=1, quote="leave policy")
    assert reanchor(span_far, text) == (28, 40)


def test_reanchor_fuzzy_finds_a_lightly_edited_quote():
    quote = "Carry-over of unused leave needs written approval from the line manager."
    edited = "Carry over of unused leave needs written approval from your line manager."
    text = "Preamble text that is unrelated. " + edited + " Closing words here."
    span = GoldSpan(doc_id="d", start=0, end=len(quote), grade=2, version=1, quote=quote)
    found = reanchor(span, text)
    assert found is not None
    start, end = found
    assert abs(start - text.index(edited)) <= 2
    assert abs(end - (text.index(edited) + len(edited))) <= 2


def test_reanchor_gives_up_below_the_ratio():
    quote = "Carry-over of unused leave needs written approval from the line manager."
    text = "Completely different policy wording about pensions and retirement ages."
    span = GoldSpan(doc_id="d", start=0, end=len(quote), grade=2, version=1, quote=quote)
    assert reanchor(span, text) is None
    assert FUZZY_MIN_RATIO == 0.9


def test_reanchor_needs_a_quote():
    span = GoldSpan(doc_id="d", start=0, end=5, grade=2, version=1, quote=None)
    assert reanchor(span, "anything") is None


def test_the_largest_grades_allowed_are_scored(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("1 0 d1 10\n1 0 d2 -10\n")
    gold = load_gold(path)
    assert sorted(span.grade for span in gold.questions["1"].spans) == [10]
