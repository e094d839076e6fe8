"""The rows every grading write starts from, each read in one hand-written query: the
project access with the assignment the write is for (`held_assignment`, what the view checks,
read in corpus.access's membership query), and that assignment locked, with what the write
needs to know about guidelines and the verdict (`locked_assignment`, what
`labelling.services.judgements` starts every write with); a new judgement's and its spans'
INSERTs (`insert_judgement`, `insert_new`), an edited judgement's UPDATE
(`save_judgement_edit`); and the history row every write ends with (`change_row`), written in
the same statement as the judgement where the database allows (`append_history` alone).

Built by the ORM (joins to the project, four correlated subqueries), these cost a grade request
more CPU to compile than any other step. `tests/labelling/test_write_lock.py` compares them
with the ORM's answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.db import DatabaseError, connection, connections
from django.utils import timezone

from corpus.access import project_access_with
from goldset.model_rows import RowShape, row_shape
from labelling.models import (
    Assignment,
    Change,
    Guideline,
    Judgement,
    Pool,
    Question,
    QuestionSet,
    Span,
    Verdict,
)


def held_assignment(*, user, slug: str, pool_id: int, question_id: int):
    """`project_access(user, slug)` and `Assignment.objects.in_project(project).held_by(user)
    .for_question(pool_id=..., question_id=...).first()`, read in one query: the access, and
    the assignment with only `id`, `pool_id`, `question_id` and `labeller_id` read (the rest
    load on first use), or None if the user holds none for that question."""
    column = _held_assignment_column(connection.vendor)
    access, assignment_id = project_access_with(user, slug, column=(column, [pool_id, question_id]))
    if assignment_id is None:
        return access, None
    fields = ["id", "pool_id", "question_id", "labeller_id"]
    values = [assignment_id, pool_id, question_id, user.pk]
    return access, Assignment.from_db(access.project._state.db, fields, values)


@cache
def _held_assignment_column(vendor: str) -> str:
    """held_assignment's scalar subquery over corpus.access's project row `p` and membership
    row `m` (so the pool is `ap`), built once per process (`vendor` keys the quoting)."""
    q = connection.ops.quote_name
    t = {key: q(model._meta.db_table) for key, model in {
        "a": Assignment, "ap": Pool, "s": QuestionSet, "q": Question}.items()}  # fmt: skip
    return f"""
        SELECT a.id
        FROM {t["a"]} a
        JOIN {t["ap"]} ap ON ap.id = a.pool_id
        JOIN {t["s"]} s ON s.id = ap.question_set_id
        JOIN {t["q"]} q ON q.id = a.question_id
        WHERE s.project_id = p.id AND a.labeller_id = m.user_id AND q.excluded_at IS NULL
          AND a.pool_id = %s AND a.question_id = %s
        ORDER BY a.id LIMIT 1
    """  # noqa: S608 - only table and column names are interpolated, values are parameters


def locked_assignment(*, assignment_id: int, labeller_id: int | None, guideline_version: int):
    """The assignment (None unless it is `labeller_id`'s), locked until the transaction ends
    where the database locks rows, with `current_guideline_id` and `current_guideline_version`
    (the project's newest guideline, or None), `shown_guideline_id` (the project's guideline
    of `guideline_version`, or None) and `verdict_outcome` (the assignment's verdict, or None).
    """
    sql, shape = _locked_select(connection.alias, connection.vendor)
    rows = shape.read(sql, [guideline_version, assignment_id, labeller_id], connection=connection)
    return rows[0] if rows else None


@cache
def _locked_select(alias: str, vendor: str) -> tuple[str, RowShape]:
    q = connections[alias].ops.quote_name
    t = {
        key: q(model._meta.db_table)
        for key, model in {
            "a": Assignment, "p": Pool, "s": QuestionSet, "g": Guideline, "v": Verdict
        }.items()
    }  # fmt: skip
    fields = Assignment._meta.concrete_fields
    columns = ", ".join(f"a.{q(field.column)}" for field in fields)
    newest = f"FROM {t['g']} g WHERE g.project_id = s.project_id ORDER BY g.version DESC LIMIT 1"
    lock = " FOR UPDATE OF a" if connections[alias].features.has_select_for_update_of else ""
    sql = f"""
        SELECT {columns},
            (SELECT g.id {newest}) AS current_guideline_id,
            (SELECT g.version {newest}) AS current_guideline_version,
            (SELECT g.id FROM {t["g"]} g WHERE g.project_id = s.project_id AND g.version = %s)
                AS shown_guideline_id,
            (SELECT v.outcome FROM {t["v"]} v WHERE v.assignment_id = a.id) AS verdict_outcome
        FROM {t["a"]} a
        JOIN {t["p"]} p ON p.id = a.pool_id
        JOIN {t["s"]} s ON s.id = p.question_set_id
        WHERE a.id = %s AND a.labeller_id = %s{lock}
    """  # noqa: S608 - only table and column names are interpolated, values are parameters
    extra = [
        "current_guideline_id", "current_guideline_version", "shown_guideline_id",
        "verdict_outcome",
    ]  # fmt: skip
    return sql, row_shape(Assignment, fields, extra=extra, connection=connections[alias])


def judgement_with_spans(*, assignment_id: int, candidate_id: int):
    """The assignment's judgement of the candidate (None if there is none) with its spans in
    `judgement.spans.all()` (unordered), in one query whether or not it has spans; a span's
    `created_at` loads on first use (a write never reads it)."""
    sql, shape, names = _judgement_select(connection.alias, connection.vendor)
    rows = shape.read(sql, [assignment_id, candidate_id], connection=connection)
    if not rows:
        return None
    judgement = rows[0]
    found = [
        Span.from_db(judgement._state.db, names, [getattr(row, alias) for alias in shape.extra])
        for row in rows
        if row.span_id is not None
    ]
    for span in found:
        span.judgement = judgement
    judgement._prefetched_objects_cache = {"spans": found}  # as prefetch_related("spans") would
    return judgement


@cache
def _judgement_select(alias: str, vendor: str) -> tuple[str, RowShape, list[str]]:
    """The query, its rows' shape (the span's columns are its `extra`) and the span fields'
    names, in the order of those columns."""
    q = connections[alias].ops.quote_name
    judgements, spans = q(Judgement._meta.db_table), q(Span._meta.db_table)
    span_fields = [f for f in Span._meta.concrete_fields if f.attname != "created_at"]
    fields = Judgement._meta.concrete_fields
    columns = ", ".join(f"j.{q(f.column)}" for f in fields)
    span_columns = ", ".join(f"s.{q(f.column)} AS {q(f'span_{f.column}')}" for f in span_fields)
    sql = f"""
        SELECT {columns}, {span_columns}
        FROM {judgements} j LEFT JOIN {spans} s ON s.judgement_id = j.id
        WHERE j.assignment_id = %s AND j.candidate_id = %s
    """  # noqa: S608 - only table and column names are interpolated, values are parameters
    extra = [f"span_{f.column}" for f in span_fields]
    shape = row_shape(Judgement, fields, extra=extra, connection=connections[alias])
    return sql, shape, [f.attname for f in span_fields]


@dataclass(frozen=True)
class HistoryRow:
    """The INSERT of one history row (`change_row`): run alone (`append_history`), or inside the
    statement that writes the judgement it records (`insert_judgement`, `save_judgement_edit`)."""

    sql: str
    params: list


def change_row(
    *,
    assignment_id: int,
    candidate_id: int | None,
    subject: str,
    action: str,
    before,
    after,
    made_by_id: int | None,
    undoes_id: int | None = None,
) -> HistoryRow:
    """`Change.objects.create(...)` as one INSERT, each value prepared by its own field as the
    ORM prepares it (JSON, the timestamp): building and saving the model cost a write about
    three times the CPU of the statement itself, and no caller reads the row back."""
    values = {
        "assignment_id": assignment_id, "candidate_id": candidate_id, "subject": subject,
        "action": action, "before": before, "after": after, "made_by_id": made_by_id,
        "undoes_id": undoes_id, "made_at": timezone.now(),
    }  # fmt: skip
    fields, head, _ = _insert(connection.vendor, Change)
    if {field.attname for field in fields} != set(values):  # a new column: write it here too
        raise AssertionError("change_row does not know every column of Change")
    params = [f.get_db_prep_save(values[f.attname], connection) for f in fields]
    return HistoryRow(f"{head} {_rows(1, len(fields))}", params)


def append_history(history: HistoryRow) -> None:
    """Write a history row in a statement of its own."""
    with connection.cursor() as cursor:
        cursor.execute(history.sql, history.params)


def _along(history: HistoryRow | None) -> tuple[list[str], list]:
    """The WITH queries and their parameters that carry `history` inside the next statement,
    where the database runs data-modifying WITH queries (PostgreSQL); elsewhere it is written
    at once and nothing is carried. Writing a first grade's judgement, span and history row in
    one statement instead of three cut its web CPU by 6-10% here (one process, alternating)."""
    if history is None:
        return [], []
    if connection.vendor != "postgresql":
        append_history(history)
        return [], []
    return [f"history AS ({history.sql})"], list(history.params)


def save_judgement_edit(
    judgement: Judgement, *, fields: list[str], history: HistoryRow | None = None
) -> None:
    """`judgement.save(update_fields=fields)` as one UPDATE, each value prepared by its own
    field as the ORM prepares it (`auto_now` included), with the `history` row of the edit
    (see `_along`): the ORM's save cost a grade as much CPU again as the statement. Judgement
    has no save signals or overrides to skip (the tests compare the row with the ORM's)."""
    model_fields, sql = _judgement_update(connection.vendor, tuple(fields))
    ctes, params = _along(history)
    params += [f.get_db_prep_save(f.pre_save(judgement, False), connection) for f in model_fields]
    with connection.cursor() as cursor:
        cursor.execute(_with(ctes, sql), [*params, judgement.pk])
        if cursor.rowcount != 1:  # as the ORM's save of update_fields says it
            raise DatabaseError("Save with update_fields did not affect any rows.")


def insert_judgement(
    judgement: Judgement, spans: list[Span], *, history: HistoryRow | None = None
) -> None:
    """`insert_new([judgement])`, then `insert_new(spans)` (each span made the judgement's), with
    the `history` row of the write: on PostgreSQL one statement, the history row and the
    judgement as WITH queries and the spans' INSERT reading the judgement's id from its
    RETURNING (see `_along`)."""
    if connection.vendor != "postgresql":
        _along(history)
        insert_new([judgement])
        for span in spans:
            span.judgement = judgement  # its id, now that there is one
        insert_new(spans)
        return
    ctes, params = _along(history)
    judgement_fields, judgement_head, returning = _insert(connection.vendor, Judgement)
    params += _values([judgement], judgement_fields)
    judgement_insert = f"{judgement_head} {_rows(1, len(judgement_fields))} {returning}"
    if spans:
        span_fields, span_head, span_returning = _insert(connection.vendor, Span)
        q = connection.ops.quote_name
        owner = Span._meta.get_field("judgement")
        new_id = f"(SELECT {q(Judgement._meta.pk.column)} FROM judgement)"  # noqa: S608 - names
        marks = [new_id if f is owner else "%s" for f in span_fields]
        ctes.append(f"judgement AS ({judgement_insert})")
        params += _values(spans, [f for f in span_fields if f is not owner])
        sql = f"{span_head} {', '.join(['(' + ', '.join(marks) + ')'] * len(spans))}"
        sql += f" {span_returning}, {q(owner.column)}"
    else:
        sql = judgement_insert
    with connection.cursor() as cursor:
        cursor.execute(_with(ctes, sql), params)
        rows = cursor.fetchall()
    judgement.pk = rows[0][-1]  # the judgement's id: a span row's last column, or the only one
    _saved([judgement])
    if spans:  # RETURNING keeps the VALUES' order
        for span, (key, _) in zip(spans, rows, strict=True):
            span.pk, span.judgement = key, judgement
        _saved(spans)


def insert_new(instances: list[Judgement] | list[Span]) -> None:
    """`Model.objects.bulk_create(instances)` for new judgements or spans (one model), as one
    INSERT that returns their ids, each value prepared by its own field as the ORM prepares it
    (`auto_now_add` included); the instances then hold their ids and count as saved. The ORM's
    save and bulk_create were ~15% of a first grade's CPU under cProfile; neither model has save
    signals or overrides to skip (the tests compare the rows with the ORM's)."""
    if not instances:
        return
    model = type(instances[0])
    if not connection.features.can_return_rows_from_bulk_insert:
        model.objects.bulk_create(instances)
        return
    fields, head, returning = _insert(connection.vendor, model)
    sql = f"{head} {_rows(len(instances), len(fields))} {returning}"
    with connection.cursor() as cursor:
        cursor.execute(sql, _values(instances, fields))
        keys = [key for (key,) in cursor.fetchall()]
    for obj, key in zip(instances, keys, strict=True):  # RETURNING keeps the VALUES' order
        obj.pk = key
    _saved(instances)


def _values(instances: list, fields: list) -> list:
    return [f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in instances
            for f in fields]  # fmt: skip


@cache
def _rows(count: int, width: int) -> str:
    return ", ".join(["(" + ", ".join(["%s"] * width) + ")"] * count)


def _with(ctes: list[str], sql: str) -> str:
    return f"WITH {', '.join(ctes)} {sql}" if ctes else sql


def _saved(instances: list) -> None:
    for obj in instances:
        obj._state.adding, obj._state.db = False, connection.alias


@cache
def _insert(vendor: str, model: type[Change | Judgement | Span]) -> tuple[list, str, str]:
    """The model's columns but its id, the INSERT up to its rows, and its RETURNING clause,
    built once per process (`vendor` keys the quoting): every grading write runs them."""
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    q = connection.ops.quote_name
    columns = ", ".join(q(field.column) for field in fields)
    head = f"INSERT INTO {q(model._meta.db_table)} ({columns}) VALUES"  # noqa: S608 - names only
    return fields, head, f"RETURNING {q(model._meta.pk.column)}"


@cache
def _judgement_update(vendor: str, names: tuple[str, ...]) -> tuple[list, str]:
    fields = [Judgement._meta.get_field(name) for name in names]
    q = connection.ops.quote_name
    columns = ", ".join(f"{q(field.column)} = %s" for field in fields)
    table, key = q(Judgement._meta.db_table), q(Judgement._meta.pk.column)
    return fields, f"UPDATE {table} SET {columns} WHERE {key} = %s"  # noqa: S608 - names only
