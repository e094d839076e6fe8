"""Pool bias at finalise: the bundle's pool.jsonl (which retriever pooled which passage) and
reusability.json (leave-one-retriever-out, `goldeval.scoring.reusability`), from the pools'
provenance rows. A pool built without retrievers (imported candidates) writes neither."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evaluation.models import GoldSet
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, Passage
from goldeval.formats.pool import REUSABILITY_FILE, read_pool
from goldeval.scoring.reusability import BIAS_MEASURES, leave_one_out, report_content
from labelling.models import Provenance, QuestionSet
from labelling.services.gold import FrozenQuestion


def pool_lines(question_set: QuestionSet) -> list[dict[str, Any]]:
    """One line per (question, retriever): its own pooled passages, by rank. Questions and
    retrievers in name order, so the same pools give the same bytes."""
    rows = (
        Provenance.objects.filter(candidate__pool__question_set=question_set)
        .values_list(
            "candidate__question__external_id",
            "retriever__name",
            "candidate__version__document__doc_id",
            "candidate__version__version",
            "start",
            "end",
            "rank",
        )
        .order_by("candidate__question__external_id", "retriever__name", "rank", "start", "end")
    )
    lines: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for question_id, retriever, doc_id, version, start, end, rank in rows.iterator():
        lines.setdefault((question_id, retriever), []).append(
            {"doc_id": doc_id, "version": version, "start": start, "end": end, "rank": rank}
        )
    return [
        {"question_id": question_id, "retriever": retriever, "passages": passages}
        for (question_id, retriever), passages in lines.items()
    ]


def reusability_content(
    questions: Sequence[FrozenQuestion], lines: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    """The pool-bias report of the frozen questions, or None with fewer than two retrievers."""
    pooled = read_pool("".join(json.dumps(line) + "\n" for line in lines).encode())
    if len(pooled.runs) < 2:
        return None
    gold = Gold(
        questions={
            q.question_id: GoldQuestion(
                question_id=q.question_id,
                question=q.text,
                answerable=q.answerable,
                spans=tuple(
                    GoldSpan(s.doc_id, s.start, s.end, s.grade, s.version, s.quote) for s in q.spans
                ),
                judged=tuple(Passage(doc_id, start, end) for doc_id, _, start, end in q.judged),
            )
            for q in questions
        }
    )
    report = leave_one_out(gold=gold, pooled=pooled.runs, depth=pooled.depth)
    return report_content(report)


def stored_reusability(gold_set: GoldSet) -> dict[str, Any] | None:
    """The gold set's reusability.json as finalising wrote it, with each retriever's cells
    ready to show (``measures``: with, without, difference, four decimals); None without one."""
    content = gold_set.files.filter(name=REUSABILITY_FILE).values_list("content", flat=True).first()
    if content is None:
        return None
    report = json.loads(bytes(content))
    for retriever in report["retrievers"]:
        retriever["cells"] = [
            (
                _figure(retriever["with_own"].get(measure)),
                _figure(retriever["without_own"].get(measure)),
                _figure(retriever["difference"].get(measure), signed=True),
            )
            for measure in BIAS_MEASURES
        ]
    report["measures"] = list(BIAS_MEASURES)
    return report


def _figure(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.4f}" if signed else f"{value:.4f}"
