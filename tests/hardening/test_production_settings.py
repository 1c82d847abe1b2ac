"""Safe by default: DEBUG off, no start with the built-in key, `check --deploy` clean in production."""
import subprocess

from .production import PRODUCTION_ENV, PYTHON, REPO, clean_env


def manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


# `check --deploy` clean under this environment once migrate and collectstatic ran: tests/hardening/test_operator_path.py.


def test_the_documented_variables_are_in_the_deployment_doc():
    doc = (REPO / "docs" / "deployment.md").read_text(encoding="utf-8")
    for name in PRODUCTION_ENV:
        assert name in doc, f"docs/deployment.md does not document {name}"
    assert "scripts/serve.sh" in doc


def test_without_a_secret_key_and_debug_off_the_site_refuses_to_start(tmp_path):
    result = manage(clean_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}"), "check")
    assert result.returncode != 0
    assert "ImproperlyConfigured: DJANGO_SECRET_KEY is not set and DEBUG is off" in result.stderr


def test_debug_is_off_unless_asked_for_and_security_follows_it(tmp_path):
    show = ("from django.conf import settings as s; print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.STORAGES['staticfiles']['BACKEND'].rsplit('.', 1)[1])")
    database = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    production = manage(clean_env(DJANGO_SECRET_KEY="x" * 60, DATABASE_URL=database), "shell", "-v", "0", "-c", show)
    assert production.stdout.split() == ["False", "True", "True", "True", "0", "CompressedManifestStaticFilesStorage"], production.stderr
    developer = manage(clean_env(DJANGO_DEBUG="1", DATABASE_URL=database), "shell", "-v", "0", "-c", show)
    assert developer.stdout.split() == ["True", "False", "False", "False", "0", "StaticFilesStorage"], developer.stderr


def test_the_developer_script_turns_debug_on():
    assert 'export DJANGO_DEBUG="${DJANGO_DEBUG:-1}"' in (REPO / "scripts" / "run.sh").read_text()


def test_sqlite_runs_in_wal_mode_with_immediate_transactions(tmp_path):
    show = ("from django.db import connection as c; c.ensure_connection(); cur = c.cursor(); "
            "print(cur.execute('PRAGMA journal_mode').fetchone()[0], cur.execute('PRAGMA busy_timeout').fetchone()[0], "
            "cur.execute('PRAGMA synchronous').fetchone()[0], c.transaction_mode)")
    result = manage(clean_env(DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}"), "shell", "-v", "0", "-c", show)
    assert result.stdout.split() == ["wal", "30000", "1", "IMMEDIATE"], result.stderr
