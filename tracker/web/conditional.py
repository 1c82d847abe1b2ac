"""Conditional GET for pages cached per data version: an ETag, and 304 when the client has the page.

The ETag covers everything an anonymous visitor's page depends on: the data version, the page and its
query string, the language and the CSRF cookie (the page embeds a token for it). Signed-in users' pages
and responses carrying one-time messages get no ETag, so a 304 never hides a message or session state.
"""
from __future__ import annotations

import functools
import hashlib
import secrets
import threading
import time

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import caches
from django.http import HttpResponse, HttpResponseNotModified
from django.middleware.csrf import get_token
from django.utils.cache import patch_cache_control
from django.utils.http import parse_etags
from django.utils.translation import get_language

from . import budget, params
from ..selectors import versions

# Rendered fragments live this long at most; a data change replaces them at once (new version, new key).
PAGE_CACHE_SECONDS = 600
# Keyed by data version, so each process's own copy is right: process memory (settings.CACHES "pages").
page_cache = caches["pages"]


_versions: dict[tuple, tuple[float, str]] = {}  # (page, args) -> (read at, version): visitor_version's memo
_clock = time.monotonic  # visitor_version's (a test sets its own)
_versions_guard = threading.Lock()


def visitor_version(request, read_version, *args) -> str:
    """``read_version(*args)``: the data version a page is cached under — for an anonymous visitor read again at most
    every WEB_VERSION_SECONDS in this process (a version costs a few queries, nearly all of a cached page's time;
    a visitor may see a write up to that late). Signed-in users, whose own writes must show at once, read it afresh."""
    seconds = settings.WEB_VERSION_SECONDS
    if not seconds or request.user.is_authenticated:
        return read_version(*args)
    key, now = (read_version.__name__, args), _clock()
    with _versions_guard:
        found = _versions.get(key)
    if found is not None and now - found[0] < seconds:
        return found[1]
    version = read_version(*args)
    with _versions_guard:
        if len(_versions) > 10_000:  # one per task page and a few site pages: only a flood of task ids gets here
            _versions.clear()
        _versions[key] = (now, version)
    return version


_computing: dict[str, threading.Lock] = {}
_computing_guard = threading.Lock()


def cached(key: str, compute):
    """page_cache[key], computed by `compute()` when missing — by one thread of the process at a time: clients
    arriving together at a page whose data just changed wait for one computation instead of each running it
    (16 threads computing the same page share the same cores and all finish late). The wait is bounded by the
    request's read budget (budget.ReadTimeExceeded: a 503)."""
    value = page_cache.get(key)
    if value is not None:
        return value
    with _computing_guard:
        lock = _computing.setdefault(key, threading.Lock())
    left = budget.remaining()
    if not lock.acquire(timeout=-1 if left is None else max(left, 0)):
        raise budget.ReadTimeExceeded("waiting for another request's rendering of the same page")
    try:
        value = page_cache.get(key)
        if value is None:
            value = compute()
            page_cache.set(key, value, PAGE_CACHE_SECONDS)
        return value
    finally:
        lock.release()
        with _computing_guard:
            if _computing.get(key) is lock and not lock.locked():
                del _computing[key]


def page_etag(request, page: str, version: str, language: str) -> str | None:
    # A signed-in user's page also shows session state (the comment to paste, their GitHub link): it is
    # always rendered afresh, without an ETag.
    if request.user.is_authenticated or len(get_messages(request)):
        return None
    parts = (page, version, language, request.get_full_path(), request.COOKIES.get(settings.CSRF_COOKIE_NAME, ""))
    return '"' + hashlib.sha256(repr(parts).encode()).hexdigest()[:32] + '"'


def conditional_answer(request, etag: str | None):
    """A 304 when the request's If-None-Match names `etag`, else None."""
    if etag is None or request.method not in ("GET", "HEAD"):
        return None
    if etag in parse_etags(request.headers.get("If-None-Match", "")):
        response = HttpResponseNotModified()
        response["ETag"] = etag
        patch_cache_control(response, private=True, no_cache=True)
        return response
    return None


def with_etag(response, etag: str | None):
    if etag is not None and response.status_code == 200:
        response["ETag"] = etag
        # The browser keeps the page but asks every time (If-None-Match): a changed board shows at once.
        patch_cache_control(response, private=True, no_cache=True)
    return response


# Stands for the CSRF token in a page rendered once for every anonymous visitor; each response gets the
# visitor's own token (get_token also makes the CSRF middleware set the cookie). Drawn afresh by each
# process (the page cache is the process's own memory) and shown to nobody: a fixed string could be typed
# into a PR title or a comment, and every visitor's page would then carry their token in its place.
CSRF_PLACEHOLDER = f"csrf-placeholder-{secrets.token_hex(16)}"


def shared_page(request, key: str, render_page):
    """The page for an anonymous visitor without pending messages, rendered once per `key`.

    `render_page(context_extra)` renders the full page; for the shared copy it gets the placeholder as
    the CSRF token. Signed-in users and pages with messages are rendered for the request (None here).
    """
    if request.user.is_authenticated or len(get_messages(request)):
        return None
    html = cached(key, lambda: render_page({"csrf_token": CSRF_PLACEHOLDER}).content.decode())
    return HttpResponse(html.replace(CSRF_PLACEHOLDER, get_token(request)))


def shared_csrf_token(request) -> dict:
    """Template context processor (settings.TEMPLATES): in a rendering shared by every anonymous visitor
    (`public_page`), {% csrf_token %} writes the placeholder each response replaces with the visitor's token."""
    return {"csrf_token": CSRF_PLACEHOLDER} if getattr(request, "shared_rendering", False) else {}


class _NotShared(Exception):
    """The rendering carries a one-time message (a parameter's note): answered, never cached."""

    def __init__(self, response):
        self.response = response


def public_page(*names: str):
    """A public GET view cached per site data version (selectors.versions.site_version), language and the query
    parameters `names` it reads (any other is dropped first, params.only: it cannot bust the cache), with an ETag.
    Signed-in users, and a rendering that adds a note (an ignored parameter), are answered for the request."""
    def decorate(view):
        @functools.wraps(view)
        def wrapped(request, *args, **kwargs):
            params.only(request, names)
            if request.method != "GET" or request.user.is_authenticated or len(get_messages(request)):
                return view(request, *args, **kwargs)
            version, language = visitor_version(request, versions.site_version), get_language()
            etag = page_etag(request, view.__name__, version, language)
            if not_modified := conditional_answer(request, etag):
                return not_modified
            key = f"public:{view.__module__}.{view.__name__}:" + hashlib.sha256(
                repr((version, language, request.get_full_path(), args, sorted(kwargs.items()))).encode()).hexdigest()

            def render():
                request.shared_rendering = True
                try:
                    response = view(request, *args, **kwargs)
                finally:
                    request.shared_rendering = False
                if len(get_messages(request)) or response.status_code != 200 or response.streaming:
                    raise _NotShared(response)
                return response.content.decode(), response["Content-Type"]

            try:
                content, content_type = cached(key, render)
            except _NotShared as not_shared:  # rendered with the placeholder: the visitor's own token in its place
                response = not_shared.response
                if not response.streaming and CSRF_PLACEHOLDER.encode() in response.content:
                    response.content = response.content.replace(CSRF_PLACEHOLDER.encode(), get_token(request).encode())
                return response
            if CSRF_PLACEHOLDER in content:
                content = content.replace(CSRF_PLACEHOLDER, get_token(request))
            return with_etag(HttpResponse(content, content_type=content_type), etag)
        return wrapped
    return decorate
