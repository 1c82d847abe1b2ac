"""A bound on the time one read may take: past it the request is answered 503, never computed on for a client
that left (a proxy gives up after its own timeout; gunicorn would go on computing the abandoned page).

`BoundedReadsMiddleware` gives every GET/HEAD of a visitor who is not staff WEB_READ_SECONDS (settings): on
PostgreSQL the request's statements run under that `statement_timeout` (one long query is cancelled by the
server), and on any database each query first checks the time the request has left (many short queries add
up). A wait for another thread's rendering of the same page (conditional.cached) is bounded by it too. Staff
pages (the admin over a year of results) are not bounded here: gunicorn's own timeout is theirs.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import time

from django.conf import settings
from django.db import OperationalError, connections
from django.http import HttpResponse
from django.utils.translation import gettext as _

logger = logging.getLogger(__name__)

# The monotonic time the current request's reads must end by (None: not bounded).
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("read_deadline", default=None)


class ReadTimeExceeded(Exception):
    """The request spent its read budget (WEB_READ_SECONDS)."""


def remaining() -> float | None:
    """Seconds the current request has left (None: no bound)."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


def check() -> None:
    if (left := remaining()) is not None and left <= 0:
        raise ReadTimeExceeded(f"over {settings.WEB_READ_SECONDS} s")


def _check_before_query(execute, sql, params, many, context):
    check()
    return execute(sql, params, many, context)


def _is_statement_timeout(error: BaseException) -> bool:
    cause = error.__cause__ or error
    return type(cause).__name__ == "QueryCanceled" or "statement timeout" in str(error)


def too_long_response() -> HttpResponse:
    response = HttpResponse(
        _("This page took longer than the board allows (%(seconds)s s) to compute, so it was not finished. "
          "Try again in a minute; if it keeps happening, tell the operator which address it was.")
        % {"seconds": settings.WEB_READ_SECONDS} + "\n",
        status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = "60"
    return response


@contextlib.contextmanager
def bounded(seconds: float):
    """The reads inside take at most `seconds` (0: unbounded): ReadTimeExceeded past it, or the database's own
    statement timeout on PostgreSQL."""
    if not seconds:
        yield
        return
    token = _deadline.set(time.monotonic() + seconds)
    connection = connections["default"]
    postgres = connection.vendor == "postgresql"
    try:
        if postgres:
            with connection.cursor() as cursor:
                cursor.execute("SET statement_timeout = %s", [int(seconds * 1000)])
        with connection.execute_wrapper(_check_before_query):
            yield
    finally:
        _deadline.reset(token)
        if postgres and connection.connection is not None:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("RESET statement_timeout")  # a kept connection serves other requests next
            except OperationalError:
                connection.close()  # cannot reset it: not handed to the next request


class BoundedReadsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        seconds = settings.WEB_READ_SECONDS
        if not seconds or request.method not in ("GET", "HEAD") or request.user.is_staff:
            return self.get_response(request)
        with bounded(seconds):
            return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, ReadTimeExceeded) or (
                isinstance(exception, OperationalError) and _is_statement_timeout(exception)):
            logger.warning("read budget (%s s) spent on %s %s", settings.WEB_READ_SECONDS, request.method,
                           request.get_full_path()[:200])
            return too_long_response()
        return None
