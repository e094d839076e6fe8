"""Model instances from the rows of hand-written SQL, as `Model.objects.raw()` makes them.

`raw()` works out again for every query it runs which column is which field and which
converters each column needs, from the cursor's description (psycopg builds an object per
column for it). The hot reads of a grading request know their columns when the SQL is
written, so a `RowShape` works that out once per process, and turning rows into instances
costs only the converters and filling each instance's attributes. Everything else is the
ORM's: the fields, their converters, deferred loading of the columns not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from inspect import getattr_static

from django.db.models import Field, Model
from django.db.models.base import ModelState
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init


@dataclass(frozen=True)
class RowShape:
    """Rows of `len(fields)` model columns, in that order, then one column per `extra` name
    (set on the instance as it comes from the database, as `raw()` sets annotations)."""

    model: type[Model]
    names: tuple[str, ...]
    extra: tuple[str, ...]
    converters: tuple[tuple[int, tuple, object], ...]  # (position, converters, column)
    # Whether `Model.from_db` would do no more than store the values in the instance's
    # `__dict__` (see `_stores_plainly`), so that they can be stored there directly.
    plain: bool = False

    def instances(self, rows: Iterable[Sequence], *, connection) -> list[Model]:
        width, found, alias = len(self.names), [], connection.alias
        direct = self.plain and not (
            pre_init.has_listeners(self.model) or post_init.has_listeners(self.model)
        )
        model, names, every = self.model, self.names, self.names + self.extra
        for row in rows:
            if self.converters:
                row = list(row)
                for position, converters, column in self.converters:
                    value = row[position]
                    for convert in converters:
                        value = convert(value, column, connection)
                    row[position] = value
            if direct:
                # What `from_db` ends with, without its per-field `setattr` through the
                # descriptors and its two signals that no one listens to, which were most of
                # the cost of turning a grade's ten passages into instances.
                instance = model.__new__(model)
                state = ModelState()
                state.adding, state.db = False, alias
                instance.__dict__.update(zip(every, row, strict=True), _state=state)
            else:
                instance = model.from_db(alias, names, row[:width])
                for name, value in zip(self.extra, row[width:], strict=True):
                    setattr(instance, name, value)
            found.append(instance)
        return found

    def read(self, sql: str, params: Sequence, *, connection) -> list[Model]:
        """The instances of the rows `sql` returns."""
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return self.instances(cursor.fetchall(), connection=connection)


def row_shape(
    model: type[Model], fields: Sequence[Field], *, extra: Sequence[str] = (), connection
) -> RowShape:
    """The shape of rows that hold `fields` of `model` (the primary key among them) and then
    `extra`. Build it once per process and database (the converters come from its backend)."""
    if model._meta.pk not in fields:
        raise ValueError(f"a row of {model.__name__} must hold its primary key")
    converters = []
    for position, field in enumerate(fields):
        column = field.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if found:
            converters.append((position, tuple(found), column))
    return RowShape(
        model=model,
        names=tuple(field.attname for field in fields),
        extra=tuple(extra),
        converters=tuple(converters),
        plain=_stores_plainly(model, extra),
    )


def _stores_plainly(model: type[Model], extra: Sequence[str]) -> bool:
    """Whether `Model.__init__`, given every column value, only stores each in the instance's
    `__dict__`: true when each concrete field is reached through Django's plain deferred
    attribute (a foreign key's only drops a cached related object, and a new instance has
    none), the model overrides neither `__init__` nor `from_db`, and no extra name is a class
    attribute (a property would be bypassed). Signals are checked when rows are read."""
    if model.__init__ is not Model.__init__ or model.from_db.__func__ is not Model.from_db.__func__:
        return False
    plain = (DeferredAttribute, ForeignKeyDeferredAttribute)
    fields = model._meta.concrete_fields
    if any(type(getattr_static(model, field.attname, None)) not in plain for field in fields):
        return False
    return not any(hasattr(model, name) for name in extra)
