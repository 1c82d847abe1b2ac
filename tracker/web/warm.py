"""Renders the public pages an anonymous visitor lands on into the shared renderings (WEB_SHARED_RENDERINGS), so no
visitor waits for them: after a web start (scripts/serve.sh), after each run (tracker/tasks.py) and by hand
(`manage.py warm_pages`). On a year-old board each of these pages takes 0.5–5 s to compute (docs/measurements.md,
#45); a visitor who arrives first would otherwise wait for it, or, within WEB_STALE_SECONDS of the page's previous
rendering, be answered with that one.

Each page goes through the site's whole request handling (middleware, read budget, language) as a visitor's
request with no cookie: what is stored is exactly what a visitor's request would have stored. A page whose version
already has its rendering costs its version's queries only.
"""
from __future__ import annotations

import io
import logging
import sys
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler

from ..selectors import board as task_selectors

logger = logging.getLogger(__name__)

# The site's own pages (the task pages are warmed per run: `task_paths`).
SITE_PATHS = ("/", "/api/tasks", "/alignment", "/api/alignment", "/charts/overview", "/charts/heatmap",
              "/charts/releases", "/charts/contributors", "/charts/pass-fail-transitions", "/regressions", "/runs",
              "/flaky", "/api/flaky")
# A run over more tasks than this warms the site's pages only: 183 task pages in two languages are minutes of work
# for pages few visitors open right after a run, and those visitors get the previous rendering (WEB_STALE_SECONDS).
MAX_TASKS_PER_RUN = 20


@dataclass(frozen=True)
class Warmed:
    path: str
    language: str
    status: int
    seconds: float


class NotShared(Exception):
    """Renderings are each process's own (WEB_SHARED_RENDERINGS off): this process's would help no visitor."""


def task_paths(numbers) -> list[str]:
    numbers = sorted(set(numbers))
    if len(numbers) > MAX_TASKS_PER_RUN:
        return []
    return [path for number in numbers for path in (f"/tasks/{number}", f"/api/tasks/{number}")]


def every_task_path() -> list[str]:
    """Every task's page and API, the site's order (its numbers)."""
    return [path for number in task_selectors.task_numbers() for path in (f"/tasks/{number}", f"/api/tasks/{number}")]


def _host() -> str:
    """A name the site answers to (ALLOWED_HOSTS), for the request's Host header."""
    for host in settings.ALLOWED_HOSTS:
        name = host.lstrip(".")
        if name and "*" not in name:
            return name
    return "localhost"


def _environ(path: str, language: str) -> dict:
    host = _host()
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": "", "SCRIPT_NAME": "",
               "SERVER_NAME": host, "SERVER_PORT": "443", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": host,
               "HTTP_ACCEPT_LANGUAGE": language, "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "https",
               "wsgi.input": io.BytesIO(b""), "wsgi.errors": sys.stderr, "wsgi.multithread": False,
               "wsgi.multiprocess": True, "wsgi.run_once": False, "wsgi.version": (1, 0)}
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None):  # behind the documented proxy: it says https
        header, value = settings.SECURE_PROXY_SSL_HEADER
        environ[header] = value
    return environ


def warm(paths=SITE_PATHS, languages=None, report=None) -> list[Warmed]:
    """Each path in each language (default: every language of the site), one after the other (the site's pages
    before the tasks': all languages of a path before the next path); `report(Warmed)` after each."""
    if not settings.WEB_SHARED_RENDERINGS:
        raise NotShared("WEB_SHARED_RENDERINGS is off: each web process keeps its own renderings, and the ones made "
                        "here would be lost with this process")
    handler = WSGIHandler()
    done = []
    for path in paths:
        for language in languages or [code for code, _name in settings.LANGUAGES]:
            started, answer = time.perf_counter(), {}

            def start_response(status, headers, exc_info=None):
                answer["status"] = int(status.split(" ", 1)[0])

            result = handler(_environ(path, language), start_response)
            try:
                for _chunk in result:
                    pass
            finally:
                result.close()  # a previous rendering's answer computes this version's here (conditional.Refresh)
            done.append(Warmed(path, language, answer.get("status", 0), time.perf_counter() - started))
            if report is not None:
                report(done[-1])
    return done


def warm_after_run(run_id: int, task_numbers) -> None:
    """The pages a finished run changed, for the qcluster that recorded it: the site's, the run's own and (up to
    MAX_TASKS_PER_RUN) its tasks'; nothing when renderings are not shared. A failure is logged: the run's verdicts
    are stored whatever happens here."""
    if not settings.WEB_SHARED_RENDERINGS:
        return
    try:
        paths = SITE_PATHS + (f"/runs/{run_id}", f"/api/runs/{run_id}") + tuple(task_paths(task_numbers))
        for warmed in warm(paths):
            if warmed.status != 200:
                logger.warning("warming %s (%s) after a run: %s", warmed.path, warmed.language, warmed.status)
    except Exception:  # noqa: BLE001 -- visitors then render the pages themselves, as without warming
        logger.exception("warming the public pages after a run")
