"""Library chatter stays out of the console: onnxruntime's quantizer logs through the root
logger itself (a hundred lines each time the encoder is prepared); the settings' filter drops
its records below ERROR, and nothing else."""

import logging

import pytest

from goldset.log_filters import QuietLibraries

QUANTIZER = "/venv/lib/python3.11/site-packages/onnxruntime/quantization/quantize.py"


def record(name: str, level: int, pathname: str) -> logging.LogRecord:
    return logging.LogRecord(name, level, pathname, 1, "a message", None, None)


@pytest.mark.parametrize(
    ("name", "level", "pathname", "kept"),
    [
        ("root", logging.INFO, QUANTIZER, False),
        ("root", logging.WARNING, QUANTIZER, False),
        ("root", logging.ERROR, QUANTIZER, True),  # its errors still show
        ("root", logging.WARNING, "/srv/goldset/corpus/jobs.py", True),
        ("corpus.jobs", logging.INFO, "/srv/goldset/corpus/jobs.py", True),
        # A logger of its own is quieted by its level, if ever: not by this filter.
        ("onnxruntime", logging.WARNING, QUANTIZER, True),
    ],
)
def test_only_the_quantizers_root_records_below_error_are_dropped(name, level, pathname, kept):
    assert QuietLibraries().filter(record(name, level, pathname)) is kept


def test_the_root_logger_has_the_filter():
    assert any(isinstance(f, QuietLibraries) for f in logging.getLogger().filters)
