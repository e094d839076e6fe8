"""A new project's first steps, for the leads and admins who set it up: upload documents, add
a chunking scheme, add a retriever, build its index, import questions, pool candidates, plan
the assignments. Each step is ticked when what it makes exists (one cheap `exists()` each),
so the checklist ticks itself as the project fills, and disappears once every step is done.

Access: the documents step ticks on documents the viewer may see (the visibility rule), and no
step counts anything, so the checklist tells nobody of documents hidden from them. Canary
documents and canary question sets are not the project's content and tick nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.urls import reverse

from corpus.models import Document, Project, RetrieverKind
from labelling.models import Assignment, Pool, Question

# Retrievers whose index Goldset builds; the others (runs, HTTP) have nothing to build.
BUILT_HERE = (RetrieverKind.BM25, RetrieverKind.EMBEDDING)


@dataclass(frozen=True)
class Step:
    title: str
    done: bool
    url: str  # where the step is done


def first_steps(*, project: Project, viewer) -> list[Step]:
    """The checklist of ``project`` as ``viewer`` (a lead or an admin) may see it."""
    slug = project.slug
    retrievers = project.retrievers.all()
    return [
        Step(
            "Upload documents",
            Document.objects.filter(project=project).content().visible_to(viewer).exists(),
            reverse("corpus:upload-documents", args=[slug]),
        ),
        Step(
            "Add a chunking scheme",
            project.chunking_schemes.exists(),
            reverse("corpus:list-chunking", args=[slug]),
        ),
        Step(
            "Add a retriever",
            retrievers.exists(),
            reverse("corpus:add-retriever", args=[slug]),
        ),
        Step(
            "Build its index",
            retrievers.filter(Q(active_index__isnull=False) | ~Q(kind__in=BUILT_HERE)).exists(),
            reverse("corpus:list-retrievers", args=[slug]),
        ),
        Step(
            "Import questions",
            Question.objects.filter(
                question_set__project=project, question_set__is_canary=False
            ).exists(),
            reverse("labelling:import-questions", args=[slug]),
        ),
        Step(
            "Pool candidates",
            Pool.objects.filter(question_set__project=project).exists(),
            reverse("labelling:add-pool", args=[slug]),
        ),
        Step(
            "Plan the assignments",
            Assignment.objects.filter(pool__question_set__project=project).exists(),
            reverse("labelling:list-assignments", args=[slug]),
        ),
    ]
