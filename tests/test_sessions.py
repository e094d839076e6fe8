"""Signing in and staying signed in, on Django's own `cached_db` sessions and `ModelBackend`:
a session is kept in the database and in the cache, so losing the cache signs nobody out;
sessions signed in under the backend before issue 31 stay signed in after its migration."""

from __future__ import annotations

import importlib
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends.cached_db import SessionStore
from django.contrib.sessions.models import Session
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.utils import timezone

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
OLD_BACKEND = "goldset.sessions.SessionUserBackend"
PRIVATE = "/accounts/password/"  # any page that needs a signed-in user


def signed_in(client: Client) -> bool:
    return client.get(PRIVATE).status_code == 200


def cache():
    return caches[settings.SESSION_CACHE_ALIAS]


def test_settings_use_djangos_session_engine_and_model_backend():
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.cached_db"
    assert MODEL_BACKEND in settings.AUTHENTICATION_BACKENDS


def test_a_log_in_signs_in_with_model_backend_and_the_session_survives_requests():
    UserFactory(username="lena")
    client = Client()
    response = client.post("/accounts/login/", {"username": "lena", "password": PASSWORD})
    assert response.status_code == 302
    assert client.session[BACKEND_SESSION_KEY] == MODEL_BACKEND
    assert all(signed_in(client) for _ in range(3))


def test_a_wrong_password_signs_nobody_in():
    UserFactory(username="lena")
    client = Client()
    response = client.post("/accounts/login/", {"username": "lena", "password": "not it"})
    assert response.status_code == 200 and BACKEND_SESSION_KEY not in client.session
    assert not signed_in(client)


def test_the_session_is_kept_in_the_database_and_in_the_cache():
    client = Client()
    client.force_login(UserFactory())
    key = client.session.session_key
    assert Session.objects.filter(pk=key).exists()
    assert cache().get(SessionStore(key).cache_key) is not None
    # The cache lost (a Redis restart): the session comes back from the database.
    cache().delete(SessionStore(key).cache_key)
    assert signed_in(client)
    assert cache().get(SessionStore(key).cache_key) is not None


def test_a_session_expired_in_the_database_ends_once_the_cache_lets_it_go():
    client = Client()
    client.force_login(UserFactory())
    key = client.session.session_key
    Session.objects.filter(pk=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    cache().delete(SessionStore(key).cache_key)
    response = client.get(PRIVATE)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_signed_out_by_sign_out_a_deleted_user_or_a_changed_password():
    for end in ("sign-out", "deleted", "password"):
        user = UserFactory()
        client = Client()
        client.force_login(user)
        key = client.session.session_key
        assert signed_in(client), end
        if end == "sign-out":
            assert client.post("/accounts/logout/").status_code == 302
            assert not Session.objects.filter(pk=key).exists()
            assert cache().get(SessionStore(key).cache_key) is None
        elif end == "deleted":
            user.delete()
        else:  # the session's hash of the password no longer matches
            user.set_password("a new one entirely")
            user.save()
        response = client.get(PRIVATE)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], end


@pytest.fixture
def rename_migration():
    return importlib.import_module("corpus.migrations.0012_issue31_sessions_model_backend")


def test_sessions_signed_in_under_the_old_backend_stay_signed_in(rename_migration):
    old = Client()
    old.force_login(UserFactory())
    key = old.session.session_key
    # The session as the backend before issue 31 named itself in it (a copy in the cache too).
    store = SessionStore(key)
    store[BACKEND_SESSION_KEY] = OLD_BACKEND
    store.save()
    assert not signed_in(old)  # the old backend's name is no longer listed
    other = SessionStore()
    other["note"] = "no sign-in"
    other.save()
    Session.objects.create(
        session_key="u" * 32, session_data="not signed data", expire_date=timezone.now()
    )
    untouched = {s.pk: s.session_data for s in Session.objects.exclude(pk=key)}
    editor = SimpleNamespace(connection=connection)

    rename_migration.forwards(apps, editor)
    assert signed_in(old)
    assert old.session[BACKEND_SESSION_KEY] == MODEL_BACKEND
    assert {s.pk: s.session_data for s in Session.objects.exclude(pk=key)} == untouched

    rename_migration.backwards(apps, editor)
    assert SessionStore(key)[BACKEND_SESSION_KEY] == OLD_BACKEND
