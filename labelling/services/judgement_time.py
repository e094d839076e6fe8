"""The seconds labellers spent on their judgements, summed up per labeller and per question set
for the lead's Assignments page (its two progress tables and the speed plot).

Counted over every judgement of the project's work (`work_q`) on a passage the viewer may see:
the candidates on documents hidden from the viewer are left out by their ids
(`corpus.visibility.hidden_document_ids`), so the visibility rule is one anti-join.

On PostgreSQL the figures are one hand-written query (`connection.cursor()`): the whole
project's judgements grouped twice (`GROUPING SETS`), each group's medians taken from its
sorted seconds in the database. Reading every judgement's seconds into Python instead (as
`judgement_time_read` does, the reference and the path on other databases) cost ~60 ms of
SQL and transfer and ~50 ms of Python a page at 62,000 judgements (`docs/benchmarks.md`).
`tests/labelling/test_judgement_time.py` compares the two on generated worlds for every viewer.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from django.db import connection

from corpus import visibility
from corpus.models import DocumentVersion, Project
from goldset.sql import identifier
from labelling.models import (
    Assignment,
    Candidate,
    Judgement,
    Pool,
    QuestionSet,
    work_q,
    work_sql,
)


@dataclass(frozen=True)
class SecondsSummary:
    """One group's judgements: how many, the median seconds over all of them, and the ones
    the page's clock timed (seconds > 0; imported judgements have none): how many, their sum
    and median."""

    judgements: int
    median: float | None
    timed: int
    timed_sum: float
    timed_median: float | None


@dataclass(frozen=True)
class JudgementTime:
    by_labeller: dict[int | None, SecondsSummary]  # None: slots whose labeller is gone
    by_question_set: dict[int, SecondsSummary]


def judgement_time(*, project: Project, viewer) -> JudgementTime:
    """The seconds figures of the project's work as ``viewer`` may see it."""
    if connection.vendor != "postgresql":
        return judgement_time_read(project=project, viewer=viewer)
    hidden = list(
        visibility.hidden_document_ids(project=project, user=viewer).values_list(
            "document_id", flat=True
        )
    )
    sql, params = _summary_sql(), [project.pk, hidden]
    by_labeller: dict[int | None, SecondsSummary] = {}
    by_set: dict[int, SecondsSummary] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for by_set_row, labeller_id, set_id, n, timed, timed_sum, *middles in cursor.fetchall():
            summary = SecondsSummary(
                judgements=n,
                median=statistics.median(middles[:2]),
                timed=timed,
                timed_sum=timed_sum or 0.0,
                timed_median=statistics.median(middles[2:]) if timed else None,
            )
            if by_set_row:
                by_set[set_id] = summary
            else:
                by_labeller[labeller_id] = summary
    return JudgementTime(by_labeller=by_labeller, by_question_set=by_set)


def _summary_sql() -> str:
    q = identifier
    judgement, assignment = Judgement._meta, Assignment._meta
    pool, question_set = Pool._meta, QuestionSet._meta
    candidate, version = Candidate._meta, DocumentVersion._meta

    def column(meta, name: str) -> str:
        return q(meta.get_field(name).column)

    seconds = f"j.{column(judgement, 'seconds_spent')}"
    labeller = f"a.{column(assignment, 'labeller')}"
    set_id = f"p.{column(pool, 'question_set')}"
    # Grouped by hashing, each group's seconds gathered unsorted and sorted on their own
    # afterwards (a few thousand each): sorting all the rows by group first, as an ordered
    # aggregate makes PostgreSQL do, spilled to disk at the default work_mem (40 against 32 ms
    # at 62,000 judgements). Ascending, the untimed (seconds <= 0) come first, so one sorted
    # array per group holds both medians: the middle one or two of all its seconds, and of
    # the timed ones after the untimed; statistics.median of the pair is Python's own answer.
    # Only table and column names are written into the text; the values are parameters.
    return (
        "SELECT g.by_set, g.labeller, g.set_id, g.n, g.timed, g.timed_sum,"  # noqa: S608
        " sorted.seconds[(g.n + 1) / 2], sorted.seconds[(g.n + 2) / 2],"
        " sorted.seconds[g.n - g.timed + (g.timed + 1) / 2],"
        " sorted.seconds[g.n - g.timed + (g.timed + 2) / 2]"
        f" FROM (SELECT GROUPING({labeller}) AS by_set, {labeller} AS labeller,"
        f" {set_id} AS set_id, count(*) AS n, count(*) FILTER (WHERE {seconds} > 0) AS timed,"
        f" sum({seconds}) FILTER (WHERE {seconds} > 0) AS timed_sum,"
        f" array_agg({seconds}) AS unsorted"
        f" FROM {q(judgement.db_table)} j"
        f" JOIN {q(assignment.db_table)} a"
        f" ON a.{column(assignment, 'id')} = j.{column(judgement, 'assignment')}"
        f" JOIN {q(pool.db_table)} p ON p.{column(pool, 'id')} = a.{column(assignment, 'pool')}"
        f" JOIN {q(question_set.db_table)} s"
        f" ON s.{column(question_set, 'id')} = {set_id}"
        f" WHERE {work_sql('a')} AND s.{column(question_set, 'project')} = %s"
        f" AND j.{column(judgement, 'candidate')} NOT IN ("
        f"SELECT c.{column(candidate, 'id')} FROM {q(candidate.db_table)} c"
        f" JOIN {q(version.db_table)} v"
        f" ON v.{column(version, 'id')} = c.{column(candidate, 'version')}"
        f" WHERE v.{column(version, 'document')} = ANY(%s))"
        f" GROUP BY GROUPING SETS (({labeller}), ({set_id}))) g,"
        " LATERAL (SELECT array_agg(x ORDER BY x) AS seconds FROM unnest(g.unsorted) x) sorted"
    )


def judgement_time_read(*, project: Project, viewer) -> JudgementTime:
    """The same figures from every judgement's seconds read through the ORM: the reference
    the SQL is tested against, and the path on databases other than PostgreSQL."""
    hidden = visibility.hidden_document_ids(project=project, user=viewer)
    unseen = Candidate.objects.filter(version__document_id__in=hidden).values("pk")
    rows = (
        Judgement.objects.filter(
            work_q("assignment__"), assignment__pool__question_set__project=project
        )
        .exclude(candidate_id__in=unseen)
        .values_list(
            "assignment__labeller_id", "assignment__pool__question_set_id", "seconds_spent"
        )
    )
    per_labeller: dict[int | None, list[float]] = defaultdict(list)
    per_set: dict[int, list[float]] = defaultdict(list)
    for labeller_id, set_id, spent in rows:
        per_labeller[labeller_id].append(spent)
        per_set[set_id].append(spent)
    return JudgementTime(
        by_labeller={key: summarize(values) for key, values in per_labeller.items()},
        by_question_set={key: summarize(values) for key, values in per_set.items()},
    )


def summarize(seconds: list[float]) -> SecondsSummary:
    """The figures of one group's seconds (at least one)."""
    timed = sorted(s for s in seconds if s > 0)
    return SecondsSummary(
        judgements=len(seconds),
        median=statistics.median(seconds),
        timed=len(timed),
        timed_sum=sum(timed),
        timed_median=statistics.median(timed) if timed else None,
    )
