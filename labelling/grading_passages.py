"""The passages a labeller sees on the grading page (`passages_for_grading`), read by one
query written out by hand, its SQL and the shape of its rows built once per process for each
of its four forms.

The grading page asks it on every keystroke. Built by the ORM, the query spent ten times longer
being compiled than being run; `tests/labelling/test_judgements.py` compares its answers
with the ORM's (`Candidate.objects.not_hidden_from`).
"""

from __future__ import annotations

from functools import cache

from django.db import connection, connections

from corpus.models import AccessGroup, Document, DocumentVersion
from goldset.model_rows import RowShape, row_shape
from labelling.models import Candidate, Change, ChangeSubject, Judgement


def passages_for_grading(
    *, assignment, user, context_chars: int = 0, candidate_id: int | None = None
) -> list[Candidate]:
    """The passages of an assignment that the user sees (`not_hidden_from`), in page order,
    each with `grade` (the assignment's judgement of it, or None), `graded`, `revision`
    (changes made to its judgement), `passage` (its text),
    `doc_id`, `doc_title` and, with `context_chars`, `window`/`window_start`: its text with
    that much around it. Only one candidate with `candidate_id`."""
    if not user.is_authenticated:
        return []
    windowed, single = bool(context_chars), candidate_id is not None
    sql, shape = _select(connection.alias, connection.vendor, windowed, single)
    params: list = [assignment.pk, assignment.pk, ChangeSubject.JUDGEMENT]
    params += [context_chars] * 7 if windowed else []  # 2 in window_start, 5 in window
    params += [assignment.pool_id, assignment.question_id]
    params += [candidate_id] if single else []
    params.append(user.pk)
    rows = shape.read(sql, params, connection=connection)
    for row in rows:
        row.graded = row.grade is not None
    return rows


@cache
def _select(alias: str, vendor: str, windowed: bool, single: bool) -> tuple[str, RowShape]:
    """The SQL, with a context window or not, for one candidate or all, and the shape of its
    rows: built once per process."""

    q = connections[alias].ops.quote_name
    tables = {
        "c": Candidate._meta.db_table,
        "v": DocumentVersion._meta.db_table,
        "d": Document._meta.db_table,
        "j": Judgement._meta.db_table,
        "ch": Change._meta.db_table,
        "l": Document.access_groups.through._meta.db_table,
        "m": AccessGroup.members.through._meta.db_table,
    }
    t = {key: q(name) for key, name in tables.items()}
    start, end = f"c.{q('start')}", f"c.{q('end')}"
    names = ["id", "pool_id", "question_id", "version_id", "start", "end", "shuffle_rank"]
    fields = [Candidate._meta.get_field(name) for name in names]
    columns = [
        ", ".join(f"c.{q(field.column)}" for field in fields),
        "d.doc_id AS doc_id, d.title AS doc_title",
        f"(SELECT jj.grade FROM {t['j']} jj WHERE jj.assignment_id = %s"  # noqa: S608
        " AND jj.candidate_id = c.id) AS grade",
        f"(SELECT COUNT(*) FROM {t['ch']} cc WHERE cc.assignment_id = %s"  # noqa: S608
        " AND cc.subject = %s AND cc.candidate_id = c.id) AS revision",
        f"SUBSTR(v.text, {start} + 1, {end} - {start}) AS passage",
    ]
    extra = ["doc_id", "doc_title", "grade", "revision", "passage"]
    if windowed:
        window_start = f"(CASE WHEN {start} > %s THEN {start} - %s ELSE 0 END)"
        columns.append(f"{window_start} AS window_start")
        columns.append(f"SUBSTR(v.text, {window_start} + 1, {end} + %s - {window_start}) AS window")
        extra += ["window_start", "window"]
    where = "c.pool_id = %s AND c.question_id = %s" + (" AND c.id = %s" if single else "")
    sql = f"""
        SELECT {", ".join(columns)}
        FROM {t["c"]} c
        JOIN {t["v"]} v ON v.id = c.version_id
        JOIN {t["d"]} d ON d.id = v.document_id
        WHERE {where}
          AND (NOT EXISTS (SELECT 1 FROM {t["l"]} l1 WHERE l1.document_id = d.id)
               OR EXISTS (SELECT 1 FROM {t["l"]} l2
                          JOIN {t["m"]} m ON m.accessgroup_id = l2.accessgroup_id
                          WHERE l2.document_id = d.id AND m.user_id = %s))
        ORDER BY c.shuffle_rank, c.id
    """  # noqa: S608 - only table and column names are interpolated, values are parameters
    return sql, row_shape(Candidate, fields, extra=extra, connection=connections[alias])
