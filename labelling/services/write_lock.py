"""The row every grading write starts from: the labeller's assignment, locked, with what the
write needs to know about guidelines and the verdict, read in one hand-written query.

Built by the ORM (four correlated subqueries over a join to the project), this query cost a
grade request more CPU to compile than any other step; `labelling.services.judgements` reads
it on every grade, note, span, verdict and undo. `tests/labelling/test_write_lock.py` compares
it with the ORM's answer.
"""

from __future__ import annotations

from django.db import connection

from labelling.models import Assignment, Guideline, Pool, QuestionSet, Verdict


def locked_assignment(*, assignment_id: int, labeller_id: int | None, guideline_version: int):
    """The assignment (None unless it is `labeller_id`'s), locked until the transaction ends
    where the database locks rows, with `current_guideline_id` and `current_guideline_version`
    (the project's newest guideline, or None), `shown_guideline_id` (the project's guideline
    of `guideline_version`, or None) and `verdict_outcome` (the assignment's verdict, or None).
    """
    q = connection.ops.quote_name
    t = {
        key: q(model._meta.db_table)
        for key, model in {
            "a": Assignment, "p": Pool, "s": QuestionSet, "g": Guideline, "v": Verdict
        }.items()
    }  # fmt: skip
    columns = ", ".join(f"a.{q(field.column)}" for field in Assignment._meta.concrete_fields)
    newest = f"FROM {t['g']} g WHERE g.project_id = s.project_id ORDER BY g.version DESC LIMIT 1"
    lock = " FOR UPDATE OF a" if connection.features.has_select_for_update_of else ""
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
    rows = list(Assignment.objects.raw(sql, [guideline_version, assignment_id, labeller_id]))
    return rows[0] if rows else None
