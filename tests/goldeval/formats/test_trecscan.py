"""The compiled TREC scanner (goldeval/formats/_trecscan.c) reads a file exactly as the Python
readers do, or leaves it to them: on random texts built from every character that matters
(field and line separators, comments, signs, exponents, underscores, infinities, the spaces
trec_eval does not split on, non-ASCII), both paths give the same rankings, grades, lines and
problems."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldeval.formats import qrels as qrels_module
from goldeval.formats import runfiles
from goldeval.formats.qrels import read_qrels
from goldeval.formats.runfiles import read_run_file

scanner = runfiles.trecscan


def test_the_scanner_is_built_where_ci_runs():
    # `make install` compiles it; without it every file is read in Python (slower, same).
    if os.environ.get("CI") and scanner is None:
        pytest.fail("goldeval.formats._trecscan was not built: run `make install`")


needs_scanner = pytest.mark.skipif(scanner is None, reason="the C scanner is not built here")


def _run_as_read(text: str, monkeypatch, *, compiled: bool, **options):
    monkeypatch.setattr(runfiles, "trecscan", scanner if compiled else None)
    read = read_run_file(text, **options)
    return (
        read.format,
        [(p.line, p.message) for p in read.problems],
        {
            question: (list(r.passages), list(r.scores), list(r.lines), r.line, r.repeats)
            for question, r in read.rankings.items()
        },
    )


def _qrels_as_read(text: str, monkeypatch, *, compiled: bool):
    monkeypatch.setattr(qrels_module, "trecscan", scanner if compiled else None)
    read = read_qrels(text)
    return (read.grades, read.lines, read.duplicates, read.problems, read.trec_layout)


tokens = st.sampled_from(
    ["q1", "q2", "q10", "Q0", "d1", "d2", "d3", "#", "#x", "1", "2", "0", "-1", "+2", "11"]
    + ["-11", "02", "1.5", "1e3", "-2.5e-3", "1_0", "inf", "-inf", "nan", "1e999", "3.5e38"]
    + ["0x1", ".5", "5.", "é", "d\u00e9", "run", "tag"]
)
separators = st.sampled_from([" ", "  ", "\t", "\v", "\f", " \t ", "\x1c", "\u3000", "\xa0"])
line_ends = st.sampled_from(["\n", "\r\n", "\r", "\n\n"])


@st.composite
def lines(draw, fields: int):
    count = draw(st.integers(min_value=0, max_value=fields + 1))
    words = [draw(tokens) for _ in range(count)]
    text = ""
    for word in words:
        text += draw(separators) + word
    return text + draw(st.sampled_from(["", " ", "\t"]))


@st.composite
def run_line(draw):
    if draw(st.booleans()):  # mostly well-formed lines, so the fast path is taken often
        question = draw(st.sampled_from(["q1", "q2", "q10", "#c"]))
        doc = draw(st.sampled_from(["d1", "d2", "d3", "d4"]))
        score = draw(st.sampled_from(["1", "2.5", "-3", "1e2", "2.5", "0", "7"]))
        return f"{question} Q0 {doc} 1 {score} run"
    return draw(lines(6))


@st.composite
def qrels_line(draw):
    if draw(st.booleans()):
        question = draw(st.sampled_from(["q1", "q2", "q10", "#c"]))
        doc = draw(st.sampled_from(["d1", "d2", "d3", "d4"]))
        grade = draw(st.sampled_from(["0", "1", "2", "-1", "+1", "02", "11"]))
        return f"{question} 0 {doc} {grade}"
    return draw(lines(4))


def _text(draw, line_strategy) -> str:
    parts = draw(st.lists(line_strategy, max_size=12))
    return "".join(part + draw(line_ends) for part in parts) + draw(st.sampled_from(["", "q1"]))


@needs_scanner
@settings(max_examples=250, deadline=None)
@given(
    data=st.data(),
    ties=st.sampled_from(["trec_eval", "file"]),
    scores=st.sampled_from(["double", "float32"]),
)
def test_a_run_reads_the_same_either_way(data, ties, scores):
    text = _text(data.draw, run_line())
    with pytest.MonkeyPatch.context() as monkeypatch:
        compiled = _run_as_read(text, monkeypatch, compiled=True, ties=ties, scores=scores)
        python = _run_as_read(text, monkeypatch, compiled=False, ties=ties, scores=scores)
    assert compiled == python


@needs_scanner
@settings(max_examples=250, deadline=None)
@given(data=st.data())
def test_qrels_read_the_same_either_way(data):
    text = _text(data.draw, qrels_line())
    with pytest.MonkeyPatch.context() as monkeypatch:
        compiled = _qrels_as_read(text, monkeypatch, compiled=True)
        python = _qrels_as_read(text, monkeypatch, compiled=False)
    assert compiled == python


@needs_scanner
def test_the_common_case_is_read_in_c():
    run = "q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2 1.5 r\r\n# note\nq2 Q0 d1 1 1 r\rq1 Q0 d3 3 0.5 r\n"
    scanned = scanner.scan_run(run)
    assert {q: (d, list(s), list(n), first) for q, (d, s, n, first) in scanned.items()} == {
        "q1": (["d1", "d2", "d3"], [2.5, 1.5, 0.5], [1, 2, 5], 1),
        "q2": (["d1"], [1.0], [4], 4),
    }
    grades, lines, trec_layout = scanner.scan_qrels("q1 0 d1 2\nq1 0 d2 0\n\nq2 0 d1 -1\n")
    assert grades == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": -1}}
    assert lines == {"q1": {"d1": 1, "d2": 2}, "q2": {"d1": 4}}
    assert trec_layout is True


@needs_scanner
@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 d1 1 2.5\n",  # five fields: a problem the Python reader words
        "q1 Q0 d1 1 nan r\n",
        "q1 Q0 d1 1 1_0 r\n",  # float() reads it; strtod would not
        "q1 Q0 d\u00e9 1 1 r\n",  # not ASCII
        "q1 Q0 d1\x1c 1 1 r\n",  # a separator trec_eval does not split on
        "q1 Q0 d1 1 4e38 r\n",
    ],
)
def test_anything_unusual_in_a_run_is_left_to_python(text):
    assert scanner.scan_run(text) is None


@needs_scanner
@pytest.mark.parametrize(
    "text",
    [
        "q1\t0\td1\t1\n",  # tabs: BEIR's cells or TREC, the Python reader decides
        "query-id corpus-id score\nq1 d1 1\n",  # BEIR's three columns
        "q1 0 d1 1\nq1 0 d1 1\n",  # a repeat, reported as a duplicate
        "q1 0 d1 11\n",
        "q1 0 d1 one\n",
    ],
)
def test_anything_unusual_in_qrels_is_left_to_python(text):
    assert scanner.scan_qrels(text) is None
