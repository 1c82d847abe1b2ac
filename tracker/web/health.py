"""Is the database there? The start-up check (config/wsgi.py), GET /healthz, and the 503 the site answers
when a query fails for the database's sake (web/middleware.py) share these answers.

SQLite creates a missing file on the first connection: a deleted database would come back empty and
every page would answer 500 ("no such table"). The file is checked without opening it for writing, and
a database without Django's tables is named as such, with the command to run.
"""
from __future__ import annotations

import sqlite3
import urllib.parse
from contextlib import closing
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, OperationalError, connections
from django.http import HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

RESTORE_OR_MIGRATE = ("restore it from a backup, or run `python manage.py migrate` then "
                      "`python manage.py bootstrap_board` for a new board")


def sqlite_file_problem(database: dict) -> str | None:
    """What is wrong with a SQLite database's file (missing, or without Django's tables); None when it is
    fine or the database is not a SQLite file. Opened read-only: this check never creates the file. The
    answer names no path (GET /healthz is public); `database_path` gives it to the operator."""
    path = database_path(database)
    if path is None:
        return None
    if not path.is_file():
        return f"the SQLite database file (DATABASE_URL) does not exist: {RESTORE_OR_MIGRATE}"
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            has_tables = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'django_migrations'").fetchone()
    except sqlite3.Error as error:
        return f"the SQLite database file (DATABASE_URL) cannot be read ({error})"
    if not has_tables:
        return (f"the SQLite database file (DATABASE_URL) has no tables (new, or its file was replaced): "
                f"{RESTORE_OR_MIGRATE}")
    return None


def database_path(database: dict) -> Path | None:
    """The file of a SQLite database (None for another engine or an in-memory database)."""
    name = str(database.get("NAME") or "")
    if "sqlite" not in database.get("ENGINE", "") or not name or name == ":memory:":
        return None
    if name.startswith("file:"):  # a URI (check_at_start's own, or an operator's): only a plain file's path
        parsed = urllib.parse.urlsplit(name)
        if parsed.query and "mode=rw" not in parsed.query or "mode=memory" in parsed.query:
            return None
        return Path(urllib.parse.unquote(parsed.path))
    return Path(name)


def check_at_start() -> None:
    """Refuse to start a web process on a missing or empty SQLite file (config/wsgi.py): the operator
    sees why and what to run, instead of a site that answers 500 to every page. Then the process opens
    the file only if it exists (SQLite's `mode=rw`): a file deleted while the site runs stays deleted and
    every page says so (503), instead of coming back empty. `manage.py migrate` still creates it."""
    database = connections.settings["default"]
    if problem := sqlite_file_problem(database):
        raise ImproperlyConfigured(f"{problem} [{database_path(database)}]")
    if (path := database_path(database)) is not None:
        database["NAME"] = f"{path.resolve().as_uri()}?mode=rw"
        database.setdefault("OPTIONS", {})["uri"] = True


def database_problem(alias: str = "default") -> str | None:
    """Why the database cannot serve the board, or None: the file check, then one query."""
    if problem := sqlite_file_problem(connections[alias].settings_dict):
        return problem
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1 FROM django_migrations LIMIT 1")
    except DatabaseError as error:
        return (f"the database cannot be queried ({type(error).__name__}): check that it is running and "
                f"reachable; if it has no tables, {RESTORE_OR_MIGRATE}")
    return None


def unavailable_message(error: OperationalError) -> str:
    """The 503's text for a query that failed for the database's sake: what is wrong and what to do. The
    driver's own message is classified, never echoed (it may name hosts or paths)."""
    text = str(error).lower()
    if ("no such table" in text or "unable to open database file" in text
            or "does not exist" in text and "relation" in text):
        return _("The database is missing or has no tables: its file was deleted or replaced, or it is new. "
                 "The operator should restore it from a backup, or run `python manage.py migrate` then "
                 "`python manage.py bootstrap_board` for a new board.")
    if "readonly" in text or "read-only" in text or "read only" in text:
        return _("The database cannot be written (it is read-only), so nothing can be recorded, sign-ins "
                 "included. The operator should make it writable again (the file's permissions, the disk, or "
                 "the database user's rights).")
    return _("The database is unavailable. The operator should check that it is running and reachable "
             "(GET /healthz says what is wrong).")


def unavailable_response(error: OperationalError) -> HttpResponse:
    response = HttpResponse(unavailable_message(error) + "\n", status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = "60"
    return response


@require_GET
def healthz(request):
    """200 "ok" when the database answers with Django's tables, else 503 with the reason and what to run
    (for a load balancer or the operator; the reason names no path, host or secret)."""
    problem = database_problem()
    if problem is None:
        return HttpResponse("ok\n", content_type="text/plain; charset=utf-8")
    return HttpResponse(problem + "\n", status=503, content_type="text/plain; charset=utf-8")
