"""Index health (manifests, thresholds, checks, stored reports) moves from `corpus` and `evaluation` to its own app.

State only: the tables stay where they are (each moved model pins its `db_table`)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


APP = "health"
# The moved models' content types keep their ids (so every permission, group grant and admin
# log entry stays attached); only their app label changes. Jobs name their Celery task, so
# a job queued before the move is re-queued under the task's new name.
MOVED_FROM = {
    "corpus": ["indexmanifest", "indexmanifestrow"],
    "evaluation": ["indexhealththresholds", "indexhealthcheck", "indexhealthreport"],
}
TASKS = {
    "corpus.tasks.import_manifest": "health.tasks.import_manifest",
    "evaluation.tasks.index_health_report": "health.tasks.index_health_report",
    "evaluation.tasks.check_index_health": "health.tasks.check_index_health",
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
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="IndexHealthCheck",
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
                        ("checked_at", models.DateTimeField()),
                        (
                            "source",
                            models.CharField(help_text="manifest or built-in", max_length=16),
                        ),
                        ("stale_share", models.FloatField()),
                        ("lag_p95_days", models.FloatField(null=True)),
                        ("lag_oldest_days", models.FloatField(null=True)),
                        ("mixed_models", models.BooleanField(default=False)),
                        (
                            "crossed",
                            models.JSONField(
                                default=list, help_text="[{check, value, limit, message}]"
                            ),
                        ),
                        (
                            "notified",
                            models.BooleanField(
                                default=False, help_text="Admins were emailed about it."
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="health_checks",
                                to="corpus.project",
                            ),
                        ),
                        (
                            "retriever",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="corpus.retriever",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "evaluation_indexhealthcheck",
                        "ordering": ["retriever", "checked_at", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="IndexHealthThresholds",
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
                            "max_stale",
                            models.FloatField(
                                blank=True,
                                default=0.01,
                                help_text="Share of searchable documents, 0–1.",
                                null=True,
                            ),
                        ),
                        ("max_lag_days", models.FloatField(blank=True, default=7, null=True)),
                        ("fail_on_model_mix", models.BooleanField(default=True)),
                        (
                            "max_crowding",
                            models.FloatField(
                                blank=True,
                                help_text="A run's mean share of top-k slots, 0–1.",
                                null=True,
                            ),
                        ),
                        (
                            "project",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="index_health_thresholds",
                                to="corpus.project",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "evaluation_indexhealththresholds",
                    },
                ),
                migrations.CreateModel(
                    name="IndexManifest",
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
                        ("file_name", models.CharField(max_length=255)),
                        ("sha256", models.CharField(max_length=64)),
                        ("rows", models.PositiveIntegerField(default=0)),
                        ("uploaded_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "retriever",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="manifests",
                                to="corpus.retriever",
                            ),
                        ),
                        (
                            "uploaded_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "corpus_indexmanifest",
                        "ordering": ["-uploaded_at", "-pk"],
                    },
                ),
                migrations.CreateModel(
                    name="IndexHealthReport",
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
                            models.CharField(help_text="SHA-256 of the inputs.", max_length=64),
                        ),
                        ("source", models.CharField(max_length=16)),
                        ("described", models.CharField(max_length=300)),
                        (
                            "report",
                            models.JSONField(
                                help_text="goldeval.scoring.health.check_index's report."
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "retriever",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="corpus.retriever",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "evaluation_indexhealthreport",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("retriever", "key"), name="one_health_report_per_key"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="IndexManifestRow",
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
                        ("line", models.PositiveIntegerField()),
                        ("doc_id", models.CharField(max_length=255)),
                        ("version", models.PositiveIntegerField(null=True)),
                        ("content_sha256", models.CharField(blank=True, max_length=64)),
                        ("start", models.PositiveIntegerField(null=True)),
                        ("end", models.PositiveIntegerField(null=True)),
                        ("indexed_at", models.DateTimeField()),
                        ("embedding_model", models.CharField(max_length=200)),
                        ("embedding_revision", models.CharField(blank=True, max_length=200)),
                        ("dimension", models.PositiveIntegerField()),
                        (
                            "manifest",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="entries",
                                to="health.indexmanifest",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "corpus_indexmanifestrow",
                        "indexes": [
                            models.Index(fields=["manifest", "doc_id"], name="manifest_row_doc")
                        ],
                    },
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
