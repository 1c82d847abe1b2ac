"""Template helpers of the board: sortable column links, page links, labels."""
import math

from django import template
from django.template.defaultfilters import date as date_filter
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _

from ..github.logins import is_github_login as is_github_login_rule
from ..models import UNDATED_SOURCES, ClaimStatus
from ..selectors import visibility

register = template.Library()


@register.simple_tag(takes_context=True)
def sort_url(context, key: str) -> str:
    """The board's URL with the same filters, sorted by `key` (clicking the current column reverses it)."""
    params = context["request"].GET.copy()
    current = params.get("sort", "number")
    params["sort"] = f"-{key}" if current == key else key
    return "?" + params.urlencode()


@register.simple_tag(takes_context=True)
def sort_mark(context, key: str) -> str:
    current = context["request"].GET.get("sort", "number")
    return "▲" if current == key else ("▼" if current == f"-{key}" else "")


@register.simple_tag(takes_context=True)
def page_url(context, page: int) -> str:
    params = context["request"].GET.copy()
    params["page"] = page
    return "?" + params.urlencode()


@register.filter
def claim_status_label(status: str) -> str:
    return ClaimStatus(status).label if status in ClaimStatus.values else status


@register.filter
def known_date(row, fmt: str = "Y-m-d") -> str:
    """A claim's or event's date, or "before import" when its source gives none (models.UNDATED_SOURCES: the
    tracking issue's text; `created` then holds the import time, shown only in the tooltip)."""
    if getattr(row, "source", "") in UNDATED_SOURCES:
        return format_html('<span class="before-import" title="{}">{}</span>',
                           _("imported on %(day)s; the tracking issue's text gives no date") % {
                               "day": date_filter(row.created, "Y-m-d")}, _("before import"))
    return date_filter(row.created, fmt)


@register.filter
def is_github_login(login) -> bool:
    """Only a GitHub login gets a /contributors/<login> link: a bad one stored before the rule (or by
    hand) is shown as text instead of breaking the page (its URL cannot be reversed)."""
    return is_github_login_rule(login)


@register.simple_tag
def contributor_link(login: str, title: str = ""):
    """`@login` linked to the contributor's page; plain text when `login` is not a GitHub login."""
    if not is_github_login_rule(login):
        return format_html('<span class="muted">@{}</span>', login)
    url = reverse("tracker:contributor", args=[login])
    if title:
        return format_html('<a href="{}" title="{}">@{}</a>', url, title, login)
    return format_html('<a href="{}">@{}</a>', url, login)


@register.simple_tag(takes_context=True)
def shown_source_ref(context, source_ref: str) -> str:
    """A claim's or event's reference as this viewer may see it (selectors.visibility: one rule)."""
    return visibility.shown_source_ref(source_ref or "", staff=_viewer_is_staff(context))


@register.simple_tag(takes_context=True)
def shown_staff_name(context, name: str) -> str:
    return visibility.shown_staff_name(name or "", staff=_viewer_is_staff(context))


@register.simple_tag(takes_context=True)
def shown_run_message(context, message: str) -> str:
    return visibility.shown_run_message(message or "", staff=_viewer_is_staff(context))


def _viewer_is_staff(context) -> bool:
    request = context.get("request")
    return bool(request is not None and request.user.is_staff)


@register.filter
def compact(value) -> str:
    """A count or distance in at most 6 characters: 999 stays, 1234 is "1234", 12345 is "1.2e4", 1234567890 is
    "1.2e9" (a ULP distance of a wrong result is a 10-digit integer: a row keeps one line); None is "–"."""
    if value is None or value == "":
        return "–"
    number = float(value)
    if not math.isfinite(number):
        return str(number)  # "inf", "-inf", "nan": a ratio whose denominator is 0
    if number == int(number) and abs(number) < 10_000:
        return str(int(number))
    if abs(number) < 10_000:
        return f"{number:.3g}"
    mantissa, exponent = f"{number:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"
