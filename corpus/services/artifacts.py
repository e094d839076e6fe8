"""Index artifacts in Django storage: written streamed, read back only when the checksum holds.

An index artifact is one file in the ``artifacts`` storage (``STORAGES["artifacts"]``: a
``FileSystemStorage`` folder by default, any Django storage backend, such as django-storages'
S3, in production); the database keeps its name, size and SHA-256. PostgreSQL's ``bytea`` caps a
value at 1 GB, which an embedding index of a million passages (1.5 GB of float32) exceeds, and a
value read from the database is held whole in memory at least twice (driver buffer and bytes).

Writing goes through a temporary file (``FILE_UPLOAD_TEMP_DIR`` or the system's): the caller's
writer streams into it, it is hashed in 1 MB blocks, and the storage copies it in blocks. Reading
hashes the stored file in blocks, then hands the same open file to the caller, so a missing or
damaged artifact is reported (with the way to rebuild it) before anything is parsed.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage, storages

from goldset.errors import ServiceError

STORAGE_ALIAS = "artifacts"
_BLOCK = 1 << 20


class ArtifactError(ServiceError):
    """An artifact that is missing from storage or does not match its checksum."""


@dataclass(frozen=True)
class StoredArtifact:
    name: str
    size: int
    sha256: str


def artifact_storage() -> Storage:
    return storages[STORAGE_ALIAS]


def save_artifact(*, name: str, write: Callable[[BinaryIO], None]) -> StoredArtifact:
    """Store what ``write`` writes to the file it is given under (about) ``name``.

    The storage may change the name to keep an existing file; the name returned is the one
    to keep.
    """
    with tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR) as spool:
        write(spool)
        spool.seek(0)
        digest, size = _digest(spool)
        spool.seek(0)
        stored = artifact_storage().save(name, File(spool, name=name))
    return StoredArtifact(name=stored, size=size, sha256=digest)


@contextmanager
def open_artifact(*, artifact: StoredArtifact, what: str, rebuild: str) -> Iterator[BinaryIO]:
    """The stored file, open for reading once its size and checksum are verified.

    ``what`` names the artifact in the error ("the index of bm25"), ``rebuild`` says how to
    make it again.
    """
    storage = artifact_storage()
    try:
        handle = storage.open(artifact.name, "rb")
    except (FileNotFoundError, OSError) as exc:
        raise ArtifactError(
            f"The stored file of {what} ({artifact.name}) is missing from the artifact "
            f"storage ({exc.__class__.__name__}). {rebuild}"
        ) from exc
    with handle:
        digest, size = _digest(handle)
        if (digest, size) != (artifact.sha256, artifact.size):
            raise ArtifactError(
                f"The stored file of {what} ({artifact.name}) is damaged: {size:,} bytes with "
                f"SHA-256 {digest[:12]}…, expected {artifact.size:,} bytes with "
                f"{artifact.sha256[:12]}…. {rebuild}"
            )
        handle.seek(0)
        yield handle


def delete_artifacts(names: Iterable[str]) -> None:
    """Remove stored files no row points at any more (already gone is fine)."""
    storage = artifact_storage()
    for name in names:
        if name:
            storage.delete(name)


def _digest(handle) -> tuple[str, int]:
    sha, size = hashlib.sha256(), 0
    while block := handle.read(_BLOCK):
        sha.update(block)
        size += len(block)
    return sha.hexdigest(), size
