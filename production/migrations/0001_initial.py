"""The production loop (traces, tokens, sampling rules, samples, promotion, misses reports) moves from `labelling` and `evaluation` to its own app.

State only: the tables stay where they are (each moved model pins its `db_table`)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


APP = "production"
# The moved models' content types keep their ids (so every permission, group grant and admin
# log entry stays attached); only their app label changes. Jobs name their Celery task, so
# a job queued before the move is re-queued under the task's new name.
MOVED_FROM = {
    "labelling": [
        "trace",
        "apitoken",
        "samplingrule",
        "sample",
        "sampledtrace",
        "promotedquestion",
    ],
    "evaluation": ["productionreport"],
}
TASKS = {
    "labelling.tasks.draw_sample": "production.tasks.draw_sample",
    "labelling.tasks.draw_weekly_samples": "production.tasks.draw_weekly_samples",
    "labelling.tasks.purge_expired_traces": "production.tasks.purge_expired_traces",
    "evaluation.tasks.misses_report": "production.tasks.misses_report",
}


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
        ("evaluation", "0010_issue31_health_and_production_move_out"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("corpus", "0011_issue31_manifests_move_to_health"),
        ("labelling", "0013_issue31_answers_and_production_move_out"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
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
                        ("name", models.CharField(max_length=100)),
                        (
                            "prefix",
                            models.CharField(
                                help_text="The token's first characters, to tell it.", max_length=16
                            ),
                        ),
                        ("digest", models.CharField(max_length=64, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("expires_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="api_tokens",
                                to="corpus.project",
                            ),
                        ),
                        (
                            "revoked_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_apitoken",
                        "ordering": ["-created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="Sample",
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
                        ("window_start", models.DateTimeField()),
                        ("window_end", models.DateTimeField()),
                        (
                            "population",
                            models.PositiveIntegerField(
                                help_text="Traces the rule's filter selected."
                            ),
                        ),
                        (
                            "strata",
                            models.JSONField(
                                blank=True,
                                default=dict,
                                help_text="{stratum: {population, drawn}} as drawn.",
                            ),
                        ),
                        ("drawn_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "seen_at",
                            models.DateTimeField(
                                blank=True, help_text="When a lead opened it.", null=True
                            ),
                        ),
                        (
                            "drawn_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="samples",
                                to="corpus.project",
                            ),
                        ),
                        (
                            "question_set",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="sample",
                                to="labelling.questionset",
                            ),
                        ),
                        (
                            "retriever",
                            models.ForeignKey(
                                blank=True,
                                help_text="The production retrieval, as a run source.",
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="corpus.retriever",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_sample",
                        "ordering": ["-drawn_at"],
                    },
                ),
                migrations.CreateModel(
                    name="SampledTrace",
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
                        ("stratum", models.CharField(blank=True, max_length=200)),
                        ("inclusion_probability", models.FloatField()),
                        (
                            "question",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="sampled_trace",
                                to="labelling.question",
                            ),
                        ),
                        (
                            "sample",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="traces",
                                to="production.sample",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_sampledtrace",
                        "ordering": ["sample", "id"],
                    },
                ),
                migrations.CreateModel(
                    name="PromotedQuestion",
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
                        ("promoted_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "promoted_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "question",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="promotion",
                                to="labelling.question",
                            ),
                        ),
                        (
                            "sampled_trace",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="promotions",
                                to="production.sampledtrace",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_promotedquestion",
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="SamplingRule",
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
                        ("version", models.PositiveIntegerField(default=1)),
                        ("filters", models.JSONField(blank=True, default=dict)),
                        (
                            "strategy",
                            models.CharField(
                                choices=[
                                    ("uniform", "Uniform"),
                                    ("stratified", "Stratified, with quotas per stratum"),
                                    ("negative_first", "Negative feedback first"),
                                    ("disagreement", "Disagreement with the built-in retrievers"),
                                ],
                                default="uniform",
                                max_length=20,
                            ),
                        ),
                        ("stratify_by", models.CharField(blank=True, max_length=40)),
                        ("quotas", models.JSONField(blank=True, default=dict)),
                        ("size", models.PositiveIntegerField(default=50)),
                        ("seed", models.BigIntegerField(default=0)),
                        (
                            "active",
                            models.BooleanField(
                                default=True, help_text="Drawn by the weekly task."
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="sampling_rules",
                                to="corpus.project",
                            ),
                        ),
                        (
                            "retrievers",
                            models.ManyToManyField(
                                blank=True,
                                help_text="For disagreement.",
                                related_name="+",
                                to="corpus.retriever",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_samplingrule",
                        "ordering": ["name", "-version"],
                    },
                ),
                migrations.AddField(
                    model_name="sample",
                    name="rule",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="samples",
                        to="production.samplingrule",
                    ),
                ),
                migrations.CreateModel(
                    name="Trace",
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
                        ("trace_id", models.CharField(max_length=200)),
                        ("occurred_at", models.DateTimeField()),
                        ("user", models.CharField(blank=True, max_length=200)),
                        ("user_groups", models.JSONField(blank=True, default=list)),
                        ("question", models.TextField()),
                        (
                            "retrieved",
                            models.JSONField(
                                blank=True,
                                default=list,
                                help_text="[{doc_id, start?, end?, rank, score?}] in rank order.",
                            ),
                        ),
                        ("answer", models.TextField(blank=True)),
                        ("citations", models.JSONField(blank=True, default=list)),
                        ("refused", models.BooleanField(blank=True, null=True)),
                        (
                            "thumb",
                            models.CharField(
                                blank=True, help_text='"up", "down" or blank.', max_length=4
                            ),
                        ),
                        ("comment", models.TextField(blank=True)),
                        ("system_version", models.CharField(blank=True, max_length=200)),
                        ("index_manifest", models.JSONField(blank=True, null=True)),
                        ("top_score", models.FloatField(blank=True, null=True)),
                        ("has_citations", models.BooleanField(default=False)),
                        (
                            "unknown_doc_ids",
                            models.JSONField(
                                blank=True,
                                default=list,
                                help_text="Retrieved doc ids the corpus does not know.",
                            ),
                        ),
                        ("has_unknown_documents", models.BooleanField(default=False)),
                        ("received_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="traces",
                                to="corpus.project",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labelling_trace",
                        "ordering": ["-occurred_at", "id"],
                    },
                ),
                migrations.AddField(
                    model_name="sampledtrace",
                    name="trace",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="samplings",
                        to="production.trace",
                    ),
                ),
                migrations.CreateModel(
                    name="ProductionReport",
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
                            "key",
                            models.CharField(
                                help_text="SHA-256 of visibility and label state.", max_length=64
                            ),
                        ),
                        (
                            "visibility",
                            models.CharField(
                                help_text="SHA-256 of the viewers' groups.", max_length=64
                            ),
                        ),
                        ("content", models.JSONField(help_text="What the misses page shows.")),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "sample",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="production.sample",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "evaluation_productionreport",
                        "ordering": ["sample", "-created_at"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("sample", "key"), name="one_production_report_per_key"
                            )
                        ],
                    },
                ),
                migrations.AddConstraint(
                    model_name="samplingrule",
                    constraint=models.UniqueConstraint(
                        fields=("project", "name", "version"), name="one_rule_version"
                    ),
                ),
                migrations.AddIndex(
                    model_name="trace",
                    index=models.Index(
                        fields=["project", "occurred_at"], name="trace_project_time"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="trace",
                    constraint=models.UniqueConstraint(
                        fields=("project", "trace_id"), name="one_trace_per_id"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="sampledtrace",
                    constraint=models.UniqueConstraint(
                        fields=("sample", "trace"), name="one_trace_per_sample"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="sampledtrace",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("inclusion_probability__gt", 0), ("inclusion_probability__lte", 1)
                        ),
                        name="inclusion_probability_in_range",
                    ),
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
