"""Importing a team's own run for a `run` retriever, so pools can draw on it.

The file is read by `goldeval.formats.runfiles` (the one reader of the run format, shared with
``python -m goldeval``); what is checked here needs the database: the ids must name the
set's questions and the project's documents, and offsets must stay inside a document's text.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db import transaction

from corpus.models import Chunk, Retriever, RetrieverKind
from corpus.services.documents import newest_versions
from corpus.sources import RecordError
from corpus.visibility import check_doc_ids
from goldeval.formats.runfiles import read_run_file
from goldeval.formats.textfiles import NotUTF8Error, text_problem
from goldset.batching import in_batches
from goldset.errors import ServiceError
from labelling.models import QuestionSet, RunResult
from labelling.services.questions import InputRejected

BULK_BATCH = 2000


@dataclass(frozen=True)
class RunLine:
    """One result of an uploaded run, as read; ``rank`` is its place in the question's ranking."""

    line: int
    question_id: str
    doc_id: str
    rank: int
    score: float | None
    start: int | None
    end: int | None


@dataclass
class RunImportResult:
    questions: int = 0
    results: int = 0
    passages: int = 0  # RunResult rows: results without offsets become one per chunk
    whole_documents: int = 0  # results mapped to a whole document (no chunks to map to)
    # Unknown document ids left out, counted and named (empty when every id is known).
    warning: str = ""


def import_run(
    *,
    retriever: Retriever,
    question_set: QuestionSet,
    data: bytes | str,
    name: str = "run",
    user=None,
) -> RunImportResult:
    """Replace the retriever's run for this question set: all of it, or nothing on any problem.

    TREC (``qid Q0 docid rank score tag``: ranked by score, ties in file order) or JSONL
    (``{"question_id", "results": [{"doc_id", "start"?, "end"?, "score"?}]}``: ranked in list
    order). A result without offsets stands for its document's chunks under the retriever's
    scheme, all at the result's rank, or for the whole document when there are none. Unknown
    question ids and offsets outside a document are reported with their line. Results naming
    an unknown document id are left out and counted in ``warning``; a file naming no known
    document is refused (`corpus.visibility.check_doc_ids`). With a ``user`` (an upload in the
    app), a document an access group hides from them is an unknown document id, word for
    word, as if it did not exist.
    """
    if retriever.kind != RetrieverKind.RUN:
        raise ServiceError(
            f"{retriever.name} is a {retriever.kind} retriever, not an uploaded run."
        )
    if question_set.project_id != retriever.project_id:
        raise ServiceError("The question set and the retriever belong to different projects.")
    lines, problems = _read(data, name)
    if not lines and not problems:
        raise ServiceError(f"{name} has no results.")
    check = check_doc_ids(project=retriever.project, doc_ids=(r.doc_id for r in lines), user=user)
    if check.none_known:
        raise ServiceError(f"{check.refusal(name)}. Nothing was imported.")
    questions = dict(question_set.questions.values_list("external_id", "pk"))
    for result in lines:
        if result.question_id not in questions:
            problems.append(
                _problem(name, result.line, f"unknown question id {result.question_id!r}")
            )
    lines = [r for r in lines if not check.is_unknown(r.doc_id)]
    documents = newest_versions(
        project_id=retriever.project_id, doc_ids={r.doc_id for r in lines}, user=user
    )
    for result in lines:
        if result.end is not None and result.end > documents[result.doc_id][1]:
            problems.append(
                _problem(
                    name,
                    result.line,
                    f"offsets [{result.start}, {result.end}) are outside {result.doc_id!r}, "
                    f"which has {documents[result.doc_id][1]} characters",
                )
            )
    if problems:
        raise InputRejected(sorted(problems, key=lambda p: p.line or 0))
    chunks = _chunks_of(retriever, {version_id for version_id, _ in documents.values()})
    outcome = RunImportResult(
        questions=len({r.question_id for r in lines}),
        results=len(lines),
        warning=check.warning(name),
    )
    rows: list[RunResult] = []
    for result in lines:
        version_id, length = documents[result.doc_id]
        if result.start is not None:
            spans = [(result.start, result.end)]
        elif chunks.get(version_id):
            spans = chunks[version_id]
        else:
            spans = [(0, length)]
            outcome.whole_documents += 1
        rows.extend(
            RunResult(
                retriever=retriever,
                question_id=questions[result.question_id],
                rank=result.rank,
                score=result.score,
                version_id=version_id,
                start=start,
                end=end,
            )
            for start, end in spans
        )
    with transaction.atomic():
        RunResult.objects.filter(retriever=retriever, question__question_set=question_set).delete()
        RunResult.objects.bulk_create(rows, batch_size=BULK_BATCH)
    outcome.passages = len(rows)
    return outcome


def _read(data: bytes | str, name: str) -> tuple[list[RunLine], list[RecordError]]:
    """Every result of the file, one row each, and every problem the format reader found."""
    try:
        run = read_run_file(data)
    except NotUTF8Error as error:
        raise ServiceError(f"{name} is {error}.") from None
    lines = [
        RunLine(
            line=line,
            question_id=question_id,
            doc_id=passage.doc_id,
            rank=rank,
            score=score,
            start=passage.start,
            end=passage.end,
        )
        for question_id, ranking in run.rankings.items()
        for rank, (passage, score, line) in enumerate(
            zip(ranking.passages, ranking.scores, ranking.lines, strict=True), start=1
        )
    ]
    problems = [_problem(name, problem.line, problem.message) for problem in run.problems]
    # Ids are looked up in the database, which refuses a NUL or a lone surrogate outright.
    kept = []
    for line in lines:
        problem = text_problem(line.question_id + line.doc_id)
        if problem:
            problems.append(_problem(name, line.line, f"an id {problem}"))
        else:
            kept.append(line)
    return kept, problems


def _problem(name: str, line: int, error: str) -> RecordError:
    return RecordError(source=name, line=line, error=error)


def _chunks_of(retriever: Retriever, version_ids: set[int]) -> dict[int, list[tuple[int, int]]]:
    chunks: dict[int, list[tuple[int, int]]] = defaultdict(list)
    if retriever.scheme_id is None:
        return chunks
    ordered = sorted(version_ids)
    for batch in in_batches(ordered):
        for version_id, start, end in (
            Chunk.objects.filter(scheme_id=retriever.scheme_id, version_id__in=batch)
            .order_by("version_id", "ordinal")
            .values_list("version_id", "start", "end")
        ):
            chunks[version_id].append((start, end))
    return chunks
