"""Every reader reads a file exactly as the peers read it, or refuses it with FILE:LINE: line
endings (LF, CRLF, old-Mac CR) read alike by every format, a space other than ASCII's inside a
TREC field refused (the peers disagree on it), grades out of range refused with their line."""

import io
import json

import ir_measures
import pytest

from goldeval.formats.answer_gold import read_answer_gold
from goldeval.formats.answers import read_answer_file
from goldeval.formats.gold import GoldFormatError, load_gold, read_bundle
from goldeval.formats.manifests import read_manifest
from goldeval.formats.qrels import read_qrels
from goldeval.formats.questions import read_questions
from goldeval.formats.runfiles import read_run_file
from goldeval.formats.traces import read_trace_lines, read_trace_stream
from tests.goldeval.formats.test_answer_gold import GRADES, REFERENCE
from tests.goldeval.formats.test_manifests import HASH, HEADER
from tests.goldeval.formats.test_traces import TRACE

# Every character Python's str.split() splits on besides trec_eval's ASCII white space.
OTHER_SPACES = [
    "\x1c",
    "\x1d",
    "\x1e",
    "\x1f",
    "\x85",
    "\xa0",
    "\u1680",
    *(chr(c) for c in range(0x2000, 0x200B)),
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
]


def test_the_list_is_every_space_python_splits_on_that_trec_eval_does_not():
    found = [chr(c) for c in range(0x110000) if chr(c).isspace() and chr(c) not in " \t\n\r\v\f"]
    assert found == OTHER_SPACES


