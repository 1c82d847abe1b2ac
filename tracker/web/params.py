"""Query parameters the HTML pages could not use: ignored, and said so on the page.

A bad value never answers 500 and never silently empties a page: the view drops the filter and the
page shows a note (through the messages framework, rendered by base.html in the same response).
"""
from __future__ import annotations

from collections.abc import Iterable

from django.contrib import messages
from django.utils.translation import gettext as _

# Echoed values are shortened: a 5,000-digit parameter should not become a 5,000-digit note.
SHOWN_CHARS = 40


def shown(value: str) -> str:
    return value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"


def choice(request, name: str, allowed: Iterable[str], default: str = "") -> str:
    """request.GET[name] when it is one of `allowed`; otherwise `default`, with a note on the page."""
    allowed = list(allowed)
    value = request.GET.get(name, "")
    if value == "" or value in allowed:
        return value or default
    messages.warning(request, _("Ignored %(name)s=%(value)r: use one of %(choices)s.") % {
        "name": name, "value": shown(value), "choices": ", ".join(allowed)})
    return default
