"""Canary documents: planted restricted documents, each carrying a unique token, that a
permission replay must never see returned to anyone outside their group.

They are ingested like any document (versions, chunks under every scheme, the access group)
and flagged ``is_canary``, so pools, gold sets, evaluation runs and baselines never count them
as content; only permission replays look for them.

Nothing about a canary can be worked out from what others see: its doc id is random and
unrelated to its token, and the retention code in its text is a random secret (`secrets`), so
knowing a canary's question (admins and replays only) never tells its answer.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction

from corpus.extraction import assess_quality
from corpus.models import AccessGroup, Document, Project
from corpus.services.documents import Importer, ingest_batch
from corpus.sources import DocumentRecord, SourceBatch
from goldset.errors import ServiceError

MAX_CANARIES = 50
SOURCE = "canary"
# The job that plants canaries from the browser (labelling.services.canary_planting); its
# params name the canaries' access group (``access_groups``), as an upload's do.
JOB_KIND = "plant_canaries"


@dataclass(frozen=True)
class PlantedCanary:
    doc_id: str
    token: str
    title: str
    text: str
    group: str
    question: str
    code: str = ""


def new_code() -> str:
    """A canary's retention code: a random secret, the length of a token (12 characters)."""
    return secrets.token_hex(6)


def _canary(token: str, group: str) -> PlantedCanary:
    code = new_code()
    title = f"Restricted memo {token.upper()}"
    text = (
        f"Restricted memo {token}.\n\n"
        f"This memo is a canary planted by Goldset to test access control. Only members of "
        f"the {group} group may read it. The retention code for programme {token} is "
        f"{code}, and the codename {token} must never appear in the search results of "
        f"anyone outside {group}.\n\n"
        f"If you are reading this without belonging to {group}, access control is leaking: "
        f"report it to the security team together with the canary code {token}."
    )
    question = f"What is the retention code for programme {token}?"
    # A doc id of its own, unrelated to the token: the id says nothing of what it is.
    doc_id = f"memo-{secrets.token_hex(6)}"
    return PlantedCanary(doc_id, token, title, text, group, question, code)


def plant_canary_documents(*, project: Project, group: str, count: int = 3) -> list[PlantedCanary]:
    """Add ``count`` canary documents restricted to ``group`` (which must exist)."""
    if not 1 <= count <= MAX_CANARIES:
        raise ServiceError(f"Plant between 1 and {MAX_CANARIES} canaries, not {count}.")
    if not AccessGroup.objects.filter(project=project, name=group).exists():
        names = ", ".join(project.access_groups.values_list("name", flat=True)) or "none"
        raise ServiceError(
            f"No access group {group!r} in {project.slug} (it has: {names}). A canary is "
            "restricted to a group whose members already exist."
        )
    canaries = [_canary(f"gs{secrets.token_hex(5)}", group) for _ in range(count)]
    records = [
        DocumentRecord(
            doc_id=c.doc_id,
            title=c.title,
            text=c.text,
            report=assess_quality(c.text),
            access_groups=(group,),
            source_name=SOURCE,
        )
        for c in canaries
    ]
    with transaction.atomic():
        result = ingest_batch(
            project=project,
            batch=SourceBatch(source=SOURCE, records=records),
            importer=Importer.command_line(),  # new documents with fresh ids: nothing to widen
        )
        if result.errors:
            raise ServiceError(f"The canaries could not be stored: {result.errors[0].error}")
        Document.objects.filter(project=project, doc_id__in=[c.doc_id for c in canaries]).update(
            is_canary=True
        )
    return canaries


def jsonl_line(*, doc_id: str, title: str, text: str, groups: Iterable[str]) -> str:
    """One canary as a line of the JSONL a team's own index ingests (`plant_canaries --out`
    and the canaries page's download)."""
    record = {"doc_id": doc_id, "title": title, "text": text, "access_groups": list(groups)}
    return json.dumps(record, ensure_ascii=False) + "\n"


def planted_for(project: Project, viewer):
    """The project's canary documents ``viewer`` may see (the visibility rule: an admin
    outside a canary's group learns nothing of it), newest version and groups read along."""
    return (
        Document.objects.filter(project=project, is_canary=True)
        .visible_to(viewer)
        .select_related("latest_version")
        .prefetch_related("access_groups")
        .order_by("created_at", "pk")
    )
