"""The task page's per-release panel: configs × releases grid, the "fixed in" line, and the staff button.

Only formatting: the view reads the panel through selectors.releases.task_releases_panel."""
from django import template

from ..figures import charts
from ..figures.releases import release_grid_figure

register = template.Library()


@register.inclusion_tag("tracker/releases/task_releases_panel.html", takes_context=True)
def task_releases_panel(context, task, panel: dict):
    request = context.get("request")
    return {
        "task": task, **panel,
        "figure_json": charts.figure_json(release_grid_figure(panel["releases"], panel["rows"])) if panel["rows"] else "",
        "is_staff": bool(request and request.user.is_staff), "request": request,
        "csrf_token": context.get("csrf_token"),
    }


@register.filter
def cell(cells, release):
    return cells.get(release)
