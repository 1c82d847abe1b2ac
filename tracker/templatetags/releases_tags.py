"""The task page's per-release panel: configs × releases grid, the "fixed in" line, and the staff button."""
from django import template

from .. import charts
from ..figures.releases import release_grid_figure
from ..selectors import releases as sel

register = template.Library()


@register.inclusion_tag("tracker/releases/task_releases_panel.html", takes_context=True)
def task_releases_panel(context, task):
    releases, rows = sel.task_release_grid(task)
    answer = sel.fixed_in({fc.id: {r: c.status for r, c in cells.items()} for fc, cells in rows})
    merged = [pr for pr in task.pull_requests.all() if pr.merged_at]
    request = context.get("request")
    return {
        "task": task, "releases": releases, "rows": rows, "answer": answer, "text": sel.describe(answer),
        "merged_prs": merged,
        "figure_json": charts.figure_json(release_grid_figure(releases, rows)) if rows else "",
        "is_staff": bool(request and request.user.is_staff), "request": request,
        "csrf_token": context.get("csrf_token"),
    }


@register.filter
def cell(cells, release):
    return cells.get(release)
