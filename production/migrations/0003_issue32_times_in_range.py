"""Traces stored before their times were checked (issue 32) may hold an `occurred_at` that no
reader can load back: 9999-12-31T23:59:59-14:00 is in the year 10000 in UTC, which PostgreSQL
keeps but psycopg cannot return, so the Traces page and the admin's list failed for everyone,
and a year-0 time failed the daily purge. Such a trace gets the time it was received (a real
time, close to when it happened); the intake now refuses these times
(`goldeval.formats.bounds`). The comparison is done in SQL, so no bad value is ever loaded."""

import datetime

from django.db import migrations
from django.db.models import F, Q
from django.utils import timezone

# The bounds of `goldeval.formats.bounds` when this migration was written (history is frozen).
EARLIEST = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
LATEST = datetime.datetime(3000, 1, 1, tzinfo=datetime.UTC)


def outside(field):
    return Q(**{f"{field}__lt": EARLIEST}) | Q(**{f"{field}__gte": LATEST})


def bring_into_range(apps, schema_editor):
    trace = apps.get_model("production", "Trace")
    trace.objects.filter(outside("occurred_at")).filter(~outside("received_at")).update(
        occurred_at=F("received_at")
    )
    now = timezone.now()
    trace.objects.filter(outside("received_at")).update(received_at=now)
    trace.objects.filter(outside("occurred_at")).update(occurred_at=now)


class Migration(migrations.Migration):
    dependencies = [("production", "0002_issue31_question_origin")]

    operations = [migrations.RunPython(bring_into_range, migrations.RunPython.noop)]
