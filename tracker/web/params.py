"""Query parameters the HTML pages could not use: ignored, and said so on the page; and the one guard of
every redirect to a page the request names (`back_target`, `redirect_back`).

A bad value never answers 500 and never silently empties a page: the view drops the filter and the
page shows a note (through the messages framework, rendered by base.html in the same response).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from urllib.parse import urlsplit

from django.contrib import messages
from django.http import HttpResponseRedirect, QueryDict
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

# Echoed values are shortened: a 5,000-digit parameter should not become a 5,000-digit note.
SHOWN_CHARS = 40


def shown(value: str) -> str:
    return value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"


class BadNumber(ValueError):
    """A staff form's number that is not one: not ASCII digits, or outside the range the form takes."""


# ASCII digits only: int() also takes "١٢", "１２", "1_000" and " 12 ", which no staff form means to accept.
_ASCII_INT = re.compile(r"[0-9]+")


def ascii_int(value: str, *, what: str, lowest: int, highest: int) -> int:
    """`value` as a whole number written with the digits 0–9, from `lowest` to `highest`; BadNumber saying which
    field (`what`), the value (shortened) and the range otherwise. The digits are counted before int() reads them:
    a 5,000-digit value costs nothing."""
    text = value.strip()
    if not _ASCII_INT.fullmatch(text):
        raise BadNumber(_("%(what)s: %(value)r is not a whole number written with the digits 0–9.")
                        % {"what": what, "value": shown(value)})
    if len(text.lstrip("0")) > len(str(highest)) or not lowest <= int(text) <= highest:
        raise BadNumber(_("%(what)s: %(value)s is out of range: from %(lowest)s to %(highest)s.")
                        % {"what": what, "value": shown(text), "lowest": lowest, "highest": highest})
    return int(text)


def choice(request, name: str, allowed: Iterable[str], default: str = "") -> str:
    """request.GET[name] when it is one of `allowed`; otherwise `default`, with a note on the page."""
    allowed = list(allowed)
    value = request.GET.get(name, "")
    if value == "" or value in allowed:
        return value or default
    messages.warning(request, _("Ignored %(name)s=%(value)r: use one of %(choices)s.") % {
        "name": name, "value": shown(value), "choices": ", ".join(allowed)})
    return default


def only(request, names: Iterable[str]) -> None:
    """Keep only the query parameters a view reads (`names`, in this order), dropping every other one from the
    request before the view sees it: the page, its cache key and its ETag (all read `request.get_full_path()`)
    are then the same for `?x=1`, `?utm_source=…` or any parameter nobody reads — such a parameter can neither
    bust the page cache nor make the server compute the page again."""
    kept = QueryDict(mutable=True)
    for name in names:
        if values := request.GET.getlist(name):
            kept.setlist(name, values)
    request.GET = kept
    request.META["QUERY_STRING"] = kept.urlencode()


def back_target(request, fallback: str = "/") -> str:
    """Where a form sends the user back: its `next` field, else the Referer, when it is a page of this site
    — a path starting with one "/", or an absolute http(s) URL of this host; `fallback` otherwise.

    Never `//evil.example` or `https://evil.example`, and never a bare word (`x`, `board`, ` 1 `): Django's
    redirect() takes those for URL pattern names and raises NoReverseMatch — a 500 after the view has
    already stored its change. Every view that redirects to a user-provided target uses this guard.
    """
    for candidate in (request.POST.get("next"), request.headers.get("Referer")):
        if candidate and _is_page_of_this_site(request, candidate):
            return candidate
    return fallback


def redirect_back(request, fallback: str = "/") -> HttpResponseRedirect:
    """A redirect to `back_target` (a URL, never resolved as a pattern name)."""
    return HttpResponseRedirect(back_target(request, fallback))


def _is_page_of_this_site(request, candidate: str) -> bool:
    scheme = urlsplit(candidate).scheme
    if not (scheme in ("http", "https") or (not scheme and candidate.startswith("/"))):
        return False
    return url_has_allowed_host_and_scheme(candidate, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure())