@pytest.mark.parametrize("space", OTHER_SPACES, ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("column", [0, 2, 4])
def test_another_space_inside_a_trec_run_field_is_refused_with_its_line(space, column):
    fields = ["q1", "Q0", "HR policy", "1", "9.5", "tag"]
    fields[column] = {0: f"q{space}1", 2: f"HR{space}policy", 4: f"9{space}5"}[column]
    text = "q1 Q0 first 1 10 tag\n" + " ".join(fields) + "\nq1 Q0 third 3 8 tag\n"
    read = read_run_file(text)
    assert [p.line for p in read.problems] == [2]
    assert f"U+{ord(space):04X}" in read.problems[0].message
    # What the peers do with the same line: refuse it (trec_eval would keep the field whole).
    with pytest.raises(ValueError):
        list(ir_measures.read_trec_run(text))


@pytest.mark.parametrize("space", OTHER_SPACES, ids=lambda c: f"U+{ord(c):04X}")
def test_another_space_inside_a_trec_qrels_field_is_refused_with_its_line(space):
    read = read_qrels(f"q1 0 d1 1\nq1 0 HR{space}policy 2\n")
    assert [p.line for p in read.problems] == [2]
    assert read.grades == {"q1": {"d1": 1}}


@pytest.mark.parametrize("space", [" ", "\u00a0", "\u3000", "\x1f"])
def test_a_tab_separated_trec_qrels_line_is_split_as_every_trec_reader_splits_it(space):
    text = f"q1\t0\td1\t1\nq1\t0\tHR{space}policy\t2\n"
    read = read_qrels(text)
    assert [p.line for p in read.problems] == [2]
    assert read.grades == {"q1": {"d1": 1}}
    with pytest.raises(ValueError):  # the peers refuse the line too
        list(ir_measures.read_trec_qrels(text))
    assert [q.doc_id for q in ir_measures.read_trec_qrels("q1\t0\td1\t1\n")] == ["d1"]


def test_other_spaces_around_the_fields_are_read_as_every_reader_reads_them():
    # Leading and trailing white space is dropped by every reader alike.
    assert read_qrels("q1 0 d1 1\u00a0\n").grades == {"q1": {"d1": 1}}
    assert read_run_file("\u3000q1 Q0 d1 1 2 t\n").problems == []
    # A BEIR TSV cell holds any space: it is no separator there.
    assert read_qrels("q1\tHR\u3000policy\t1\n").grades == {"q1": {"HR\u3000policy": 1}}


# --- line endings -----------------------------------------------------------------------------


def jsonl(*records):
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


GOLD_LINES = jsonl(
    {"question_id": "q1", "spans": [{"doc_id": "d1", "start": 0, "end": 4, "grade": 2}]},
    {"question_id": "q2", "answerable": False},
)
CORPUS_LINES = jsonl({"doc_id": "d1", "version": 1, "text": "text of d1"})


def read_everything(kind: str, text: str):
    """What one reader makes of ``text``, comparable between two line endings."""
    if kind == "trec run":
        read = read_run_file(text)
        return read.rankings, read.problems
    if kind == "jsonl run":
        read = read_run_file(text)
        return read.rankings, read.problems
    if kind in ("trec qrels", "beir qrels"):
        read = read_qrels(text)
        return read.grades, read.lines, read.problems
    if kind == "bundle":
        gold = read_bundle({"gold.jsonl": text.encode(), "corpus.jsonl": CORPUS_LINES.encode()})
        return gold.questions, gold.corpus
    if kind == "answers":
        read = read_answer_file(text)
        return read.answers, read.problems
    if kind == "answer gold":
        read = read_answer_gold(text)
        return read.references, read.grades
    if kind in ("jsonl questions", "csv questions", "pasted questions"):
        read = read_questions(
            data=text, format=kind.split()[0].replace("pasted", "lines"), name="f"
        )
        return read.rows, read.problems
    if kind in ("jsonl manifest", "csv manifest"):
        read = read_manifest(text)
        return read.rows, read.problems
    if kind == "traces":
        return list(read_trace_lines(text))
    if kind == "streamed traces":  # a binary file, as import_traces reads it: split at "\n" only
        return list(read_trace_stream(io.BytesIO(text.encode())))
    raise AssertionError(kind)


FILES = {
    "trec run": "q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\nbad line\nq2 Q0 d1 1 1 t\n",
    "jsonl run": jsonl(
        {"question_id": "q1", "results": [{"doc_id": "d1"}, {"doc_id": "d2", "start": 0, "end": 3}]}
    )
    + "{not json\n"
    + jsonl({"question_id": "q2", "results": []}),
    "trec qrels": "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 x\nq2 0 d1 1\n",
    "beir qrels": "query-id\tcorpus-id\tscore\nq1\tHR policy.txt\t1\nq1\td2\tx\nq2\td1\t0\n",
    "bundle": GOLD_LINES,
    "answers": jsonl(
        {"question_id": "q1", "answer": "Staff get 25 days.", "refused": False},
        {"question_id": "q2", "answer": "", "refused": True},
    )
    + "[1]\n",
    "answer gold": jsonl(REFERENCE, GRADES),
    "jsonl questions": jsonl({"id": "q1", "question": "how many days?"}) + "{bad\n",
    "csv questions": 'id,question\nq1,how many days?\nq2,"quoted, with a comma"\nq3,\n',
    "pasted questions": "first question\nsecond question\n\nthird\n",
    "jsonl manifest": jsonl(
        {
            "doc_id": "d1",
            "version": 1,
            "indexed_at": "2026-11-30T08:15:00Z",
            "embedding_model": "m",
            "dimension": 3,
        }
    )
    + "{bad\n",
    "csv manifest": HEADER
    + f"policy,2,{HASH},0,120,2026-11-30T08:15:00Z,minilm,r1,384\n"
    + "vpn,x,,,,2026-11-29 10:00:00,minilm,r1,384\n",
    "traces": jsonl(TRACE) + "{bad\n" + jsonl({**TRACE, "trace_id": "t-2"}),
    "streamed traces": jsonl(TRACE) + "{bad\n\n" + jsonl({**TRACE, "trace_id": "t-2"}),
}


@pytest.mark.parametrize("kind", FILES)
@pytest.mark.parametrize("ending", ["\r", "\r\n"], ids=["old Mac CR", "CRLF"])
def test_every_format_reads_cr_and_crlf_line_endings_as_lines(kind, ending):
    lf = FILES[kind]
    assert "\r" not in lf
    as_lf = read_everything(kind, lf)
    assert as_lf == read_everything(kind, lf.replace("\n", ending))
    # Something was read (and problems, where the sample has one, keep their line).
    assert any(as_lf)


def test_a_cr_file_is_lines_for_the_peers_too(tmp_path):
    path = tmp_path / "qrels.trec"
    path.write_bytes(b"q1 0 d1 2\rq1 0 d2 1\rq2 0 d3 1\r")
    peers = {(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(path))}
    ours = {(q.question_id, q.doc_id, q.grade) for q in read_qrels(path.read_text()).qrels}
    assert ours == peers and len(ours) == 3
    assert load_gold(path).questions.keys() == {"q1", "q2"}


# --- grades -----------------------------------------------------------------------------------


@pytest.mark.parametrize("grade", ["5000", "11", "-11", "1.5", "NaN", "1e3", "²", "\u0661", "+-1"])
@pytest.mark.parametrize("layout", ["q1 0 d{n} {g}", "q1\td{n}\t{g}"], ids=["trec", "beir"])
def test_a_qrels_grade_out_of_range_or_not_whole_is_refused_with_its_line(grade, layout, tmp_path):
    path = tmp_path / "qrels"
    lines = [layout.format(n=1, g="1"), layout.format(n=2, g=grade), layout.format(n=3, g="0")]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(GoldFormatError) as error:
        load_gold(path)
    assert error.value.line == 2
    assert str(error.value).startswith(f"{path}:2: ")


@pytest.mark.parametrize("grade", ["10", "-10", "0", "+2", "-2"])
def test_qrels_grades_from_minus_ten_to_ten_are_read(grade):
    assert read_qrels(f"q1 0 d1 {grade}\n").grades == {"q1": {"d1": int(grade)}}


@pytest.mark.parametrize("grade", [5000, 11, -1, 1.5, True, "2", None, 2**70])
def test_a_gold_span_grade_out_of_range_or_not_whole_is_refused_with_its_line(grade, tmp_path):
    path = tmp_path / "gold.jsonl"
    bad = {"question_id": "q2", "spans": [{"doc_id": "d", "grade": grade}]}
    path.write_text(jsonl({"question_id": "q1", "spans": [{"doc_id": "d", "grade": 2}]}, bad))
    with pytest.raises(GoldFormatError) as error:
        load_gold(path)
    assert error.value.line == 2
    assert str(error.value).startswith(f"{path}:2: ")
    assert "grade" in str(error.value)
