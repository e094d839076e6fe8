"""Rows of hand-written SQL become the instances the ORM would make (`goldset.model_rows`):
the same field values, deferred columns and state, whether the values are stored directly or
through `Model.from_db` (a model with its own `__init__`, descriptors or init signals)."""

import pytest
from django.db import connection
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init
from django.utils import timezone

from corpus.models import Job
from goldset.model_rows import row_shape
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def test_rows_become_instances_as_the_orm_makes_them():
    job = Job.objects.create(
        project=ProjectFactory(), kind="index", params={"reason": 'ünïcode "q"', "k1": 0.9},
        started_at=timezone.now(),
    )  # fmt: skip
    fields = [f for f in Job._meta.concrete_fields if f.attname != "created_at"]
    q = connection.ops.quote_name
    columns = ", ".join(q(f.column) for f in fields)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns}, 41 + 1 FROM {q(Job._meta.db_table)} WHERE id = %s",  # noqa: S608
            [job.pk],
        )
        (read,) = row_shape(Job, fields, extra=["answer"], connection=connection).instances(
            cursor.fetchall(), connection=connection
        )
    orm = Job.objects.get(pk=job.pk)
    assert [getattr(read, f.attname) for f in fields] == [getattr(orm, f.attname) for f in fields]
    assert read.params == {"reason": 'ünïcode "q"', "k1": 0.9} and read.answer == 42
    assert timezone.is_aware(read.started_at)
    assert read.get_deferred_fields() == {"created_at"} and read.created_at == orm.created_at
    with pytest.raises(ValueError, match="primary key"):
        row_shape(Job, fields[1:], connection=connection)


def read_jobs(fields, extra=()):
    q = connection.ops.quote_name
    columns = ", ".join([*(q(f.column) for f in fields), *("7" for _ in extra)])
    shape = row_shape(Job, fields, extra=extra, connection=connection)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {q(Job._meta.db_table)} ORDER BY id")  # noqa: S608
        return shape, shape.instances(cursor.fetchall(), connection=connection)


def test_instances_stored_directly_are_the_ones_from_db_makes():
    project = ProjectFactory()
    for kind in ("index", "pool"):
        Job.objects.create(project=project, kind=kind, params={"k": kind})
    fields = [f for f in Job._meta.concrete_fields if f.attname != "created_at"]
    shape, direct = read_jobs(fields, extra=["answer"])
    assert shape.plain  # plain fields, no __init__ of its own: the direct path
    names = [f.attname for f in fields]
    for read in direct:
        orm = Job.from_db(connection.alias, names, [getattr(read, n) for n in names])
        ours = {k: v for k, v in vars(read).items() if k not in ("_state", "answer")}
        assert ours == {k: v for k, v in vars(orm).items() if k != "_state"}
        assert (read._state.adding, read._state.db) == (False, connection.alias)
        assert read.answer == 7 and read.get_deferred_fields() == {"created_at"}
        assert read.project == project  # the foreign key loads on first use
        read.state = "done"
        read.save(update_fields=["state"])  # saved as an update of its row, not an insert
    assert Job.objects.filter(state="done").count() == 2


def test_an_init_signal_a_property_or_a_descriptor_gets_from_db_itself():
    project = ProjectFactory()
    Job.objects.create(project=project, kind="index")
    seen = []

    def listener(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(listener, sender=Job)
    try:
        _, (read,) = read_jobs(Job._meta.concrete_fields)
    finally:
        post_init.disconnect(listener, sender=Job)
    assert seen == [read]  # the signal was sent for the row, as the ORM sends it


def test_a_property_or_a_descriptor_of_its_own_gets_from_db_itself(monkeypatch):
    Job.objects.create(project=ProjectFactory(), kind="index")
    # `pk` is a property of every model: storing it in __dict__ would hide the property.
    assert not row_shape(Job, Job._meta.concrete_fields, extra=["pk"], connection=connection).plain
    stored = []

    class Recording(DeferredAttribute):
        def __set__(self, instance, value):
            stored.append(value)
            instance.__dict__[self.field.attname] = value

    monkeypatch.setattr(Job, "kind", Recording(Job._meta.get_field("kind")))
    shape, (read,) = read_jobs(Job._meta.concrete_fields)
    assert not shape.plain and stored == ["index"] and read.kind == "index"
