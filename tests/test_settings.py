"""Production settings refuse to start without a secret and pass Django's deploy checks;
cookies, framing, session rotation at login and the absence of self sign-up."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client
from django.urls import get_resolver

from tests.factories import PASSWORD, UserFactory

REPO = Path(__file__).resolve().parents[1]


def run_manage(*args, **env_overrides):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "SECRET_KEY", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_to_start_without_secret_key():
    result = run_manage("check")
    assert result.returncode == 2
    assert "SECRET_KEY is not set" in result.stderr and "Traceback" not in result.stderr


def test_a_setting_the_environment_gets_wrong_is_named_without_a_traceback():
    for variable, value, said in [
        ("DB_CONN_MAX_AGE", "sixty", "DB_CONN_MAX_AGE is 'sixty': set it to a whole number."),
        ("GOLDSET_MAX_UPLOAD_BYTES", "25MB", "GOLDSET_MAX_UPLOAD_BYTES is '25MB'"),
        ("DATABASE_URL", "goldset.sqlite3", "DATABASE_URL is not a database address"),
        ("DATABASE_URL", "postgres://u@host:port/db", "DATABASE_URL is not a database address"),
        ("GOLDSET_ARTIFACT_STORAGE_OPTIONS", "{bucket: x}", "is not JSON"),
        ("GOLDSET_ARTIFACT_STORAGE_OPTIONS", '["x"]', "must be a JSON object"),
        ("GOLDSET_SAMPLE_WEEKDAY", "funday", "GOLDSET_SAMPLE_WEEKDAY 'funday' or"),
        ("GOLDSET_SAMPLE_HOUR", "25", "GOLDSET_SAMPLE_HOUR '25' is not a crontab"),
    ]:
        result = run_manage("check", DEBUG="1", **{variable: value})
        assert result.returncode == 2, (variable, value, result.stdout)
        assert said in result.stderr and "Traceback" not in result.stderr, result.stderr
    # A blank entry (as a compose file's `VARIABLE:` sets it) keeps the default.
    assert run_manage("check", DEBUG="1", GOLDSET_TRACE_MAX_BATCH="").returncode == 0


def test_check_deploy_is_clean_with_production_variables():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        SECRET_KEY="x" * 20 + "-production-secret-with-enough-entropy-0123456789",
        ALLOWED_HOSTS="goldset.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_no_accounts_exist_until_the_demo_is_loaded(db, django_user_model):
    assert not django_user_model.objects.exists()


def test_production_cookies_and_headers_are_hardened():
    result = run_manage(
        "shell",
        "-c",
        "import json; from django.conf import settings as s; print(json.dumps({name: "
        "getattr(s, name) for name in ('SESSION_COOKIE_SECURE', 'SESSION_COOKIE_HTTPONLY', "
        "'SESSION_COOKIE_SAMESITE', 'CSRF_COOKIE_SECURE', 'CSRF_COOKIE_HTTPONLY', "
        "'CSRF_COOKIE_SAMESITE', 'X_FRAME_OPTIONS', 'SECURE_SSL_REDIRECT', "
        "'SECURE_CONTENT_TYPE_NOSNIFF')}))",
        SECRET_KEY="x" * 20 + "-production-secret-with-enough-entropy-0123456789",
        ALLOWED_HOSTS="goldset.example.com",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "SESSION_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "CSRF_COOKIE_SECURE": True,
        "CSRF_COOKIE_HTTPONLY": True,
        "CSRF_COOKIE_SAMESITE": "Lax",
        "X_FRAME_OPTIONS": "DENY",
        "SECURE_SSL_REDIRECT": True,
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
    }


def test_logging_in_rotates_the_session_and_answers_with_hardened_cookies(db):
    user = UserFactory(username="lina")
    client = Client()
    page = client.get("/accounts/login/")
    assert page["X-Frame-Options"] == "DENY"
    # A session planted before login (session fixation) must not survive it.
    planted = SessionStore()
    planted["planted"] = True
    planted.create()
    client.cookies[settings.SESSION_COOKIE_NAME] = planted.session_key
    response = client.post("/accounts/login/", {"username": "lina", "password": PASSWORD})
    assert response.status_code == 302
    cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie.value and cookie.value != planted.session_key
    assert not SessionStore().exists(planted.session_key)
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert SessionStore(session_key=cookie.value)["_auth_user_id"] == str(user.pk)
    assert response["X-Frame-Options"] == "DENY"


def test_there_is_no_self_sign_up(db):
    accounts = [str(p.pattern) for p in get_resolver().url_patterns]
    # Log in, log out, and change one's own password (which needs the old one): no sign-up,
    # no reset by e-mail.
    assert [p for p in accounts if p.startswith("accounts/")] == [
        "accounts/login/",
        "accounts/logout/",
        "accounts/password/",
        "accounts/password/done/",
    ]
    client = Client()
    for path in ("/accounts/signup/", "/accounts/register/", "/admin/register/"):
        assert client.get(path).status_code in (302, 404), path  # the admin redirects to log in
    page = client.get("/accounts/login/").content.decode().lower()
    assert "sign up" not in page and "register" not in page


def test_postgresql_binds_on_the_server_and_prepares_statements_unless_told_not_to():
    show = "import json; from django.conf import settings as s; print(json.dumps(s.DATABASES))"

    def options(url, **env):
        result = run_manage("shell", "-c", show, DEBUG="1", DATABASE_URL=url, **env)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])["default"].get("OPTIONS", {})

    postgres = "postgres://goldset@127.0.0.1:5432/goldset"
    prepared = {"server_side_binding": True, "prepare_threshold": 5}
    no_jit = {"options": "-c jit=off"}
    assert options(postgres) == prepared | no_jit
    assert options(postgres, DB_PREPARED_STATEMENTS="0") == no_jit
    assert options(postgres, DB_JIT="1") == prepared
    sqlite = options("sqlite:///goldset.sqlite3")
    assert "server_side_binding" not in sqlite and "options" not in sqlite


def test_postgresql_sessions_run_without_jit(db):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only; CI runs it.")
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
