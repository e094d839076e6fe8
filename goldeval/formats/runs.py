"""Runs for evaluation: a run file read by `goldeval.formats.runfiles`, its first problem raised.

The run format lives in `goldeval.formats.runfiles`, so the app's run import and this CLI read a
file alike; here a problem stops the file, as a CI gate should, with the file and line to look at.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from goldeval.formats.doc_ids import SCORED, DocIdCheck, split_doc_ids
from goldeval.formats.gold import EvaluationInputError, Gold, Passage
from goldeval.formats.runfiles import (
    NO_RANKING,
    TIES_RULES,
    WholeDocuments,
    read_run_file,
    trec_id,
)
from goldeval.formats.textfiles import NotUTF8Error


class RunFormatError(EvaluationInputError):
    """The run file is malformed or does not fit the gold set."""


@dataclass(slots=True)
class Ranking:
    # A list, or a TREC run's `goldeval.formats.runfiles.WholeDocuments`.
    passages: Sequence[Passage]
    # None when the run says nothing about refusing; only JSONL runs can say it.
    refused: bool | None = None
    line: int | None = None  # where the question first appears in the file


@dataclass(slots=True)
class Run:
    name: str
    rankings: dict[str, Ranking] = field(default_factory=dict)
    source: Path | None = None
    # How equal scores were ordered (TREC runs; `goldeval.formats.runfiles.TIES`).
    ties: str = "trec_eval"
    scores: str = "double"  # how precisely they were compared (`goldeval.formats.runfiles.SCORES`)
    format: str = "jsonl"
    repeats: int = 0  # repeated passages dropped after their first occurrence, all questions
    # Questions of the run that the gold set does not know, skipped (`check_run_against_gold`).
    skipped: list[str] = field(default_factory=list)
    # Its document ids the corpus does not have (`check_run_documents`); they stay in the
    # rankings, where they reach nothing, so every rank stays what the system returned.
    unknown_documents: DocIdCheck | None = None

    @property
    def ties_rule(self) -> str:
        """The ordering rule used, in words, for reports."""
        if self.format == "trec":
            rule = TIES_RULES[self.ties]
            if self.scores == "float32":
                rule += ", scores as single-precision floats (trec_eval 9)"
            return rule
        if self.format == "jsonl":
            return "JSONL run: list order"
        return "ranked by its retriever's scores"

    def warnings(self) -> list[str]:
        """What a user should know about how the run was read, one line each."""
        where = self.source or self.name
        lines = []
        if self.repeats:
            lines.append(
                f"{where}: {self.repeats} repeated passage(s) in a ranking dropped after their "
                "first occurrence"
            )
        if self.skipped:
            shown = ", ".join(repr(q) for q in self.skipped[:10])
            more = f" and {len(self.skipped) - 10} more" if len(self.skipped) > 10 else ""
            lines.append(
                f"{where}: {len(self.skipped)} question(s) not in the gold set skipped "
                f"({shown}{more})"
            )
        if self.unknown_documents is not None and self.unknown_documents.unknown:
            lines.append(self.unknown_documents.warning(str(where), outcome=SCORED))
        return lines

    @property
    def reports_refusals(self) -> bool:
        return any(ranking.refused is not None for ranking in self.rankings.values())


def load_run(
    path: Path | str, *, name: str | None = None, ties: str = "trec_eval", scores: str = "double"
) -> Run:
    """Read a JSONL or TREC run file; the format is told by the first non-blank line. A file
    without a single ranking is refused (`read_run` leaves that to its caller)."""
    path = Path(path)
    if not path.is_file():
        raise RunFormatError("no such file", path=path)
    run = read_run(path.read_bytes(), name=name or path.stem, source=path, ties=ties, scores=scores)
    if not run.rankings:
        raise RunFormatError(NO_RANKING, path=path)
    return run


def read_run(
    data: bytes,
    *,
    name: str,
    source: Path | str | None = None,
    ties: str = "trec_eval",
    scores: str = "double",
) -> Run:
    """A run given as the file's bytes; ``source`` names the file in errors. ``ties`` and
    ``scores``: how a TREC run is ranked (`goldeval.formats.runfiles`)."""
    path = Path(source) if source is not None else None
    try:
        parsed = read_run_file(data, ties=ties, scores=scores)
    except NotUTF8Error as error:
        raise RunFormatError(str(error), path=path) from None
    if parsed.problems:
        first = parsed.problems[0]
        raise RunFormatError(first.message, path=path, line=first.line)
    return Run(
        name=name,
        rankings={
            # The passages list is shared, not copied: a large TREC run is a million of them.
            question_id: Ranking(passages=read.passages, refused=read.refused, line=read.line)
            for question_id, read in parsed.rankings.items()
        },
        source=path,
        ties=ties,
        scores=scores,
        format=parsed.format,
        repeats=sum(read.repeats for read in parsed.rankings.values()),
    )


def _match_spelling(run: Run, gold: Gold) -> None:
    """Spell the run's ids as the gold set spells them. A TREC file names a question or a
    document by its token (`goldeval.formats.runfiles.trec_id`: white space and ``%``
    percent-encoded, as Goldset's qrels.trec writes them); JSON and BEIR TSV hold ids as they
    are. A TREC run against a gold set of ids (a bundle, gold JSONL, BEIR qrels) has each token
    that spells a gold id read as that id; a JSONL run against TREC qrels has its ids spelled
    as tokens. Either way the run matches as trec_eval matches it against qrels.trec."""
    if run.format == "trec" and not gold.trec_tokens:
        doc_ids = set(gold.corpus or ())
        for question in gold.questions.values():
            doc_ids.update(span.doc_id for span in question.spans)
            doc_ids.update(passage.doc_id for passage in question.judged)
        questions = _spellings(gold.questions, reverse=True)
        documents = _spellings(doc_ids, reverse=True)
    elif run.format == "jsonl" and gold.trec_tokens:
        questions = _spellings(run.rankings, reverse=False)
        documents = _spellings(
            {p.doc_id for ranking in run.rankings.values() for p in ranking.passages},
            reverse=False,
        )
    else:
        return
    if questions:
        run.rankings = {questions.get(q, q): ranking for q, ranking in run.rankings.items()}
    if not documents:
        return
    for ranking in run.rankings.values():
        passages = ranking.passages
        if isinstance(passages, WholeDocuments):
            if any(doc_id in documents for doc_id in passages.doc_ids):
                ranking.passages = WholeDocuments([documents.get(d, d) for d in passages.doc_ids])
        else:
            ranking.passages = [
                p._replace(doc_id=documents[p.doc_id]) if p.doc_id in documents else p
                for p in passages
            ]


def _spellings(ids: Iterable[str], *, reverse: bool) -> dict[str, str]:
    """{id: token} for the ids whose TREC token differs, or {token: id} with ``reverse``."""
    pairs = ((identifier, trec_id(identifier)) for identifier in ids)
    if reverse:
        return {token: identifier for identifier, token in pairs if token != identifier}
    return {identifier: token for identifier, token in pairs if token != identifier}


def check_run_against_gold(
    run: Run, gold: Gold, *, strict: bool = False, documents: bool = True
) -> None:
    """Skip question ids the gold set does not know (named in `Run.skipped`), as trec_eval
    does: a BEIR run covers every query while the test qrels hold a subset. ``strict`` refuses
    them instead. Offsets past a document's end are refused. With ``documents`` and a bundle
    that lists its corpus, the run's document ids are checked against it
    (`check_run_documents`); the app checks them against what the uploader may see instead."""
    path = run.source
    _match_spelling(run, gold)
    unknown = [q for q in run.rankings if q not in gold.questions]
    if unknown and strict:
        first = unknown[0]
        raise RunFormatError(
            f"question {first!r} is not in the gold set (without --strict it would be skipped)",
            path=path,
            line=run.rankings[first].line,
        )
    for question_id in unknown:
        del run.rankings[question_id]
    run.skipped.extend(unknown)
    if gold.corpus is not None:
        _check_offsets(run, gold)
    if documents:
        known = corpus_doc_ids(gold)
        if known is not None:
            check_run_documents(run, split_doc_ids(run_doc_ids(run), known))


def _check_offsets(run: Run, gold: Gold) -> None:
    lengths = {doc_id: len(document.text) for doc_id, document in gold.corpus.items()}
    for ranking in run.rankings.values():
        for doc_id, _, end in ranking.passages:
            if end is None:
                continue
            length = lengths.get(doc_id)
            if length is not None and end > length:
                raise RunFormatError(
                    f"passage of {doc_id!r} ends at {end}, past the document's end "
                    f"({length} characters)",
                    path=run.source,
                    line=ranking.line,
                )


def corpus_doc_ids(gold: Gold) -> set[str] | None:
    """The document ids the gold set's bundle lists (corpus.jsonl, documents.jsonl); None when
    it lists none (gold JSONL or qrels alone), so nothing can be said of a run's ids."""
    if gold.corpus is None and gold.documents is None:
        return None
    return set(gold.corpus or ()) | set(gold.documents or ())


def run_doc_ids(run: Run) -> Iterator[str]:
    """Every document id the run's rankings name, in file order per question."""
    for ranking in run.rankings.values():
        passages = ranking.passages
        if isinstance(passages, WholeDocuments):
            yield from passages.doc_ids
        else:
            for passage in passages:
                yield passage.doc_id


def check_run_documents(run: Run, check: DocIdCheck) -> None:
    """Refuse a run naming no known document (`goldeval.formats.doc_ids`); otherwise keep the
    count and examples of the unknown ones for `Run.warnings`."""
    if check.none_known:
        raise RunFormatError(check.refusal("the run"), path=run.source)
    run.unknown_documents = check
