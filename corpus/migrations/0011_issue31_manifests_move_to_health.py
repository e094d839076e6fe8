"""Index manifests move to `health`.

State only: the tables stay where they are (each moved model pins its `db_table`)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0010_sessions_sign_in_backend"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="indexmanifestrow",
                    name="manifest",
                ),
                migrations.DeleteModel(
                    name="IndexManifest",
                ),
                migrations.DeleteModel(
                    name="IndexManifestRow",
                ),
            ],
        ),
    ]
