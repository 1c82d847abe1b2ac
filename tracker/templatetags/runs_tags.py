"""Inclusion tags the task page and the board use for the runner's panels."""
from django import template

from ..models import TestRun
from ..selectors import runs as run_selectors

register = template.Library()


@register.inclusion_tag("tracker/runs/task_runs_panel.html", takes_context=True)
def task_runs_panel(context, task):
    lane = task.kernel.lower()
    request = context.get("request")
    return {
        "task": task,
        "lane": lane,
        "verification": run_selectors.task_verification(task, lane),
        "latest": run_selectors.task_latest_verdicts(task, lane),
        "regressions": run_selectors.regressions(task=task),
        # scope.tasks is JSON: filtered in Python so SQLite and PostgreSQL behave alike
        "active_runs": [{"run": r, "waiting": run_selectors.waiting_reason(r)}
                        for r in TestRun.objects.filter(state__in=["queued", "running"])
                        if task.number in r.scope_tasks],
        "failed_runs": run_selectors.task_failed_runs(task, lane),
        "is_staff": bool(request and request.user.is_staff),
        "no_lane_worker": lane == "gpu" and not run_selectors.lane_workers("gpu"),
        "request": request,
        "csrf_token": context.get("csrf_token"),
    }


@register.inclusion_tag("tracker/runs/board_actions_panel.html", takes_context=True)
def board_run_actions(context):
    request = context.get("request")
    return {
        "is_staff": bool(request and request.user.is_staff),
        "request": request,
        "csrf_token": context.get("csrf_token"),
        "gpu_waiting": not run_selectors.lane_workers("gpu"),
        # Runs in progress (e.g. the first start's re-test of every CPU task), for everyone to watch.
        "active_runs": [run_selectors.run_summary(run) for run in
                        TestRun.objects.filter(state__in=["queued", "running"], parent__isnull=True)[:3]],
    }


@register.simple_tag
def run_state_labels() -> dict[str, str]:
    """Run states in the page's language, for the run page's script that polls /api/runs/<id>."""
    return {value: str(label) for value, label in TestRun.State.choices}
