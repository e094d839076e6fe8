# Issue 32: canary questions are for admins and permission replays only. A set of canary
# questions is flagged (labellers and leads never see it; it is never pooled), and each planted
# question loses what tied it to its canary: its id was the canary document's doc id and a tag
# named the canary's access group.

import secrets

from django.db import migrations, models

SOURCE = "canary"


def _planted(question) -> bool:
    """A question `plant_canaries` made: its source, its tag, and an id that was its doc id."""
    tags = question.tags if isinstance(question.tags, list) else []
    return (
        question.source == SOURCE
        and "canary" in tags
        and question.external_id.startswith("canary-")
    )


def _free_name(QuestionSet, project_id, name):
    candidate, n = f"{name}-canaries"[:100], 2
    while QuestionSet.objects.filter(project_id=project_id, name=candidate).exists():
        candidate, n = f"{name}-canaries-{n}"[:100], n + 1
    return candidate


def separate(apps, schema_editor):
    QuestionSet = apps.get_model("labelling", "QuestionSet")
    Question = apps.get_model("labelling", "Question")
    Candidate = apps.get_model("labelling", "Candidate")
    planted = [q for q in Question.objects.filter(source=SOURCE).order_by("pk") if _planted(q)]
    by_set = {}
    for question in planted:
        by_set.setdefault(question.question_set_id, []).append(question)
    for set_id, questions in by_set.items():
        question_set = QuestionSet.objects.get(pk=set_id)
        others = Question.objects.filter(question_set_id=set_id).exclude(
            pk__in=[q.pk for q in questions]
        )
        if not others.exists():
            question_set.is_canary = True
            question_set.save(update_fields=["is_canary"])
            target = question_set
        else:
            # Planted into a set of the team's questions: the canary questions move to a set of
            # their own, unless one was pooled already (its candidates belong to that set).
            target = QuestionSet.objects.create(
                project_id=question_set.project_id,
                name=_free_name(QuestionSet, question_set.project_id, question_set.name),
                description="Canary questions for permission replays.",
                is_canary=True,
            )
        for question in questions:
            question.external_id = f"q-{secrets.token_hex(6)}"
            question.tags = ["canary"]
            fields = ["external_id", "tags"]
            if target.pk != set_id and not Candidate.objects.filter(question=question).exists():
                question.question_set_id = target.pk
                question.duplicate_of_id = None
                fields += ["question_set", "duplicate_of"]
            question.save(update_fields=fields)


class Migration(migrations.Migration):
    dependencies = [
        ("labelling", "0014_issue31_question_origin"),
    ]

    operations = [
        migrations.AddField(
            model_name="questionset",
            name="is_canary",
            field=models.BooleanField(
                default=False,
                help_text="The questions of planted canary documents: asked by permission "
                "replays, seen by the project's admins only, never pooled or labelled.",
            ),
        ),
        migrations.RunPython(separate, migrations.RunPython.noop),
    ]
