"""Loaded by pytest before Django starts (see `addopts` in pyproject.toml).

Tests run with development defaults unless the environment says otherwise; CI sets its own.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("DEBUG", "1")
# Index artifacts of a test session go to a folder of its own (inherited by the real Celery
# worker the suite starts), never into the working tree's artifacts/ folder.
if "GOLDSET_ARTIFACT_DIR" not in os.environ:
    os.environ["GOLDSET_ARTIFACT_DIR"] = tempfile.mkdtemp(prefix="goldset-test-artifacts-")
    atexit.register(shutil.rmtree, os.environ["GOLDSET_ARTIFACT_DIR"], ignore_errors=True)
