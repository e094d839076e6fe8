"""Answer runs, reference answers and answer review move from `labelling` to their own app.

State only: the tables stay where they are (each moved model pins its `db_table`)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


APP = "answers"
# The moved models' content types keep their ids (so every permission, group grant and admin
# log entry stays attached); only their app label changes. Jobs name their Celery task, so
# a job queued before the move is re-queued under the task's new name.
MOVED_FROM = {
    "labelling": [
        "answerrun",
        "answer",
        "answersentence",
        "answerpassage",
        "referenceanswer",
        "referencefact",
        "answerassignment",
        "claimjudgement",
        "claimevidence",
        "citationjudgement",
        "factjudgement",
        "answerresolution",
    ]
}
TASKS = {"labelling.tasks.import_answers": "answers.tasks.import_answers"}


def move_content_types(apps, schema_editor, backwards=False):
    content_type = apps.get_model("contenttypes", "ContentType")
    job = apps.get_model("corpus", "Job")
    for old_app, models in MOVED_FROM.items():
        source, target = (APP, old_app) if backwards else (old_app, APP)
        content_type.objects.filter(app_label=source, model__in=models).update(app_label=target)
    for old, new in TASKS.items():
        source, target = (new, old) if backwards else (old, new)
        job.objects.filter(task=source).update(task=target)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, backwards=True)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("corpus", "0011_issue31_manifests_move_to_health"),
        ("labelling", "0013_issue31_answers_and_production_move_out"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Answer",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("text", models.TextField(blank=True)),
                        ("refused", models.BooleanField()),
                        ("sentences_given", models.BooleanField(default=True)),
                        ("key", models.CharField(max_length=64)),
                        (
                            "line",
                            models.PositiveIntegerField(
                                help_text="The line of the file it was read from."
                            ),
                        ),
                        (
                            "question",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="answers",
                                to="labelling.question",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_answer",
                        "ordering": ["run_id", "question_id"],
                    },
                ),
                migrations.CreateModel(
                    name="AnswerAssignment",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("slot", models.PositiveSmallIntegerField()),
                        ("wrongly_refused", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("done_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "answer",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="assignments",
                                to="answers.answer",
                            ),
                        ),
                        (
                            "labeller",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="answer_assignments",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_answerassignment",
                        "ordering": ["answer_id", "slot"],
                    },
                ),
                migrations.CreateModel(
                    name="AnswerResolution",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("decided_at", models.DateTimeField(auto_now=True)),
                        (
                            "answer",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="resolution",
                                to="answers.answer",
                            ),
                        ),
                        (
                            "chosen",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="answers.answerassignment",
                            ),
                        ),
                        (
                            "decided_by",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_answerresolution",
                    },
                ),
                migrations.CreateModel(
                    name="AnswerRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("name", models.SlugField(max_length=100)),
                        ("system", models.CharField(blank=True, max_length=200)),
                        ("system_version", models.CharField(blank=True, max_length=200)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="answer_runs",
                                to="corpus.project",
                            ),
                        ),
                        (
                            "question_set",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="answer_runs",
                                to="labelling.questionset",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_answerrun",
                        "ordering": ["question_set_id", "name"],
                    },
                ),
                migrations.AddField(
                    model_name="answer",
                    name="run",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="answers",
                        to="answers.answerrun",
                    ),
                ),
                migrations.CreateModel(
                    name="AnswerSentence",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("position", models.PositiveIntegerField()),
                        ("start", models.PositiveIntegerField()),
                        ("end", models.PositiveIntegerField()),
                        (
                            "answer",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="sentences",
                                to="answers.answer",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_answersentence",
                        "ordering": ["answer_id", "position"],
                    },
                ),
                migrations.CreateModel(
                    name="AnswerPassage",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "role",
                            models.CharField(
                                choices=[
                                    ("citation", "citation"),
                                    ("context", "context sent to the model"),
                                ],
                                max_length=10,
                            ),
                        ),
                        (
                            "position",
                            models.PositiveIntegerField(
                                help_text="Rank in the context, or order of citation."
                            ),
                        ),
                        ("start", models.PositiveIntegerField(blank=True, null=True)),
                        ("end", models.PositiveIntegerField(blank=True, null=True)),
                        (
                            "answer",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="passages",
                                to="answers.answer",
                            ),
                        ),
                        (
                            "version",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="corpus.documentversion",
                            ),
                        ),
                        (
                            "sentence",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="citations",
                                to="answers.answersentence",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_answerpassage",
                        "ordering": ["answer_id", "role", "sentence_id", "position"],
                    },
                ),
                migrations.CreateModel(
                    name="ClaimJudgement",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("position", models.PositiveIntegerField()),
                        ("start", models.PositiveIntegerField()),
                        ("end", models.PositiveIntegerField()),
                        (
                            "support",
                            models.CharField(
                                blank=True,
                                choices=[
                                    ("full", "supported"),
                                    ("partial", "partly supported"),
                                    ("none", "not supported"),
                                ],
                                max_length=10,
                            ),
                        ),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "assignment",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="claims",
                                to="answers.answerassignment",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_claimjudgement",
                        "ordering": ["assignment_id", "position"],
                    },
                ),
                migrations.CreateModel(
                    name="ClaimEvidence",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("start", models.PositiveIntegerField()),
                        ("end", models.PositiveIntegerField()),
                        ("quote", models.TextField()),
                        (
                            "version",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="corpus.documentversion",
                            ),
                        ),
                        (
                            "claim",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="evidence",
                                to="answers.claimjudgement",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_claimevidence",
                        "ordering": ["claim_id", "start"],
                    },
                ),
                migrations.CreateModel(
                    name="CitationJudgement",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("grade", models.PositiveSmallIntegerField(blank=True, null=True)),
                        (
                            "passage",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="answers.answerpassage",
                            ),
                        ),
                        (
                            "claim",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="citations",
                                to="answers.claimjudgement",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_citationjudgement",
                        "ordering": ["claim_id", "passage_id"],
                    },
                ),
                migrations.CreateModel(
                    name="ReferenceAnswer",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("version", models.PositiveIntegerField()),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "question",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="reference_answers",
                                to="labelling.question",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_referenceanswer",
                        "ordering": ["question_id", "-version"],
                    },
                ),
                migrations.AddField(
                    model_name="answerassignment",
                    name="reference",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="answers.referenceanswer",
                    ),
                ),
                migrations.CreateModel(
                    name="ReferenceFact",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("position", models.PositiveIntegerField()),
                        ("text", models.TextField()),
                        ("vital", models.BooleanField(default=True)),
                        ("spans", models.JSONField(blank=True, default=list)),
                        (
                            "reference",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="facts",
                                to="answers.referenceanswer",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_referencefact",
                        "ordering": ["reference_id", "position"],
                    },
                ),
                migrations.CreateModel(
                    name="FactJudgement",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "present",
                            models.CharField(
                                choices=[
                                    ("yes", "present"),
                                    ("partly", "partly"),
                                    ("no", "missing"),
                                ],
                                max_length=10,
                            ),
                        ),
                        (
                            "assignment",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="facts",
                                to="answers.answerassignment",
                            ),
                        ),
                        (
                            "fact",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="answers.referencefact",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_factjudgement",
                        "ordering": ["assignment_id", "fact_id"],
                    },
                ),
                migrations.AddConstraint(
                    model_name="answerrun",
                    constraint=models.UniqueConstraint(
                        fields=("question_set", "name"), name="unique_answer_run_name"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="answer",
                    constraint=models.UniqueConstraint(
                        fields=("run", "question"), name="unique_answer_per_question"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="answersentence",
                    constraint=models.UniqueConstraint(
                        fields=("answer", "position"), name="unique_answer_sentence_position"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="answerpassage",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("role", "context"), ("sentence__isnull", True)),
                            models.Q(("role", "citation"), ("sentence__isnull", False)),
                            _connector="OR",
                        ),
                        name="answer_passage_role_matches_sentence",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="claimjudgement",
                    constraint=models.UniqueConstraint(
                        fields=("assignment", "position"), name="unique_claim_position"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="citationjudgement",
                    constraint=models.UniqueConstraint(
                        fields=("claim", "passage"), name="unique_citation_grade"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="referenceanswer",
                    constraint=models.UniqueConstraint(
                        fields=("question", "version"), name="unique_reference_answer_version"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="answerassignment",
                    constraint=models.UniqueConstraint(
                        fields=("answer", "slot"), name="unique_answer_slot"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="answerassignment",
                    constraint=models.UniqueConstraint(
                        fields=("answer", "labeller"), name="unique_answer_labeller"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="referencefact",
                    constraint=models.UniqueConstraint(
                        fields=("reference", "position"), name="unique_reference_fact_position"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="factjudgement",
                    constraint=models.UniqueConstraint(
                        fields=("assignment", "fact"), name="unique_fact_grade"
                    ),
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
