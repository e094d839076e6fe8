# Issue 31 went back to Django's ModelBackend: sessions signed in under
# goldset.sessions.SessionUserBackend (0010) name a backend that no longer exists, and Django
# would treat their users as signed out. Rename it in each such session, so that nobody is
# signed out by the upgrade (and back again if the migration is reversed).

from django.db import migrations

OLD = "goldset.sessions.SessionUserBackend"
NEW = "django.contrib.auth.backends.ModelBackend"


def rename(apps, schema_editor, *, old, new):
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY
    from django.contrib.sessions.backends.cached_db import SessionStore as CachedStore
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.cache import caches

    store = SessionStore()
    cache = caches[settings.SESSION_CACHE_ALIAS]
    Session = apps.get_model("sessions", "Session")
    for session in Session.objects.using(schema_editor.connection.alias).iterator():
        data = store.decode(session.session_data)  # {} for one it cannot read: left as it is
        if data.get(BACKEND_SESSION_KEY) == old:
            data[BACKEND_SESSION_KEY] = new
            session.session_data = store.encode(data)
            session.save(update_fields=["session_data"])
            # The cached_db engine reads its cache first: a copy of the session kept there
            # (after a migrate back and forth) must not outlive the renamed row.
            cache.delete(CachedStore(session.session_key).cache_key)


def forwards(apps, schema_editor):
    rename(apps, schema_editor, old=OLD, new=NEW)


def backwards(apps, schema_editor):
    rename(apps, schema_editor, old=NEW, new=OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0011_issue31_manifests_move_to_health"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
