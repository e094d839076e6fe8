from django.db import migrations, models

# The task that did each kind of job before jobs named their task.
TASKS = {
    "import_uploads": "corpus.tasks.import_uploads",
    "chunk_corpus": "corpus.tasks.chunk_corpus",
    "build_index": "corpus.tasks.build_index",
    "build_pool": "labelling.tasks.build_pool",
    "evaluation_run": "evaluation.tasks.evaluation_run",
}


def name_tasks(apps, schema_editor):
    Job = apps.get_model("corpus", "Job")
    for kind, task in TASKS.items():
        Job.objects.filter(kind=kind, task="").update(task=task)


class Migration(migrations.Migration):
    dependencies = [("corpus", "0005_retrieval_version_indexes")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="task",
            field=models.CharField(
                blank=True,
                help_text="Dotted name of the Celery task that does this job; blank for work "
                "done in the calling process (a command).",
                max_length=200,
            ),
        ),
        migrations.RunPython(name_tasks, migrations.RunPython.noop),
    ]
