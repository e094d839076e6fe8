"""Index artifacts move from a bytea column to files in the "artifacts" storage (issue 19).

Each stored artifact is copied, one row at a time (a 100,000-passage index is ~70 MB), to
indexes/retriever-R/index-I.npz with its size and SHA-256 on the row; the bytes are the same,
so the reader accepts them unchanged. Backwards, the files are read into the column again.
"""

import hashlib

from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import migrations, models


def to_storage(apps, schema_editor):
    Index = apps.get_model("corpus", "Index")
    storage = storages["artifacts"]
    ids = list(Index.objects.exclude(artifact=b"").values_list("pk", flat=True))
    for pk in ids:
        index = Index.objects.only("pk", "retriever_id", "artifact").get(pk=pk)
        data = bytes(index.artifact)
        if not data:
            continue
        name = storage.save(
            f"indexes/retriever-{index.retriever_id}/index-{pk}.npz", ContentFile(data)
        )
        Index.objects.filter(pk=pk).update(
            artifact_name=name,
            artifact_size=len(data),
            artifact_sha256=hashlib.sha256(data).hexdigest(),
            artifact=b"",
        )


def to_column(apps, schema_editor):
    Index = apps.get_model("corpus", "Index")
    storage = storages["artifacts"]
    for pk, name in Index.objects.exclude(artifact_name="").values_list("pk", "artifact_name"):
        if not storage.exists(name):
            continue
        with storage.open(name, "rb") as handle:
            data = handle.read()
        Index.objects.filter(pk=pk).update(artifact=data)
        storage.delete(name)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0007_issue16_http_retriever"),
    ]

    operations = [
        migrations.AddField(
            model_name="index",
            name="artifact_name",
            field=models.CharField(blank=True, editable=False, max_length=500),
        ),
        migrations.AddField(
            model_name="index",
            name="artifact_sha256",
            field=models.CharField(blank=True, editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name="index",
            name="artifact_size",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(to_storage, to_column),
        migrations.RemoveField(
            model_name="index",
            name="artifact",
        ),
    ]
