"""The task page's per-release panel: configs × releases grid, the "fixed in" line, and the staff button.

Only formatting: the view reads the panel through selectors.releases.task_releases_panel."""
from django import template
from django.utils.translation import gettext as _

from ..figures import charts
from ..figures.releases import release_grid_figure
from ..vocab import FixedInKind, ScopeKind

register = template.Library()


@register.inclusion_tag("tracker/releases/task_releases_panel.html", takes_context=True)
def task_releases_panel(context, task, panel: dict):
    request = context.get("request")
    return {
        "task": task, **panel,
        "figure_json": charts.figure_json(release_grid_figure(panel["releases"], panel["shown_rows"])) if panel["rows"] else "",
        "is_staff": bool(request and request.user.is_staff), "request": request,
        "csrf_token": context.get("csrf_token"), "ScopeKind": ScopeKind,
    }


@register.filter
def cell(cells, release):
    return cells.get(release)


@register.filter
def fixed_in_short(answer) -> str:
    """The board's "fixed in" cell for a FixedIn: the release, "all pass", "regressed in R", "partly 3/8" … or —."""
    if answer.kind == FixedInKind.FIXED:
        return answer.release
    if answer.kind == FixedInKind.PASSING:
        return _("all pass")
    if answer.kind == FixedInKind.HARNESS:
        return _("test engine fix")
    if answer.kind == FixedInKind.REGRESSED:
        return _("regressed in %(r)s") % {"r": answer.release}
    if answer.kind == FixedInKind.PARTLY_FIXED:
        return f"{_('partly')} {answer.passing_latest}/{answer.judged_latest}"
    return "—"
