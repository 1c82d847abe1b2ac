"""Inclusion tags the task page and the board use for the runner's panels."""
from django import template
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

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
        "active_runs": [{"run": r, "waiting": run_selectors.waiting_reason(r),
                         "progress": run_selectors.task_progress(r).get(task.number)}
                        for r in TestRun.objects.filter(state__in=["queued", "running"])
                        if task.number in r.scope_tasks],
        "failed_runs": run_selectors.task_failed_runs(task, lane),
        "progress_labels": _progress_labels(),
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
        # the run whose per-task progress the board's rows show (the same choice as the rows')
        "progress_run_id": getattr(run_selectors.active_run(), "pk", None),
        "progress_labels": _progress_labels(),
    }


@register.simple_tag
def run_state_labels() -> dict[str, str]:
    """Run states in the page's language, for the run page's script that polls /api/runs/<id>."""
    return {value: str(label) for value, label in TestRun.State.choices}


def _progress_labels() -> dict[str, str]:
    # One set of strings for the server's rendering and the page script's live updates.
    return {
        "done": _("%(done)s of %(total)s configs re-tested"),
        "pass": _("%(n)s pass"),
        "fail": _("%(n)s fail"),
        "other": _("%(n)s no verdict or by design"),
        "label_sep": pgettext("label separator", ": "),
        "list_sep": pgettext("list separator", ", "),
    }


@register.filter
def run_progress_text(progress) -> str:
    """A task's progress in the running run: "3 of 10 configs re-tested: 3 pass" (a TaskProgress or its dict)."""
    if progress is None:
        return ""
    values = progress.as_dict() if hasattr(progress, "as_dict") else progress
    labels = _progress_labels()
    text = labels["done"] % {"done": values["done"], "total": values["total"]}
    parts = [labels[key] % {"n": values[key]} for key in ("pass", "fail", "other") if values[key]]
    return text + (labels["label_sep"] + labels["list_sep"].join(parts) if parts else "")


@register.simple_tag
def run_progress_labels_json() -> str:
    """The labels as JSON for the page script (json_script-safe: rendered through the json_script filter)."""
    return _progress_labels()
