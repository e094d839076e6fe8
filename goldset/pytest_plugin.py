"""Loaded by pytest before Django starts (see `addopts` in pyproject.toml).

Tests run with development defaults unless the environment says otherwise; CI sets its own.

`make test` runs the suite in two processes (pytest-xdist). Each process has its own test
database (pytest-django adds the worker's name to it), and here its own artifact folder and its
own Redis database, so its Celery worker takes only its own jobs and its cache and locks are its
own. Tests that stop a service every process shares are marked ``serial`` and run after the rest,
in one process.
"""

import atexit
import os
import shutil
import tempfile
from urllib.parse import urlsplit, urlunsplit

REDIS_DATABASES = 16  # redis-server's default `databases`

os.environ.setdefault("DEBUG", "1")
# Index artifacts of a test session go to a folder of its own (inherited by the real Celery
# worker the suite starts), never into the working tree's artifacts/ folder.
if "GOLDSET_ARTIFACT_DIR" not in os.environ:
    os.environ["GOLDSET_ARTIFACT_DIR"] = tempfile.mkdtemp(prefix="goldset-test-artifacts-")
    atexit.register(shutil.rmtree, os.environ["GOLDSET_ARTIFACT_DIR"], ignore_errors=True)


def worker_redis_url(url: str, worker: int) -> str:
    """``url`` moved to the Redis database ``worker`` places after its own (wrapping at 16)."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base + worker) % REDIS_DATABASES}"))


_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", … in a pytest-xdist worker
if _xdist_worker:
    # The controller's folder is inherited: each worker builds artifacts in a folder of its own
    # inside it (index ids restart in each worker's database, so the paths would collide).
    _folder = os.path.join(os.environ["GOLDSET_ARTIFACT_DIR"], _xdist_worker)
    os.makedirs(_folder, exist_ok=True)
    os.environ["GOLDSET_ARTIFACT_DIR"] = _folder
    if os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = worker_redis_url(
            os.environ["REDIS_URL"], int(_xdist_worker.removeprefix("gw"))
        )
