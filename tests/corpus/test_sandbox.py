"""Risky formats are parsed in a child process that a time and a memory limit can stop."""

import sys

import pytest

from corpus import sandbox
from corpus.extraction import ExtractionError
from corpus.sandbox import SandboxLimits, extract_isolated
from tests.corpus.test_extraction import make_pdf


def test_result_crosses_the_process_boundary_intact():
    data = make_pdf(["Annual leave is twenty-five days a year.", ""])
    extracted = extract_isolated(filename="leave.pdf", data=data)
    assert "twenty-five days" in extracted.text
    assert extracted.report.pages == 2 and extracted.report.empty_pages == 1
    assert isinstance(extracted.report.flags, tuple)


def test_errors_from_the_child_keep_their_message():
    with pytest.raises(ExtractionError, match="damaged|could not"):
        extract_isolated(filename="broken.pdf", data=b"%PDF-1.7\n this is not a pdf")


def test_a_parser_that_runs_too_long_is_stopped(monkeypatch):
    # A child that never answers stands in for a looping PDF.
    monkeypatch.setattr(sandbox, "_child_command", lambda: ["sleep", "5"])
    with pytest.raises(ExtractionError, match="longer than 0.5 s"):
        extract_isolated(filename="loop.pdf", data=b"%PDF", limits=SandboxLimits(seconds=0.5))


def test_a_parser_that_balloons_is_stopped(monkeypatch):
    # A child that allocates 1 GB stands in for a ballooning PDF.
    monkeypatch.setattr(
        sandbox, "_child_command", lambda: [sys.executable, "-c", "bytearray(2**30)"]
    )
    with pytest.raises(ExtractionError, match="more than 256 MB of memory"):
        extract_isolated(
            filename="big.pdf", data=b"%PDF", limits=SandboxLimits(memory_bytes=256 * 2**20)
        )


def test_text_files_stay_in_process():
    assert extract_isolated(filename="a.txt", data=b"Plain text policy, long enough.").text
