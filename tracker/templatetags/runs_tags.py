"""Inclusion tags the task page and the board use for the runner's panels.

They only format: the views read the panels' data through tracker.selectors.runs and hand it in."""
from django import template

from ..models import TestRun

register = template.Library()


@register.inclusion_tag("tracker/runs/task_runs_panel.html", takes_context=True)
def task_runs_panel(context, task, panel: dict, matrix: dict):
    """`panel` is selectors.runs.task_runs_panel(task); `matrix` selectors.charts.task_config_matrix(task)."""
    request = context.get("request")
    return {
        "task": task,
        **panel,
        "task_matrix": matrix,
        "is_staff": bool(request and request.user.is_staff),
        "request": request,
        "csrf_token": context.get("csrf_token"),
    }


@register.inclusion_tag("tracker/runs/board_actions_panel.html", takes_context=True)
def board_run_actions(context, panel: dict):
    """`panel` is selectors.runs.board_run_actions()."""
    request = context.get("request")
    return {
        "is_staff": bool(request and request.user.is_staff),
        "request": request,
        "csrf_token": context.get("csrf_token"),
        **panel,
    }


@register.simple_tag
def run_state_labels() -> dict[str, str]:
    """Run states in the page's language, for the run page's script that polls /api/runs/<id>."""
    return {value: str(label) for value, label in TestRun.State.choices}
