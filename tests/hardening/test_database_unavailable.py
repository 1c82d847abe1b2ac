"""A database that cannot serve the board is said so, with what to do: a read-only database answers a
sign-in with 503 "read-only", never "too many attempts"; a deleted SQLite file makes every page a 503
that says to restore or migrate (and /healthz says why); a web process refuses to start on a missing or
empty file. Through config.wsgi over real HTTP, on a real SQLite file."""
from __future__ import annotations

import http.cookiejar
import re
import select
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from .production import PRODUCTION_ENV, PYTHON, REPO, clean_env

PASSWORD = "correct horse battery staple"
CREATE_STAFF = ("from django.contrib.auth.models import User; "
                f"User.objects.create_user('maint', password={PASSWORD!r}, is_staff=True)")


def _env(db: Path) -> dict:
    return clean_env(DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{db}")


def _manage(db: Path, *args: str) -> None:
    subprocess.run([PYTHON, "manage.py", *args], cwd=REPO, env=_env(db), check=True, capture_output=True, timeout=300)


@pytest.fixture
def database(tmp_path) -> Path:
    db = tmp_path / "db.sqlite3"
    _manage(db, "migrate", "--noinput")
    _manage(db, "createcachetable")
    _manage(db, "shell", "-c", CREATE_STAFF)
    return db


class Site:
    def __init__(self, db: Path, mode: str):
        self.process = subprocess.Popen([PYTHON, "-m", "tests.hardening.sqlite_server", str(db), mode], cwd=REPO,
                                        env=_env(db), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.process.stdout], [], [], 180)
        port = self.process.stdout.readline().strip() if ready else ""
        if not port:
            self.process.kill()
            self.process.wait(timeout=60)
            raise RuntimeError(self.process.stderr.read())
        self.url = f"http://127.0.0.1:{port}"
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def request(self, path: str, form: dict | None = None, headers: dict | None = None) -> tuple[int, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.url + path, data=data, headers=headers or {})
        try:
            with self.opener.open(request, timeout=60) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def sign_in(self, password: str) -> tuple[int, str]:
        status, page = self.request("/accounts/login/")
        assert status == 200, page[:500]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        return self.request("/accounts/login/", {"username": "maint", "password": password,
                                                 "csrfmiddlewaretoken": token, "next": "/runs"})

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        for stream in (self.process.stdout, self.process.stderr):
            stream.close()


@pytest.fixture
def serve():
    sites = []

    def start(db: Path, mode: str = "rw") -> Site:
        sites.append(Site(db, mode))
        return sites[-1]

    yield start
    for site in sites:
        site.stop()


def test_a_read_only_database_answers_sign_ins_with_503_not_too_many_attempts(database, serve):
    site = serve(database, "ro")
    status, page = site.request("/")  # reading still works
    assert status == 200 and "<table" in page
    for password in ("wrong password", PASSWORD):
        status, page = site.sign_in(password)
        assert status == 503, (status, page[:300])
        assert "read-only" in page and "Too many" not in page and "too many" not in page


def test_a_deleted_sqlite_file_answers_503_with_what_to_run(database, serve):
    site = serve(database)
    assert site.request("/")[0] == 200 and site.request("/healthz") == (200, "ok\n")
    for leftover in database.parent.glob(database.name + "*"):  # the file and its -wal / -shm
        leftover.unlink()
    for path in ("/", "/tasks/1", "/api/tasks", "/runs"):
        status, page = site.request(path)
        assert status == 503, (path, status, page[:300])
        assert "python manage.py migrate" in page and "restore it from a backup" in page
    status, reason = site.request("/healthz")
    assert status == 503 and "does not exist" in reason and "manage.py migrate" in reason
    assert str(database.parent) not in reason  # /healthz is public: no server path
    assert not database.exists()  # not silently recreated empty by the requests
    status, page = site.request("/tasks/1", headers={"Accept-Language": "zh-hans"})
    assert status == 503 and "数据库不存在" in page and "python manage.py migrate" in page


@pytest.mark.parametrize("state", ["missing", "empty"])
def test_a_web_process_refuses_to_start_on_a_missing_or_empty_sqlite_file(tmp_path, state):
    db = tmp_path / "db.sqlite3"
    if state == "empty":
        db.touch()
    with pytest.raises(RuntimeError) as refused:
        Site(db, "rw")
    said = str(refused.value)
    assert "ImproperlyConfigured" in said and str(db) in said and "manage.py migrate" in said
    assert ("does not exist" if state == "missing" else "has no tables") in said
    assert db.exists() is (state == "empty")  # the check never creates the file


def test_serve_sh_refuses_a_missing_sqlite_file_instead_of_migrating_an_empty_board(tmp_path):
    """A production start after the SQLite file was deleted or moved says what to do and creates nothing; a new site
    says so with WEB_CREATE_DATABASE=1 and gets its database from migrate."""
    missing = tmp_path / "gone.sqlite3"
    env = clean_env(**{**PRODUCTION_ENV, "PYTHON": PYTHON, "DATABASE_URL": f"sqlite:///{missing}",
                       "DJANGO_STATIC_ROOT": str(tmp_path / "static")})
    refused = subprocess.run(["bash", str(REPO / "scripts" / "serve.sh")], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode != 0
    assert "does not exist: restore it from a backup" in refused.stderr and "WEB_CREATE_DATABASE=1" in refused.stderr
    assert not missing.exists()  # nothing was created: migrate never ran
    created = subprocess.run([PYTHON, "manage.py", "check_database_file"], cwd=REPO, capture_output=True, text=True,
                             env={**env, "WEB_CREATE_DATABASE": "1"}, timeout=120)
    assert created.returncode == 0 and "a new database" in created.stdout
