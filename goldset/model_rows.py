"""Model instances from the rows of hand-written SQL, as `Model.objects.raw()` makes them.

`raw()` works out again for every query it runs which column is which field and which
converters each column needs, from the cursor's description (psycopg builds an object per
column for it). The hot reads of a grading request know their columns when the SQL is
written, so a `RowShape` works that out once per process, and turning rows into instances
costs only the converters and `Model.from_db`. Everything else is the ORM's: the fields, their
converters, deferred loading of the columns not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Field, Model


@dataclass(frozen=True)
class RowShape:
    """Rows of `len(fields)` model columns, in that order, then one column per `extra` name
    (set on the instance as it comes from the database, as `raw()` sets annotations)."""

    model: type[Model]
    names: tuple[str, ...]
    extra: tuple[str, ...]
    converters: tuple[tuple[int, tuple, object], ...]  # (position, converters, column)

    def instances(self, rows: Iterable[Sequence], *, connection) -> list[Model]:
        width, found = len(self.names), []
        for row in rows:
            if self.converters:
                row = list(row)
                for position, converters, column in self.converters:
                    value = row[position]
                    for convert in converters:
                        value = convert(value, column, connection)
                    row[position] = value
            instance = self.model.from_db(connection.alias, self.names, row[:width])
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
    )
