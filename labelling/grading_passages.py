"""The passages a labeller sees on the grading page (`passages_for_grading`), with what the
page and every grading write need to know of each, in one query.

Every grading request asks it, and building the query through the ORM cost more CPU than
anything else in a grade request (docs/benchmarks.md): it is written out once per process and
run with `Candidate.objects.raw()`. `passages_for_grading_orm` is the same query built by the
ORM, which the tests compare it with.
"""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.db.models import Case, Count, F, IntegerField, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce, Substr

from corpus.models import Document, DocumentVersion
from corpus.visibility import not_hidden_sql
from goldset.sql import identifier
from labelling.models import (
    Candidate,
    Change,
    ChangeSubject,
    EscalatedItem,
    Judgement,
    Pool,
)
from labelling.services.judging_order import in_judging_order


def passages_for_grading(
    *, assignment, user, context_chars: int = 0, candidate_id: int | None = None
) -> list[Candidate]:
    """The passages of an assignment that the user sees (`not_hidden_from`), in page order,
    each with `grade` (the assignment's judgement of it, or None), `graded`, `revision`
    (changes made to its judgement), `passage` (its text),
    `doc_id`, `doc_title` and, with `context_chars`, `window`/`window_start`: its text with
    that much around it. Only one candidate with `candidate_id`. A third labeller's slot
    (`EscalatedItem`) shows only its escalated passages: only slots after the second can be
    one, so the first two pay nothing for the check."""
    if not user.is_authenticated:
        return []
    windowed, single = bool(context_chars), candidate_id is not None
    escalation = assignment.slot > 2
    params: list = [assignment.pk, assignment.pk, ChangeSubject.JUDGEMENT]
    params += [context_chars] * 7 if windowed else []  # 2 in window_start, 5 in window
    params += [assignment.pool_id, assignment.question_id]
    params += [candidate_id] if single else []
    params.append(user.pk)
    params += [assignment.pk, assignment.pk] if escalation else []
    rows = list(
        Candidate.objects.raw(_select(connection.alias, windowed, single, escalation), params)
    )
    for row in rows:
        row.graded = row.grade is not None
    return _in_page_order(rows, assignment=assignment, user=user, single=single)


def _in_page_order(rows: list, *, assignment, user, single: bool) -> list:
    """Shuffled (the query's order), or in judging order for an adaptive pool."""
    if single or not rows:
        return rows
    pool = Pool(
        strategy=rows[0].pool_strategy,
        stop_misses=rows[0].pool_stop_misses,
        stop_budget=rows[0].pool_stop_budget,
    )
    if not pool.adaptive:
        return rows
    return in_judging_order(rows, assignment=assignment, user=user, strategy=pool.strategy)


@cache
def _select(alias: str, windowed: bool, single: bool, escalation: bool = False) -> str:
    """The SQL, with a context window or not, for one candidate or all, for a slot that may
    be a third labeller's or not: built once per process and database."""
    q = identifier
    tables = {
        "c": Candidate._meta.db_table,
        "v": DocumentVersion._meta.db_table,
        "d": Document._meta.db_table,
        "j": Judgement._meta.db_table,
        "ch": Change._meta.db_table,
        "p": Pool._meta.db_table,
        "e": EscalatedItem._meta.db_table,
    }
    t = {key: q(name) for key, name in tables.items()}
    start, end = f"c.{q('start')}", f"c.{q('end')}"
    names = ["id", "pool_id", "question_id", "version_id", "start", "end", "shuffle_rank"]
    columns = [
        ", ".join(f"c.{q(Candidate._meta.get_field(name).column)}" for name in names),
        "d.doc_id AS doc_id, d.title AS doc_title",
        "p.strategy AS pool_strategy, p.stop_misses AS pool_stop_misses",
        "p.stop_budget AS pool_stop_budget",
        f"(SELECT jj.grade FROM {t['j']} jj WHERE jj.assignment_id = %s"  # noqa: S608
        " AND jj.candidate_id = c.id) AS grade",
        f"(SELECT COUNT(*) FROM {t['ch']} cc WHERE cc.assignment_id = %s"  # noqa: S608
        " AND cc.subject = %s AND cc.candidate_id = c.id) AS revision",
        f"SUBSTR(v.text, {start} + 1, {end} - {start}) AS passage",
    ]
    if windowed:
        window_start = f"(CASE WHEN {start} > %s THEN {start} - %s ELSE 0 END)"
        columns.append(f"{window_start} AS window_start")
        columns.append(f"SUBSTR(v.text, {window_start} + 1, {end} + %s - {window_start}) AS window")
    where = "c.pool_id = %s AND c.question_id = %s" + (" AND c.id = %s" if single else "")
    escalated = (
        f" AND (NOT EXISTS (SELECT 1 FROM {t['e']} e WHERE e.assignment_id = %s)"  # noqa: S608
        f" OR EXISTS (SELECT 1 FROM {t['e']} e WHERE e.assignment_id = %s"
        " AND e.candidate_id = c.id))"
        if escalation
        else ""
    )
    return f"""
        SELECT {", ".join(columns)}
        FROM {t["c"]} c
        JOIN {t["v"]} v ON v.id = c.version_id
        JOIN {t["d"]} d ON d.id = v.document_id
        JOIN {t["p"]} p ON p.id = c.pool_id
        WHERE {where}
          AND {not_hidden_sql("d.id")}{escalated}
        ORDER BY c.shuffle_rank, c.id
    """  # noqa: S608 - only table and column names are interpolated, values are parameters


def passages_for_grading_orm(
    *, assignment, user, context_chars: int = 0, candidate_id: int | None = None
) -> list[Candidate]:
    """`passages_for_grading` as the ORM builds it: the reference its SQL is tested against
    (`tests/labelling/test_grading_passages.py`)."""
    if not user.is_authenticated:
        return []
    changes = (
        Change.objects.filter(
            assignment_id=assignment.pk,
            subject=ChangeSubject.JUDGEMENT,
            candidate_id=OuterRef("pk"),
        )
        .order_by()
        .values("candidate_id")
        .annotate(count=Count("*"))
        .values("count")
    )
    grade = Judgement.objects.filter(assignment_id=assignment.pk, candidate_id=OuterRef("pk"))
    passages = (
        Candidate.objects.of_assignment(assignment)
        .not_hidden_from(user)
        .only("id", "pool_id", "question_id", "version_id", "start", "end", "shuffle_rank")
        .annotate(
            doc_id=F("version__document__doc_id"),
            doc_title=F("version__document__title"),
            pool_strategy=F("pool__strategy"),
            pool_stop_misses=F("pool__stop_misses"),
            pool_stop_budget=F("pool__stop_budget"),
            grade=Subquery(grade.values("grade")[:1]),
            revision=Coalesce(Subquery(changes), 0),
            passage=Substr("version__text", F("start") + 1, F("end") - F("start")),
        )
        .order_by("shuffle_rank", "id")
    )
    if candidate_id is not None:
        passages = passages.filter(pk=candidate_id)
    if context_chars:
        window_start = Case(
            When(start__gt=context_chars, then=F("start") - context_chars),
            default=Value(0),
            output_field=IntegerField(),
        )
        passages = passages.annotate(
            window_start=window_start,
            window=Substr(
                "version__text",
                window_start + 1,
                F("end") + context_chars - window_start,
            ),
        )
    rows = list(passages)
    for row in rows:
        row.graded = row.grade is not None
    return _in_page_order(rows, assignment=assignment, user=user, single=candidate_id is not None)
