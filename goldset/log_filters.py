"""Logging filters of the console handler (settings.LOGGING).

onnxruntime's quantizer logs its progress through the root logger (``logging.info(...)``, not a
logger of its own: "Quantization parameters for tensor … not specified", "Ignore MatMul due
to non constant B", "Please consider to run pre-processing"), a hundred lines each time the
encoder is prepared (corpus/onnx_encoder.py). Being the root logger's, they cannot be quieted
by a logger level without quieting everything; this filter drops the records below ERROR that
come from its files. Its errors still show.
"""

from __future__ import annotations

import logging
import os

QUIET_PACKAGES = ("onnxruntime",)


class QuietLibraries(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR or record.name != "root":
            return True
        parts = os.path.normpath(record.pathname).split(os.sep)
        return not any(package in parts for package in QUIET_PACKAGES)
