"""``pool.jsonl``: which retriever pooled which passage, read here (the bundle writes it).

One line per (question, retriever): ``{"question_id", "retriever", "passages": [{"doc_id",
"version", "start", "end", "rank"}]}``, the retriever's own passages that went into the pool, in
rank order. ``python -m goldeval reusability --gold BUNDLE`` rebuilds each pooled retriever's
run from it, so a bundle alone answers the leave-one-retriever-out question. The bundle's
``reusability.json`` is that report, computed when the gold set was finalised. Django-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from goldeval.formats.gold import EvaluationInputError, read_doc_id, read_offsets
from goldeval.formats.runfiles import Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.formats.textfiles import LineProblem, NotUTF8Error, json_lines

POOL_FILE = "pool.jsonl"
REUSABILITY_FILE = "reusability.json"


class PoolFormatError(EvaluationInputError):
    """pool.jsonl is malformed."""


@dataclass(slots=True)
class PooledRuns:
    runs: dict[str, Run] = field(default_factory=dict)
    depth: int = 0  # the deepest rank any retriever pooled


def read_pool(data: bytes, *, path: Path | str = POOL_FILE) -> PooledRuns:
    """Each pooled retriever's run (its pooled passages per question, by rank)."""
    path = Path(path)
    pooled = PooledRuns()
    ranked: dict[str, dict[str, list[tuple[int, Passage]]]] = {}
    try:
        lines = list(json_lines(data))
    except NotUTF8Error as error:
        raise PoolFormatError(str(error), path=path) from None
    for number, record in lines:
        if isinstance(record, LineProblem):
            raise PoolFormatError(record.message, path=path, line=number)
        question_id = record.get("question_id")
        retriever = record.get("retriever")
        passages = record.get("passages")
        if not isinstance(question_id, str) or not question_id:
            raise PoolFormatError("question_id must be a non-empty string", path=path, line=number)
        if not isinstance(retriever, str) or not retriever:
            raise PoolFormatError("retriever must be a non-empty string", path=path, line=number)
        if not isinstance(passages, list):
            raise PoolFormatError("passages must be a list", path=path, line=number)
        rows = ranked.setdefault(retriever, {}).setdefault(question_id, [])
        for item in passages:
            if not isinstance(item, dict):
                raise PoolFormatError("each passage must be an object", path=path, line=number)
            doc_id = read_doc_id(item, path=path, line=number, error=PoolFormatError)
            start, end = read_offsets(item, path=path, line=number, error=PoolFormatError)
            rank = item.get("rank")
            if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
                raise PoolFormatError("rank must be a whole number >= 1", path=path, line=number)
            rows.append((rank, Passage(doc_id, start, end)))
            pooled.depth = max(pooled.depth, rank)
    for retriever, questions in ranked.items():
        run = Run(name=retriever, format="ranked")
        for question_id, rows in questions.items():
            seen: dict[Passage, None] = {}
            for _, passage in sorted(rows, key=lambda row: row[0]):
                seen.setdefault(passage)
            run.rankings[question_id] = Ranking(passages=list(seen))
        pooled.runs[retriever] = run
    return pooled
