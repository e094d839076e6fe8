"""Index health moves to `health`, the misses reports to `production`.

State only: the tables stay where they are (each moved model pins its `db_table`)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0009_issue17_index_health_reports"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="indexhealthreport",
                    name="retriever",
                ),
                migrations.RemoveField(
                    model_name="indexhealththresholds",
                    name="project",
                ),
                migrations.RemoveField(
                    model_name="productionreport",
                    name="sample",
                ),
                migrations.DeleteModel(
                    name="IndexHealthCheck",
                ),
                migrations.DeleteModel(
                    name="IndexHealthReport",
                ),
                migrations.DeleteModel(
                    name="IndexHealthThresholds",
                ),
                migrations.DeleteModel(
                    name="ProductionReport",
                ),
            ],
        ),
    ]
