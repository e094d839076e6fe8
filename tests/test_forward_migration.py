"""A database filled by the code from before the issue 31 redesign migrates forward with every
row, permission and admin page intact (PostgreSQL only).

`tests/data/pre_redesign/demo.sql.gz` was made by `make_dump.py` beside it, at commit e7b2b4f:
`load_demo`, then grading, adjudication, a finalised gold set, traces, answer reviews, test
users, a permission replay, index health, and an auth group and a user holding some of the
app's model permissions. The test restores it into a scratch database, runs `manage.py
migrate`, and checks what users and admins would notice: tables (pinned by `Meta.db_table`) and
their rows, content type and permission ids, the groups and users holding each permission, the
admin's pages and a labeller's sign-in.

Run as a module (``python -m tests.test_forward_migration``, Django set up on the migrated
database), it prints what the test asserts on as JSON: the checks that need Django run in a
process of their own, on that database.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

# Run as a module, this file sets Django up itself (pytest-django does under pytest).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "pre_redesign"
ON_POSTGRES = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
# Tables whose rows a migration of the redesign may add to, and why. Any other table keeps its
# exact row count; a migration that adds rows elsewhere names the table and its reason here.
ROWS_ADDED_BY_MIGRATIONS = {
    "django_migrations": "every new migration is recorded",
    "django_content_type": "models new in the redesign get a content type",
    "auth_permission": "and their four permissions",
}
# The demo's accounts (evaluation/management/commands/load_demo.py at e7b2b4f).
SUPERUSER = "admin"
LABELLER = ("labeller1", "goldset-labeller1")
DEMO_PROJECT = "demo"

pytestmark = pytest.mark.skipif(
    not ON_POSTGRES,
    reason="restores a PostgreSQL dump (pg_dump) and migrates it: set DATABASE_URL to "
    "PostgreSQL, as .ci/run does",
)


def _pg_env() -> dict[str, str]:
    db = settings.DATABASES["default"]
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(PGHOST=db["HOST"] or "127.0.0.1", PGPORT=str(db["PORT"] or 5432))
    env.update(PGUSER=db["USER"] or "postgres")
    if db["PASSWORD"]:
        env["PGPASSWORD"] = db["PASSWORD"]
    return env


def _psql(env: dict, database: str, sql: str) -> list[list[str]]:
    out = subprocess.run(
        ["psql", "-v", "ON_ERROR_STOP=1", "-d", database, "-AtF", "\t", "-c", sql],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def _holders(env: dict, database: str) -> dict[str, list]:
    """Who holds which permission, and which groups each user is in, by ids."""
    return {
        "group_permissions": sorted(
            _psql(env, database, "select group_id, permission_id from auth_group_permissions")
        ),
        "user_permissions": sorted(
            _psql(env, database, "select user_id, permission_id from auth_user_user_permissions")
        ),
        "user_groups": sorted(
            _psql(env, database, "select user_id, group_id from auth_user_groups")
        ),
    }


def _table_counts(env: dict, database: str) -> dict[str, int]:
    rows = _psql(
        env,
        database,
        "select tablename, (xpath('/row/c/text()', query_to_xml("
        "format('select count(*) as c from %I', tablename), false, true, '')))[1]::text "
        "from pg_tables where schemaname = 'public'",
    )
    return {table: int(count) for table, count in rows}


@pytest.fixture
def scratch_database():
    env = _pg_env()
    name = f"{settings.DATABASES['default']['NAME']}_forward_migration"
    subprocess.run(["dropdb", "--if-exists", name], env=env, check=True, capture_output=True)
    subprocess.run(["createdb", name], env=env, check=True)
    try:
        yield env, name
    finally:
        subprocess.run(["dropdb", "--if-exists", "--force", name], env=env, check=True)


def test_a_database_from_before_the_redesign_migrates_with_every_row_permission_and_page(
    scratch_database,
):
    env, name = scratch_database
    expected = json.loads((DATA / "expected.json").read_text())
    restored = subprocess.run(
        ["psql", "-v", "ON_ERROR_STOP=1", "-q", "-d", name],
        input=gzip.decompress((DATA / "demo.sql.gz").read_bytes()),
        env=env,
        capture_output=True,
    )
    assert restored.returncode == 0, restored.stderr.decode()[-2000:]
    assert _table_counts(env, name) == expected["tables"], "the dump and expected.json disagree"
    held_before = _holders(env, name)

    password = settings.DATABASES["default"]["PASSWORD"]
    login = f"{env['PGUSER']}:{password}" if password else env["PGUSER"]
    django_env = {
        **env,
        "DATABASE_URL": f"postgres://{login}@{env['PGHOST']}:{env['PGPORT']}/{name}",
        "DJANGO_SETTINGS_MODULE": "goldset.settings",
        "DEBUG": "1",
        "GOLDSET_LOCAL_WORKER": "0",
        # The test client's host, for the pages checked below.
        "ALLOWED_HOSTS": "testserver",
    }
    manage = [sys.executable, "manage.py"]
    migrated = subprocess.run(
        [*manage, "migrate", "--noinput"], env=django_env, cwd=REPO, capture_output=True, text=True
    )
    assert migrated.returncode == 0, migrated.stdout[-2000:] + migrated.stderr[-2000:]
    pending = subprocess.run(
        [*manage, "makemigrations", "--check", "--dry-run"],
        env=django_env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert pending.returncode == 0, f"models and migrations disagree:\n{pending.stdout}"

    # Tables keep their names and rows.
    counts = _table_counts(env, name)
    for table, before in expected["tables"].items():
        assert table in counts, f"table {table} is gone (tables are pinned with Meta.db_table)"
        if table in ROWS_ADDED_BY_MIGRATIONS:
            assert counts[table] >= before, f"{table} lost rows: {before} -> {counts[table]}"
        else:
            assert counts[table] == before, f"{table}: {before} rows before, {counts[table]} after"

    # Content types keep their ids; a moved model's may name its new app.
    content_types = {
        int(i): (app, model)
        for i, app, model in _psql(
            env, name, "select id, app_label, model from django_content_type"
        )
    }
    renamed = {}
    for ct_id, app, model in expected["content_types"]:
        assert ct_id in content_types, f"content type {ct_id} ({app}.{model}) is gone"
        now = content_types[ct_id]
        assert now[1] == model, f"content type {ct_id}: model {model} became {now[1]}"
        if now != (app, model):
            renamed[f"{app}.{model}"] = ".".join(now)
    # Permissions keep their ids, codenames and holders.
    permissions = {
        int(i): (int(ct), codename)
        for i, ct, codename in _psql(
            env, name, "select id, content_type_id, codename from auth_permission"
        )
    }
    for perm_id, ct_id, codename in expected["permissions"]:
        assert perm_id in permissions, f"permission {perm_id} ({codename}) is gone"
        assert permissions[perm_id] == (ct_id, codename), (
            f"permission {perm_id} was ({ct_id}, {codename}), is {permissions[perm_id]}"
        )
    assert _holders(env, name) == held_before, "a group or user lost or gained a permission"
    print("content types renamed by the migrations:", json.dumps(renamed, indent=1))

    checked = subprocess.run(
        [sys.executable, "-m", "tests.test_forward_migration"],
        env=django_env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    report = json.loads(checked.stdout.splitlines()[-1])
    live = set(report["live_content_types"])
    stale = [
        f"{app}.{model}" for ct_id, app, model in expected["content_types"] if ct_id not in live
    ]
    assert not stale, f"content types left without a model (permissions stranded): {stale}"
    assert report["admin_index"] == 200
    assert report["pages"], "the admin lists no model"
    failed = {url: status for url, status in report["pages"].items() if status != 200}
    assert not failed, f"admin pages not 200 for the dump's superuser: {failed}"
    assert report["labeller_sign_in"] == 302, "the dump's labeller cannot sign in"
    assert report["labeller_queue"] == 200


def inspect_migrated() -> dict:
    """What needs Django on the migrated database: live content types, the admin's pages for
    the dump's superuser, and the dump's labeller signing in and opening their queue."""
    from django.contrib import admin
    from django.contrib.admin.utils import quote
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType
    from django.test import Client, RequestFactory
    from django.urls import NoReverseMatch, reverse

    live = [ct.pk for ct in ContentType.objects.all() if ct.model_class() is not None]
    superuser = get_user_model().objects.get(username=SUPERUSER)
    client = Client()
    client.force_login(superuser)
    request = RequestFactory().get(reverse("admin:index"))
    request.user = superuser
    pages = {}
    for app in admin.site.get_app_list(request):
        for entry in app["models"]:
            model = entry["model"]
            if entry.get("admin_url"):
                pages[entry["admin_url"]] = client.get(entry["admin_url"]).status_code
            first = model._default_manager.order_by("pk").first()
            if first is None:
                continue
            try:
                url = reverse(
                    f"admin:{model._meta.app_label}_{model._meta.model_name}_change",
                    args=[quote(first.pk)],
                )
            except NoReverseMatch:
                continue
            pages[url] = client.get(url).status_code
    labeller = Client()
    username, password = LABELLER
    signed_in = labeller.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR="127.0.0.1"
    )
    queue = labeller.get(reverse("labelling:show-queue", args=[DEMO_PROJECT]))
    return {
        "live_content_types": live,
        "admin_index": client.get(reverse("admin:index")).status_code,
        "pages": pages,
        "labeller_sign_in": signed_in.status_code,
        "labeller_queue": queue.status_code,
    }


if __name__ == "__main__":
    import django

    django.setup()
    print(json.dumps(inspect_migrated()))
