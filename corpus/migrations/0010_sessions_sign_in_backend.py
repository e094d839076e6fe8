# Sessions signed in before goldset.sessions.SessionUserBackend replaced Django's ModelBackend
# name the old backend, which is no longer listed in AUTHENTICATION_BACKENDS: Django would
# treat their users as signed out. Rename it in each such session, so that nobody is signed out
# by the upgrade (and back again if the migration is reversed).

from django.db import migrations

OLD = "django.contrib.auth.backends.ModelBackend"
NEW = "goldset.sessions.SessionUserBackend"


def rename(apps, schema_editor, *, old, new):
    from django.contrib.auth import BACKEND_SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    store = SessionStore()
    Session = apps.get_model("sessions", "Session")
    for session in Session.objects.using(schema_editor.connection.alias).iterator():
        data = store.decode(session.session_data)  # {} for one it cannot read: left as it is
        if data.get(BACKEND_SESSION_KEY) == old:
            data[BACKEND_SESSION_KEY] = new
            session.session_data = store.encode(data)
            session.save(update_fields=["session_data"])


def forwards(apps, schema_editor):
    rename(apps, schema_editor, old=OLD, new=NEW)


def backwards(apps, schema_editor):
    rename(apps, schema_editor, old=NEW, new=OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0009_issue17_index_manifest"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
