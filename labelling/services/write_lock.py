"""The rows every grading write starts from, each read in one hand-written query: the
assignment the write is for (`held_assignment`, what the view checks), and that assignment
locked, with what the write needs to know about guidelines and the verdict
(`locked_assignment`, what `labelling.services.judgements` starts every write with).

Built by the ORM (joins to the project, four correlated subqueries), these cost a grade request
more CPU to compile than any other step. `tests/labelling/test_write_lock.py` compares them
with the ORM's answers.
"""

from __future__ import annotations

from django.db import connection

from labelling.models import Assignment, Guideline, Pool, Question, QuestionSet, Verdict


def held_assignment(*, project_id: int, labeller_id: int, pool_id: int, question_id: int):
    """`Assignment.objects.in_project(project).held_by(labeller).for_question(...).first()`,
    with only `id`, `pool_id`, `question_id` and `labeller_id` read; None if there is none."""
    q = connection.ops.quote_name
    t = {key: q(model._meta.db_table) for key, model in {
        "a": Assignment, "p": Pool, "s": QuestionSet, "q": Question}.items()}  # fmt: skip
    sql = f"""
        SELECT a.id, a.pool_id, a.question_id, a.labeller_id
        FROM {t["a"]} a
        JOIN {t["p"]} p ON p.id = a.pool_id
        JOIN {t["s"]} s ON s.id = p.question_set_id
        JOIN {t["q"]} q ON q.id = a.question_id
        WHERE s.project_id = %s AND a.labeller_id = %s AND q.excluded_at IS NULL
          AND a.pool_id = %s AND a.question_id = %s
        ORDER BY a.id
    """  # noqa: S608 - only table and column names are interpolated, values are parameters
    rows = list(Assignment.objects.raw(sql, [project_id, labeller_id, pool_id, question_id]))
    return rows[0] if rows else None


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
