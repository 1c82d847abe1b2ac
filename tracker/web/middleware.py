"""Requests no view can answer sensibly are refused here with 400, before any view or query runs."""
from django.http import HttpResponseBadRequest


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
