"""Conditional GET for pages cached per data version: an ETag, and 304 when the client has the page.

The ETag covers everything an anonymous visitor's page depends on: the data version, the page and its
query string, the language and the CSRF cookie (the page embeds a token for it). Signed-in users' pages
and responses carrying one-time messages get no ETag, so a 304 never hides a message or session state.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import caches
from django.http import HttpResponse, HttpResponseNotModified
from django.middleware.csrf import get_token
from django.utils.cache import patch_cache_control
from django.utils.http import parse_etags
from django.utils.html import format_html
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from . import budget, params
from ..selectors import versions

logger = logging.getLogger(__name__)

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


def _shared_store():
    """Where renderings are shared by every web process (WEB_SHARED_RENDERINGS: the site's default cache — Redis,
    or the database's cache table), or None: each process renders for itself."""
    return caches["default"] if settings.WEB_SHARED_RENDERINGS else None


# A page's newest rendering in the shared store lives this long (a quiet board's pages stay rendered overnight; one
# entry per page, overwritten by the next version's, so the store holds one rendering per page, not one per version).
SHARED_RENDERING_SECONDS = 86_400


@dataclass(frozen=True)
class Rendering:
    """A page's newest rendering: when it was made, the key (data version included) it was made under, the value."""

    made_at: float
    key: str
    value: object


def _latest(latest_key: str, shared: bool) -> Rendering | None:
    """The page's newest rendering from this process's memory, else (`shared`) from the shared store."""
    found = page_cache.get(latest_key)
    if found is None and shared and (store := _shared_store()) is not None:
        found = store.get(latest_key)
        if found is not None:
            page_cache.set(latest_key, found, _latest_seconds())
    return found


def _latest_seconds() -> int:  # kept as long as it may be answered (WEB_STALE_SECONDS)
    return max(PAGE_CACHE_SECONDS, int(settings.WEB_STALE_SECONDS))


def _peek(key: str, latest_key: str | None, shared: bool):
    """This version's value: in this process's memory under `key`, else the page's newest rendering if it was made
    under `key` (copied into memory)."""
    value = page_cache.get(key)
    if value is None and latest_key is not None:
        found = _latest(latest_key, shared)
        if found is not None and found.key == key:
            value = found.value
            page_cache.set(key, value, PAGE_CACHE_SECONDS)
    return value


def _keep(key: str, latest_key: str | None, value, shared: bool) -> None:
    page_cache.set(key, value, PAGE_CACHE_SECONDS)
    if latest_key is None:
        return
    rendering = Rendering(_wall_clock(), key, value)
    page_cache.set(latest_key, rendering, _latest_seconds())
    if shared and (store := _shared_store()) is not None:
        store.set(latest_key, rendering, SHARED_RENDERING_SECONDS)


def cached(key: str, compute, latest_key: str | None = None, wait: bool = True, shared: bool = False):
    """page_cache[key], computed by `compute()` when missing — by one thread of the process at a time: clients
    arriving together at a page whose data just changed wait for one computation instead of each running it
    (16 threads computing the same page share the same cores and all finish late). The wait is bounded by the
    request's read budget (budget.ReadTimeExceeded: a 503). `latest_key`: the page's newest rendering is also kept
    there, whatever its version (`visitor_cached` answers with it while the next one is computed); with `shared`
    in the shared store too (WEB_SHARED_RENDERINGS), where every process finds it, computed by one process of all.
    `wait=False`: None at once when another thread or process is computing it."""
    value = _peek(key, latest_key, shared)
    if value is not None:
        return value
    with _computing_guard:
        lock = _computing.setdefault(key, threading.Lock())
    left = budget.remaining()
    if not wait:
        if not lock.acquire(blocking=False):
            return None
    elif not lock.acquire(timeout=-1 if left is None else max(left, 0)):
        raise budget.ReadTimeExceeded("waiting for another request's rendering of the same page")
    try:
        value = _peek(key, latest_key, shared)
        if value is None:
            store = _shared_store() if shared and latest_key is not None else None
            value = _compute_once(key, latest_key, compute, wait, store)
            if value is None:
                return None
            _keep(key, latest_key, value, shared)
        return value
    finally:
        lock.release()
        with _computing_guard:
            if _computing.get(key) is lock and not lock.locked():
                del _computing[key]


SHARED_POLL_SECONDS = 0.05
_sleep = time.sleep  # between two looks for another process's rendering (a test sets its own)


def _compute_once(key: str, latest_key: str | None, compute, wait: bool, store):
    """compute() — with a shared store, by the one process that marks `key` as being rendered; the others wait for
    its rendering (bounded by their read budget), or return None at once (`wait=False`)."""
    if store is None:
        return compute()
    marker = "rendering:" + key
    # The mark outlives a process that died rendering by at most this long.
    mark_seconds = (settings.WEB_READ_SECONDS or 60) + 5
    while True:
        if store.add(marker, 1, timeout=mark_seconds):
            try:
                return compute()
            finally:
                store.delete_many([marker])  # (cache keys: not a model write)
        if not wait:
            return None
        budget.check()  # 503 past the request's budget, as any read
        _sleep(SHARED_POLL_SECONDS)
        found = store.get(latest_key)
        if found is not None and found.key == key:
            return found.value


_wall_clock = time.time  # when a rendering was made (a test sets its own)
# At most one rendering computed after an answer at a time per process: a stranger walking every task page right
# after a write starts one computation, not 183 (the others are answered with what was there, or wait as before).
_refreshing = threading.BoundedSemaphore(1)


def visitor_cached(request, key: str, latest_key: str, compute):
    """(value, refresh): `cached(key, compute)` — but for an anonymous visitor, when `key` (this data version's
    rendering) is missing and the page's previous rendering (`latest_key`) was made at most WEB_STALE_SECONDS ago,
    that rendering at once (a visitor never waits seconds for a page whose data just moved) and `refresh`, which
    computes this version's once the answer is sent (`answer` runs it). Signed-in users get this version's."""
    seconds = settings.WEB_STALE_SECONDS
    if not seconds or request.user.is_authenticated:
        return cached(key, compute, latest_key, shared=True), None
    value = _peek(key, latest_key, shared=True)
    if value is not None:
        return value, None
    latest = _latest(latest_key, shared=True)
    if latest is not None and _wall_clock() - latest.made_at <= seconds:
        return latest.value, Refresh(key, latest_key, compute, made_at=latest.made_at)
    return cached(key, compute, latest_key, shared=True), None


@dataclass(frozen=True)
class Refresh:
    """This data version's rendering of a page answered from its previous one (made at `made_at`), computed later."""

    key: str
    latest_key: str
    compute: Callable
    made_at: float

    def __call__(self) -> None:
        if not _refreshing.acquire(blocking=False):
            return  # another page is being computed: a later visitor of this one starts it
        try:
            with budget.bounded(settings.WEB_READ_SECONDS):  # the visitor's bound, though nobody waits for it
                cached(self.key, self.compute, self.latest_key, wait=False, shared=True)
        except _NotShared:
            pass
        except Exception:  # noqa: BLE001 -- after the answer nobody else hears of it: the log does
            logger.exception("computing the next rendering of a page answered from its previous one")
        finally:
            _refreshing.release()


# templates/base.html carries it where a previous rendering's answer says what it is (an HTML comment otherwise).
RENDERING_NOTE_MARK = "<!--board-rendering-note-->"


class PreviousRendering(HttpResponse):
    """An answer from the page's previous rendering (`visitor_cached`): says so (X-Board-Rendering, Age), carries no
    ETag (the browser must not keep it as this version's), and computes this version's after it is sent — a WSGI
    server calls close() once the body is out (gunicorn does; so does Django's test client)."""

    def __init__(self, content, *args, refresh: Refresh, **kwargs):
        age = max(0, int(_wall_clock() - refresh.made_at))
        if isinstance(content, str) and RENDERING_NOTE_MARK in content:  # an HTML page: says so where it is read
            content = content.replace(RENDERING_NOTE_MARK, format_html(
                '<p class="rendering-note" role="status">{}</p>',
                _("This page was computed %(age)s s ago; the board's data has changed since, and the new page is "
                  "being computed: reload in a few seconds.") % {"age": age}), 1)
        super().__init__(content, *args, **kwargs)
        self.refresh = refresh
        self["X-Board-Rendering"] = "previous"
        self["Age"] = str(age)
        patch_cache_control(self, private=True, no_cache=True)  # asked for again next time, never kept as current

    def close(self):
        try:
            self.refresh()
        finally:
            super().close()


def answer(content, refresh: Refresh | None, content_type: str | None = None) -> HttpResponse:
    """The response for `visitor_cached`'s value: a PreviousRendering when it came with a refresh."""
    if refresh is None:
        return HttpResponse(content, content_type=content_type)
    return PreviousRendering(content, content_type=content_type, refresh=refresh)


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
    if etag is not None and response.status_code == 200 and not isinstance(response, PreviousRendering):
        response["ETag"] = etag
        # The browser keeps the page but asks every time (If-None-Match): a changed board shows at once.
        patch_cache_control(response, private=True, no_cache=True)
    return response


# Stands for the CSRF token in a page rendered once for every anonymous visitor; each response gets the
# visitor's own token (get_token also makes the CSRF middleware set the cookie). Drawn afresh by each
# process and shown to nobody: a fixed string could be typed into a PR title or a comment, and every visitor's page
# would then carry their token in its place. A shared rendering (WEB_SHARED_RENDERINGS) may have been made by another
# process: it is kept with the placeholder it carries, and that one is replaced.
CSRF_PLACEHOLDER = f"csrf-placeholder-{secrets.token_hex(16)}"


def shared_page(request, key: str, render_page, latest_key: str):
    """The page for an anonymous visitor without pending messages, rendered once per `key` (or its previous
    rendering, `visitor_cached`, under `latest_key`: the page's key without the data version).

    `render_page(context_extra)` renders the full page; for the shared copy it gets the placeholder as
    the CSRF token. Signed-in users and pages with messages are rendered for the request (None here).
    """
    if request.user.is_authenticated or len(get_messages(request)):
        return None
    (placeholder, html), refresh = visitor_cached(
        request, key, latest_key,
        lambda: (CSRF_PLACEHOLDER, render_page({"csrf_token": CSRF_PLACEHOLDER}).content.decode()))
    return answer(html.replace(placeholder, get_token(request)), refresh)


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
            page = repr((language, request.get_full_path(), args, sorted(kwargs.items())))
            key = f"public:{view.__module__}.{view.__name__}:" + hashlib.sha256((version + page).encode()).hexdigest()
            latest_key = f"latest:{view.__module__}.{view.__name__}:" + hashlib.sha256(page.encode()).hexdigest()

            def render():
                request.shared_rendering = True
                try:
                    response = view(request, *args, **kwargs)
                finally:
                    request.shared_rendering = False
                if len(get_messages(request)) or response.status_code != 200 or response.streaming:
                    raise _NotShared(response)
                return response.content.decode(), response["Content-Type"], CSRF_PLACEHOLDER

            try:
                (content, content_type, placeholder), refresh = visitor_cached(request, key, latest_key, render)
            except _NotShared as not_shared:  # rendered with the placeholder: the visitor's own token in its place
                response = not_shared.response
                if not response.streaming and CSRF_PLACEHOLDER.encode() in response.content:
                    response.content = response.content.replace(CSRF_PLACEHOLDER.encode(), get_token(request).encode())
                return response
            if placeholder in content:
                content = content.replace(placeholder, get_token(request))
            return with_etag(answer(content, refresh, content_type), etag)
        return wrapped
    return decorate
