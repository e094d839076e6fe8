"""The two reads every request of a signed-in user makes, its session and its user, each one
plain SELECT.

Django builds both queries through the ORM on every request (a queryset, its WHERE compiled,
the model's columns listed). By callgrind that was 1.9 M of the 5.1 M instructions of the
cheapest signed-in request, and a tenth of a grade. The SQL never changes, so it is written
out once here; keys, signing, saving, expiry, `clearsessions`, the password check at log-in and
the session's check against the password hash stay Django's own.

`SESSION_ENGINE = "goldset.sessions"` and `SessionUserBackend` in `AUTHENTICATION_BACKENDS`
(in place of Django's `ModelBackend`, which it is, but for how it reads the user).
"""

from __future__ import annotations

from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.core.exceptions import ValidationError
from django.db import connections, router
from django.utils import timezone

from goldset.model_rows import RowShape, row_shape


class SessionStore(DatabaseSessionStore):
    """Django's database session store, reading the session row without the ORM."""

    def load(self) -> dict:
        data = self._stored_data()
        return self.decode(data) if data is not None else {}

    def _stored_data(self) -> str | None:
        """The unexpired session's encoded data, or None; then, as Django does, the key is
        dropped, so that a new session gets a new key rather than this one."""
        if self.session_key is None:
            return None
        connection = connections[router.db_for_read(self.model)]
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        with connection.cursor() as cursor:
            cursor.execute(
                _session_select(connection.alias, connection.vendor), [self.session_key, now]
            )
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return row[0]


@cache
def _session_select(alias: str, vendor: str) -> str:
    from django.contrib.sessions.models import Session

    q = connections[alias].ops.quote_name
    return (
        f"SELECT {q('session_data')} FROM {q(Session._meta.db_table)} "  # noqa: S608 - names only
        f"WHERE {q('session_key')} = %s AND {q('expire_date')} > %s"
    )


class SessionUserBackend(ModelBackend):
    """Django's `ModelBackend` (log-in, permissions), with the user of a session read by one
    plain SELECT of the user's columns."""

    def get_user(self, user_id):
        model = get_user_model()
        connection = connections[router.db_for_read(model)]
        try:
            key = model._meta.pk.to_python(user_id)
        except ValidationError:  # a session naming no user that could exist
            return None
        sql, shape = _user_select(connection.alias, connection.vendor)
        users = shape.read(sql, [key], connection=connection)
        if not users:
            return None
        return users[0] if self.user_can_authenticate(users[0]) else None


@cache
def _user_select(alias: str, vendor: str) -> tuple[str, RowShape]:
    # Built with the first thread's connection of `alias`; what it keeps of it (the backend's
    # converters) depends only on the alias's settings, the same in every thread.
    model = get_user_model()
    connection = connections[alias]
    q = connection.ops.quote_name
    fields = model._meta.concrete_fields
    columns = ", ".join(q(field.column) for field in fields)
    table, key = q(model._meta.db_table), q(model._meta.pk.column)
    sql = f"SELECT {columns} FROM {table} WHERE {key} = %s"  # noqa: S608 - names only
    return sql, row_shape(model, fields, connection=connection)
