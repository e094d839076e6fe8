"""Production settings refuse to start without a secret and pass Django's deploy checks."""

import os
import subprocess
import sys
from pathlib import Path

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
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


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
