"""Manifest rows stored before their times were checked (issue 32) may hold an `indexed_at`
that no reader can load back (the year 10000 or the year 0 in UTC), which failed the Index
health page and the daily health check for everyone. Such a row gets the time its manifest was
uploaded (the latest it can have been indexed); the import now refuses these times
(`goldeval.formats.bounds`). The comparison is done in SQL, so no bad value is ever loaded."""

import datetime

from django.db import migrations
from django.db.models import OuterRef, Q, Subquery

# The bounds of `goldeval.formats.bounds` when this migration was written (history is frozen).
EARLIEST = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
LATEST = datetime.datetime(3000, 1, 1, tzinfo=datetime.UTC)


def bring_into_range(apps, schema_editor):
    manifest = apps.get_model("health", "IndexManifest")
    row = apps.get_model("health", "IndexManifestRow")
    row.objects.filter(Q(indexed_at__lt=EARLIEST) | Q(indexed_at__gte=LATEST)).update(
        indexed_at=Subquery(
            manifest.objects.filter(pk=OuterRef("manifest_id")).values("uploaded_at")[:1]
        )
    )


class Migration(migrations.Migration):
    dependencies = [("health", "0002_manifest_source")]

    operations = [migrations.RunPython(bring_into_range, migrations.RunPython.noop)]
