"""Questions promoted before `Question.origin` existed get it from their promotion record, so a
gold set finalised after the upgrade names their trace, sample and rule as before."""

from django.db import migrations


def fill_origins(apps, schema_editor):
    promoted = apps.get_model("production", "PromotedQuestion")
    question = apps.get_model("labelling", "Question")
    rows = promoted.objects.select_related(
        "question", "sampled_trace__trace", "sampled_trace__sample__rule"
    ).order_by("pk")
    for p in rows.iterator():
        row = p.sampled_trace
        question.objects.filter(pk=p.question_id).update(
            origin={
                "trace_id": row.trace.trace_id,
                "sample": row.sample_id,
                "rule": row.sample.rule.name,
                "rule_version": row.sample.rule.version,
                "stratum": row.stratum,
                "inclusion_probability": row.inclusion_probability,
                "promoted_at": p.promoted_at.isoformat(),
            }
        )


def clear_origins(apps, schema_editor):
    promoted = apps.get_model("production", "PromotedQuestion")
    question = apps.get_model("labelling", "Question")
    question.objects.filter(pk__in=promoted.objects.values("question_id")).update(origin={})


class Migration(migrations.Migration):
    dependencies = [
        ("production", "0001_initial"),
        ("labelling", "0014_issue31_question_origin"),
    ]

    operations = [migrations.RunPython(fill_origins, clear_origins)]
