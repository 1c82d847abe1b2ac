"""Inclusion tags the task page and the board use for the runner's panels.

They only format: the views read the panels' data through tracker.selectors.runs and hand it in."""
from django import template
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from ..models import TestRun
from ..vocab import Lane, ScopeKind

register = template.Library()


@register.inclusion_tag("tracker/runs/task_runs_panel.html", takes_context=True)
def task_runs_panel(context, task, panel: dict, matrix: dict):
    """`panel` is selectors.runs.task_runs_panel(task); `matrix` selectors.charts.task_config_matrix(task)."""
    request = context.get("request")
    return {
        "task": task,
        **panel,
        "task_matrix": matrix,
        "progress_labels": _progress_labels(),
        **_form_values(),
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
        "progress_labels": _progress_labels(),
        **_form_values(),
    }


def _form_values() -> dict:
    # The staff forms post a scope kind and a lane: the templates name the members, never the strings.
    return {"Lane": Lane, "ScopeKind": ScopeKind}


@register.filter
def scope_summary(scope) -> str:
    """A run's scope in words when it names a group of tasks ("API paddle.clip", "all open tasks (12)");
    "" when it lists task numbers, which the template links one by one."""
    if not isinstance(scope, dict):
        return ""
    tasks = scope.get("tasks")
    count = len(tasks) if isinstance(tasks, list) else 0
    kind = scope.get("kind")
    if kind == ScopeKind.API:
        return f"{_('API')} {scope.get('api', '')}"
    if kind == ScopeKind.ALL_OPEN:
        return f"{_('all open tasks')} ({count})"
    if kind == ScopeKind.ALL:
        return f"{_('every task')} ({count})"
    return ""


@register.filter
def scope_note(scope) -> str:
    """What a run's scope says beyond its tasks: a CPU-evidence run is never a GPU verdict."""
    if isinstance(scope, dict) and scope.get("kind") == ScopeKind.CPU_EVIDENCE:
        if isinstance(scope.get("per_task"), int):  # the first start's bounded share, or retest --smallest N
            note = _("GPU tasks on the CPU lane (evidence, not a GPU verdict): the smallest %(n)s configs of each") % {
                "n": scope["per_task"]}
        else:
            note = _("GPU tasks on the CPU lane (evidence, not a GPU verdict)")
        if isinstance(scope.get("max_elements"), int):  # retest --max-elements N
            note += _(", only configs of at most %(n)s input elements") % {"n": f"{scope['max_elements']:,}"}
        return note
    return ""


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


# The board row's badge: "2/3 ✓1 ✗1" (done/total, then pass, fail, no verdict or by design); the full sentence is
# its tooltip. The same marks in the page script (progress_script.html) that updates the badge live.
PROGRESS_MARKS = {"pass": "✓", "fail": "✗", "other": "~"}


@register.filter
def run_progress_short(progress) -> str:
    if progress is None:
        return ""
    values = progress.as_dict() if hasattr(progress, "as_dict") else progress
    marks = [f"{PROGRESS_MARKS[key]}{values[key]}" for key in ("pass", "fail", "other") if values[key]]
    return " ".join([f"{values['done']}/{values['total']}", *marks])


@register.simple_tag
def run_progress_labels_json() -> str:
    """The labels as JSON for the page script (json_script-safe: rendered through the json_script filter)."""
    return _progress_labels()
