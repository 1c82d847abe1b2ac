"""Template helpers of the board: sortable column links, page links, labels."""
from django import template

from ..models import ClaimStatus

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
