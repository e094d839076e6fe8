"""The session and the user every signed-in request reads (goldset.sessions), by plain SELECTs:
the same answers as Django's ORM reads, for a good session and for every kind of bad one; and
the migration that moves sessions signed in before onto the new backend's name."""

from __future__ import annotations

import importlib
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.utils import timezone

from goldset.sessions import SessionStore, SessionUserBackend
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

BACKEND = "goldset.sessions.SessionUserBackend"
PRIVATE = "/accounts/password/"  # any page that needs a signed-in user


def test_a_stored_session_reads_as_djangos_store_reads_it():
    store = SessionStore()
    store["answer"] = {"grade": 2, "text": "naïve “quotes”"}
    store.save()
    assert SessionStore(store.session_key).load() == DjangoStore(store.session_key).load()
    assert SessionStore(store.session_key)["answer"] == {"grade": 2, "text": "naïve “quotes”"}


def test_an_expired_or_unknown_session_is_empty_and_its_key_is_not_kept():
    store = SessionStore()
    store["x"] = 1
    store.save()
    Session.objects.filter(pk=store.session_key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    for key in (store.session_key, "k" * 32):
        read = SessionStore(key)
        assert read.load() == {}
        assert read.session_key is None  # a save makes a new session, never revives this key
    assert SessionStore(None).load() == {}


def test_the_user_of_a_session_is_the_row_djangos_backend_reads():
    user = UserFactory(username="lena", first_name="Léna", is_staff=True)
    user.last_login = timezone.now()
    user.save()
    ours, django = SessionUserBackend().get_user(user.pk), ModelBackend().get_user(user.pk)
    fields = [f.attname for f in get_user_model()._meta.concrete_fields]
    assert {f: getattr(ours, f) for f in fields} == {f: getattr(django, f) for f in fields}
    assert timezone.is_aware(ours.date_joined) and timezone.is_aware(ours.last_login)
    assert ours.is_staff is True and ours._state.adding is False and ours._state.db == "default"
    assert SessionUserBackend().get_user(str(user.pk)).pk == user.pk  # as a session stores it


def test_no_user_comes_back_for_a_missing_inactive_or_malformed_id():
    gone, inactive = UserFactory(), UserFactory(is_active=False)
    gone_id = gone.pk
    gone.delete()
    backend = SessionUserBackend()
    assert [backend.get_user(key) for key in (gone_id, inactive.pk, "abc", None)] == [None] * 4


def test_a_real_log_in_signs_in_with_the_new_backend_and_keeps_the_user_signed_in():
    UserFactory(username="lena")
    client = Client()
    response = client.post("/accounts/login/", {"username": "lena", "password": PASSWORD})
    assert response.status_code == 302
    assert client.session[BACKEND_SESSION_KEY] == BACKEND
    assert client.get(PRIVATE).status_code == 200


def test_signed_out_by_expiry_a_deleted_user_or_a_changed_password(client):
    for end in ("expired", "deleted", "password"):
        user = UserFactory()
        client.force_login(user)
        assert client.get(PRIVATE).status_code == 200
        if end == "expired":
            Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
        elif end == "deleted":
            user.delete()
        else:  # the session's hash of the password no longer matches
            user.set_password("a new one entirely")
            user.save()
        response = client.get(PRIVATE)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], end


@pytest.fixture
def rename_migration():
    return importlib.import_module("corpus.migrations.0010_sessions_sign_in_backend")


def test_sessions_signed_in_before_the_upgrade_stay_signed_in(rename_migration):
    user = UserFactory()
    old = Client()
    old.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    assert old.get(PRIVATE).status_code == 302  # the old backend's name is no longer listed
    other = DjangoStore()
    other["note"] = "no sign-in"
    other.save()
    Session.objects.create(
        session_key="u" * 32, session_data="not signed data", expire_date=timezone.now()
    )
    untouched = {s.pk: s.session_data for s in Session.objects.exclude(pk=old.session.session_key)}
    editor = SimpleNamespace(connection=connection)

    rename_migration.forwards(apps, editor)
    assert old.get(PRIVATE).status_code == 200
    assert old.session[BACKEND_SESSION_KEY] == BACKEND
    assert {
        s.pk: s.session_data for s in Session.objects.exclude(pk=old.session.session_key)
    } == untouched

    rename_migration.backwards(apps, editor)
    assert old.session[BACKEND_SESSION_KEY] == "django.contrib.auth.backends.ModelBackend"
