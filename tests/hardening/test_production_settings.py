"""Safe by default: DEBUG off, no start with the built-in key, `check --deploy` clean in production."""
import os
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


SHOW_KNOBS = ("from django.conf import settings as s; from tracker.github.client import client_from_settings; "
              "from tracker.services.paddle_envs import envs_dir; "
              "print(repr((s.GITHUB_PR_REPOS, s.GITHUB_BOT_ACCOUNTS, s.DIAGNOSE_MAX_CONFIGS, s.DIAGNOSE_TIMEOUT, "
              "client_from_settings().max_wait, str(envs_dir()), s.PIP_FIND_LINKS)))")


def test_every_knob_is_read_once_by_settings_and_its_readers_use_it(tmp_path):
    env = clean_env(DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
                    GITHUB_PR_REPOS=" PaddlePaddle/Paddle , PFCCLab/PaddleAPITest ,",
                    GITHUB_BOT_ACCOUNTS="paddle-bot,  board-poster ", DIAGNOSE_MAX_CONFIGS="3", DIAGNOSE_TIMEOUT="7.5",
                    GITHUB_RATE_LIMIT_MAX_WAIT="30", PADDLE_ENVS_DIR=str(tmp_path / "envs"),
                    PIP_FIND_LINKS=f"{tmp_path / 'a'} {tmp_path / 'b'}")
    result = manage(env, "shell", "-v", "0", "-c", SHOW_KNOBS)
    assert result.stdout.strip() == repr((
        ["PaddlePaddle/Paddle", "PFCCLab/PaddleAPITest"], ["paddle-bot", "board-poster"], 3, 7.5, 30.0,
        str(tmp_path / "envs"), [str(tmp_path / "a"), str(tmp_path / "b")])), result.stderr


def test_unset_knobs_take_their_one_default_and_a_bad_number_stops_the_start_naming_it(tmp_path):
    env = clean_env(DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    for name in ("GITHUB_PR_REPOS", "GITHUB_BOT_ACCOUNTS", "DIAGNOSE_MAX_CONFIGS", "DIAGNOSE_TIMEOUT",
                 "GITHUB_RATE_LIMIT_MAX_WAIT", "PADDLE_ENVS_DIR", "PIP_FIND_LINKS"):
        env.pop(name, None)
    result = manage(env, "shell", "-v", "0", "-c", SHOW_KNOBS)
    wheels = ["/opt/wheels"] if os.path.isdir("/opt/wheels") else []  # the documented fallback of PIP_FIND_LINKS
    assert result.stdout.strip() == repr((
        ["PaddlePaddle/Paddle", "PFCCLab/PaddleAPITest"], ["paddle-bot", "paddle-ci-bot", "github-actions[bot]"],
        12, 300.0, 900.0, str(REPO / "var" / "paddle-envs"), wheels)), result.stderr

    refused = manage({**env, "RUNNER_SHARD_SIZE": "twenty"}, "check")
    assert refused.returncode != 0
    assert "ImproperlyConfigured: RUNNER_SHARD_SIZE must be an integer, not 'twenty'" in refused.stderr
