"""The grading writes' forms: the values the page sends, and the one message it shows when they
are wrong (the same messages the grading endpoints always gave; see test_grading_views.py)."""

import math

import pytest

from labelling.forms import (
    GradeForm,
    GradingPageForm,
    NoteForm,
    RevisionForm,
    SpanForm,
    UndoForm,
    VerdictForm,
)
from labelling.services.judgements import MAX_SECONDS_PER_ACTION

GRADE_MESSAGE = "A grade is 0 (not relevant), 1 (partly answers) or 2 (fully answers)."


def test_a_grade_form_gives_the_service_its_values():
    form = GradeForm({"grade": "2", "revision": "3", "seconds": "4.5"})
    assert form.is_valid()
    assert form.cleaned_data == {"grade": 2, "revision": 3, "seconds": 4.5, "guideline": None}


@pytest.mark.parametrize("grade", ["3", "-1", "", " 1", "01", "1.0", "two"])
def test_only_0_1_or_2_is_a_grade(grade):
    form = GradeForm({"grade": grade, "revision": "0"})
    assert not form.is_valid() and form.first_problem() == GRADE_MESSAGE


def test_a_missing_grade_is_refused_with_the_same_message():
    form = GradeForm({"revision": "0"})
    assert not form.is_valid() and form.first_problem() == GRADE_MESSAGE


def test_the_grade_is_named_before_the_revision():
    form = GradeForm({"grade": "7", "revision": "x"})
    assert not form.is_valid() and form.first_problem() == GRADE_MESSAGE


@pytest.mark.parametrize("revision", ["x", "", "1.0", "1e3", None])
def test_a_revision_is_a_whole_number(revision):
    data = {"grade": "1"} if revision is None else {"grade": "1", "revision": revision}
    form = GradeForm(data)
    assert not form.is_valid()
    assert form.first_problem() == "The revision must be a whole number."


def test_a_revision_is_read_as_int_reads_it():
    form = RevisionForm({"revision": " 7 "})
    assert form.is_valid() and form.cleaned_data == {"revision": 7, "guideline": None}


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        (None, 0.0),
        ("", 0.0),
        ("abc", 0.0),
        ("-3", 0.0),
        ("nan", 0.0),
        ("inf", 0.0),
        ("12.5", 12.5),
        ("1e9", MAX_SECONDS_PER_ACTION),
    ],
)
def test_odd_seconds_count_as_zero_and_never_refuse_a_write(sent, kept):
    data = (
        {"note": "n", "revision": "1"}
        if sent is None
        else {"note": "n", "revision": "1", "seconds": sent}
    )
    form = NoteForm(data)
    assert form.is_valid()
    assert math.isclose(form.cleaned_data["seconds"], kept)


def test_text_is_passed_on_as_sent():
    form = NoteForm({"note": "  two\r\nlines ", "revision": "1"})
    assert form.is_valid() and form.cleaned_data["note"] == "  two\r\nlines "
    # A quote goes to the service as sent: it is checked against the stored text there.
    form = SpanForm({"version": "1", "start": "0", "end": "3", "quote": "a\x00b", "revision": "1"})
    assert form.is_valid() and form.cleaned_data["quote"] == "a\x00b"


@pytest.mark.parametrize(
    ("form_class", "data", "message"),
    [
        (NoteForm, {"note": "see\x00below", "revision": "1"}, "A note cannot contain a NUL"),
        (
            VerdictForm,
            {"outcome": "cant_tell", "reason": "\x00", "revision": "0"},
            "A reason cannot contain a NUL",
        ),
    ],
)
def test_a_nul_in_stored_text_is_the_forms_problem(form_class, data, message):
    form = form_class(data)
    assert not form.is_valid() and form.first_problem().startswith(message)
    form = VerdictForm({"revision": "0"})
    assert form.is_valid()
    assert form.cleaned_data == {"outcome": "", "reason": "", "revision": 0, "guideline": None}


def test_a_span_form_names_the_first_bad_value_in_the_order_the_page_sends_them():
    form = SpanForm({"version": "v", "start": "a", "end": "", "revision": "x"})
    assert not form.is_valid()
    assert form.first_problem() == "The document version must be a whole number."
    form = SpanForm({"version": "1", "start": "a", "end": "", "revision": "x"})
    assert form.first_problem() == "The span start must be a whole number."
    form = SpanForm({"version": "1", "start": "0", "end": "", "revision": "x"})
    assert form.first_problem() == "The span end must be a whole number."
    form = SpanForm({"version": "1", "start": "0", "end": "9", "revision": "x"})
    assert form.first_problem() == "The revision must be a whole number."


def test_a_span_form_keeps_the_offsets_and_quote():
    form = SpanForm(
        {"version": "4", "start": "0", "end": "9", "quote": " Annual ", "revision": "2"}
    )
    assert form.is_valid()
    assert form.cleaned_data == {
        "version": 4,
        "start": 0,
        "end": 9,
        "quote": " Annual ",
        "revision": 2,
        "seconds": 0.0,
        "guideline": None,
    }


@pytest.mark.parametrize(("sent", "kept"), [(None, None), ("", None), ("0", 0), ("3", 3)])
def test_the_guideline_the_page_showed_is_passed_on(sent, kept):
    data = {"grade": "1", "revision": "0"} | ({} if sent is None else {"guideline": sent})
    form = GradeForm(data)
    assert form.is_valid() and form.cleaned_data["guideline"] == kept
    assert UndoForm({} if sent is None else {"guideline": sent}).is_valid()


@pytest.mark.parametrize("sent", ["v2", "-1", "1.5"])
def test_a_bad_guideline_version_is_refused_after_the_labellers_own_values(sent):
    form = GradeForm({"grade": "1", "revision": "0", "guideline": sent})
    assert not form.is_valid()
    assert form.first_problem() == "The guideline version must be a whole number."
    form = GradeForm({"grade": "9", "revision": "0", "guideline": sent})
    assert form.first_problem() == GRADE_MESSAGE


def test_the_page_form_reads_the_account_and_the_whole_document_flag():
    form = GradingPageForm({"labeller": "12", "whole": "7, 9,x,"})
    assert form.is_valid() and form.cleaned_data == {"labeller": 12, "whole": {7, 9}}
    form = GradingPageForm({})
    assert form.is_valid() and form.cleaned_data == {"labeller": None, "whole": set()}
    assert not GradingPageForm({"labeller": "ana"}).is_valid()
