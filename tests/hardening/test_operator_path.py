"""The operator's path under the production settings: migrate makes the cache table, `check --deploy` names a
missing static manifest or cache table with the command to run, `createsuperuser --noinput` applies the
password validators."""
import sqlite3
import subprocess

import pytest

from .production import PRODUCTION_ENV, PYTHON, REPO, clean_env


def manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def production(tmp_path):
    return clean_env(**PRODUCTION_ENV, DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
                     DJANGO_STATIC_ROOT=str(tmp_path / "static"))


def tables(env: dict) -> set[str]:
    with sqlite3.connect(env["DATABASE_URL"].removeprefix("sqlite:///")) as db:
        return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_check_deploy_names_each_missing_step_until_it_is_done(production):
    result = manage(production, "check", "--deploy")
    assert result.returncode != 0
    assert "tracker.E101" in result.stderr and "python manage.py collectstatic --noinput" in result.stderr
    assert "tracker.E102" in result.stderr and "'board_cache'" in result.stderr
    assert "python manage.py migrate" in result.stderr

    # migrate alone makes the cache's table (no createcachetable): only the static files are left.
    assert manage(production, "migrate", "--noinput").returncode == 0
    assert "board_cache" in tables(production)
    result = manage(production, "check", "--deploy")
    assert result.returncode != 0 and "tracker.E101" in result.stderr and "tracker.E102" not in result.stderr

    assert manage(production, "collectstatic", "--noinput").returncode == 0
    result = manage(production, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_a_dropped_cache_table_fails_check_deploy(production):
    assert manage(production, "migrate", "--noinput").returncode == 0
    with sqlite3.connect(production["DATABASE_URL"].removeprefix("sqlite:///")) as db:
        db.execute("DROP TABLE board_cache")
    result = manage(production, "check", "--deploy")
    assert result.returncode != 0 and "tracker.E102" in result.stderr
    assert manage(production, "migrate", "--noinput").returncode == 0  # a migrate with nothing to apply makes it
    assert "board_cache" in tables(production)


def test_createsuperuser_noinput_applies_the_password_validators(production):
    assert manage(production, "migrate", "--noinput").returncode == 0
    for password, reason in [("a", "too short"), ("12345678901", "entirely numeric"), ("password123", "too common"),
                             ("operator-admin", "too similar")]:
        result = manage({**production, "DJANGO_SUPERUSER_PASSWORD": password}, "createsuperuser", "--noinput",
                        "--username", "operator-admin", "--email", "ops@example.org")
        assert result.returncode != 0, password
        assert "DJANGO_SUPERUSER_PASSWORD refused" in result.stderr and reason in result.stderr, result.stderr
        with sqlite3.connect(production["DATABASE_URL"].removeprefix("sqlite:///")) as db:
            assert db.execute("SELECT COUNT(*) FROM auth_user").fetchone() == (0,)

    result = manage({**production, "DJANGO_SUPERUSER_PASSWORD": "plum-orbit-cascade-42"}, "createsuperuser",
                    "--noinput", "--username", "operator-admin", "--email", "ops@example.org")
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(production["DATABASE_URL"].removeprefix("sqlite:///")) as db:
        assert db.execute("SELECT username, is_superuser FROM auth_user").fetchall() == [("operator-admin", 1)]
