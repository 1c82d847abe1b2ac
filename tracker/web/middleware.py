"""Requests no view can answer sensibly are refused here with 400, before any view or query runs; a view
that fails because the database is unavailable answers 503 with what to do."""
import logging

from django.db import OperationalError
from django.http import HttpResponseBadRequest

from .health import unavailable_response

logger = logging.getLogger(__name__)


class RejectNulCharactersMiddleware:
    """A NUL character in the path or the query string is a 400.

    PostgreSQL cannot store or compare strings containing NUL (psycopg raises), so a `?q=%00` would
    otherwise be a 500 on a PostgreSQL deployment while SQLite answers it.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or any("\x00" in key or any("\x00" in v for v in values)
                                         for key, values in request.GET.lists()):
            return HttpResponseBadRequest("Bad request: the URL contains a NUL character (%00).",
                                          content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class DatabaseUnavailableMiddleware:
    """A view whose query failed for the database's sake (OperationalError: read-only, missing tables,
    unreachable; services/throttle.py's CountUnavailable too) answers 503 with what is wrong and what the
    operator should do (web/health.py), instead of a bare 500 — or a misleading answer such as "too many
    sign-in attempts". Other database errors (an IntegrityError is a bug) stay 500s."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, OperationalError):
            logger.error("database unavailable on %s %s", request.method, request.path, exc_info=exception)
            return unavailable_response(exception)
        return None
