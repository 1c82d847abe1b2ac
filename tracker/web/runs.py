"""Run pages: list, detail with live progress, cancel, start (staff), regressions, flaky configs, GET /api/runs/<id>,
GET /api/flaky."""
from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from . import params
from .conditional import public_page
from ..models import TestRun
from ..selectors import board as board_selectors
from ..selectors import flakiness
from ..selectors import provenance as provenance_selectors
from ..selectors import runs as run_selectors
from ..selectors import visibility
from ..services import cpu_evidence as cpu_evidence_service
from ..services import diagnoses as diagnosis_service
from ..services import run_requests
from ..services import runs as run_service
from ..vocab import FAILING, NO_VERDICT, PASSING


@require_GET
@public_page()
def run_list(request):
    runs = list(run_selectors.run_list())
    return render(request, "tracker/runs/run_list.html", {"runs": runs})


@require_GET
@public_page("status")
def run_detail(request, run_id):
    run = get_object_or_404(TestRun, pk=run_id)
    statuses = sorted(PASSING | FAILING | NO_VERDICT)
    status = params.choice(request, "status", statuses) or None
    return render(request, "tracker/runs/run_detail.html", {
        "run": run, "summary": run_selectors.run_summary(run), "status_filter": status,
        "results": run_selectors.run_results(run, status=status),
        "stale_known_failures": run_selectors.stale_known_failures(run),
        "profile": run_selectors.run_profile(run),
        **_provenance_context(request, run),
    })


def _provenance_context(request, run: TestRun) -> dict:
    """The run's provenance panel: its verdicts' distinct provenances (the host for staff only), its thread count and
    its thread-sensitive configs."""
    return {"provenance_rows": visibility.shown_provenance(provenance_selectors.run_provenance(run),
                                                          staff=request.user.is_staff),
            "show_host": request.user.is_staff, "run_threads": run.threads, "run_torch": run.torch,
            "thread_sensitive": provenance_selectors.run_thread_sensitive(run)}


@require_GET
@public_page()
def api_run(request, run_id):
    run = get_object_or_404(TestRun, pk=run_id)
    return JsonResponse(visibility.shown_run_summary(run_selectors.run_summary(run), staff=request.user.is_staff))


@require_GET
@public_page("lane")
def regression_list(request):
    lane = params.choice(request, "lane", TestRun.Lane.values) or None
    return render(request, "tracker/runs/regressions.html",
                  {"regressions": run_selectors.regressions(lane=lane), "lane": lane})


@require_GET
@public_page("lane")
def flaky_list(request):
    lane = params.choice(request, "lane", TestRun.Lane.values) or None
    return render(request, "tracker/runs/flaky.html", {"flaky": flakiness.flaky_listing(lane=lane), "lane": lane})


@require_GET
@public_page("lane")
def api_flaky(request):
    lane = request.GET.get("lane", "")
    if lane and lane not in TestRun.Lane.values:
        return JsonResponse({"errors": [f"lane={params.shown(lane)!r}: use one of {', '.join(TestRun.Lane.values)}"]},
                            status=400)
    rows = flakiness.flaky_rows(lane=lane or None)
    return JsonResponse({"count": len(rows), "configs": [
        {"task": row.task_number, "api": row.api, "config": row.config, **row.flakiness.as_dict()} for row in rows]},
        json_dumps_params={"ensure_ascii": False})


@staff_member_required
@require_POST
def cancel(request, run_id):
    run = get_object_or_404(TestRun, pk=run_id)
    if run_service.cancel_run(run, by=request.user.get_username()):
        messages.success(request, _("Run %(id)s cancelled.") % {"id": run.pk})
    else:
        messages.warning(request, _("Run %(id)s had already ended.") % {"id": run.pk})
    return redirect("runs:detail", run_id=run.pk)


# The bounds a staff form takes (retest's --smallest and --max-elements): ASCII numbers in these ranges.
SMALLEST_RANGE = (1, 100_000)
MAX_ELEMENTS_RANGE = (0, 10**12)
CONFIRM_RANGE = (1, 10**9)


def task_numbers(values) -> list[int]:
    """The task numbers a staff form names: ASCII digits, within the board's own numbers (params.BadNumber)."""
    values = [v for v in values if v.strip()]
    span = board_selectors.task_number_span() if values else (1, 1)
    if span is None:
        raise params.BadNumber(_("The board has no tasks yet (is it imported?)."))
    return [params.ascii_int(v, what=_("Task number"), lowest=span[0], highest=span[1]) for v in values]


def _optional_int(request, name: str, what: str, bounds: tuple[int, int]) -> int | None:
    value = request.POST.get(name, "")
    return params.ascii_int(value, what=what, lowest=bounds[0], highest=bounds[1]) if value.strip() else None


def _run_request(request) -> run_requests.RunRequest:
    """The form's request: its numbers ASCII and in range (params.BadNumber), its releases checked (RunError)."""
    post = request.POST
    releases = post.get("releases", "").strip()  # "all" or "3.0.0,3.3.1": one matrix run, bisecting unless full
    return run_requests.RunRequest(
        kind=post.get("scope", ""), tasks=tuple(task_numbers(post.getlist("task"))), api=post.get("api") or None,
        lane=post.get("lane", TestRun.Lane.CPU), on_cpu=bool(post.get("on_cpu")),
        releases=tuple(run_service.parse_releases(releases)) if releases else (),
        mode=run_service.FULL if post.get("mode") == run_service.FULL else run_service.BISECT,
        # "FLAGS_x=1, ...": checked against the run's release(s) before anything is queued (services.runs)
        paddle_flags=post.get("paddle_flags", ""),
        # the stability re-run and who is closer for every inexact config (the alignment page asks; off otherwise)
        readings=bool(post.get("readings")),
        smallest=_optional_int(request, "smallest", _("Smallest configs per task"), SMALLEST_RANGE),
        max_elements=_optional_int(request, "max_elements", _("Input elements at most"), MAX_ELEMENTS_RANGE),
        requested_by=request.user.get_username())


def _confirmation_page(request, plan: run_requests.RunPlan):
    """The run's size stated before anything is queued: confirm that number, or (CPU evidence) bound the run."""
    fields = [(name, value) for name, values in request.POST.lists() for value in values
              if name not in ("csrfmiddlewaretoken", "confirm")]
    return render(request, "tracker/runs/confirm_start.html", {
        "plan": plan, "fields": fields, "limit": settings.RUN_CONFIRM_ABOVE,
        "unbounded_fields": [(n, v) for n, v in fields if n not in ("smallest", "max_elements")],
        "back": params.back_target(request)})


@staff_member_required
@require_POST
def start(request):
    """Start a run through services.run_requests: one of more than RUN_CONFIRM_ABOVE config runs first shows its size
    and waits for a confirmation of that number (the form's `confirm`)."""
    try:
        confirmed = _optional_int(request, "confirm", _("Confirmed size"), CONFIRM_RANGE)
        run = run_requests.start_requested_run(_run_request(request), confirmed=confirmed)
    except run_requests.ConfirmationNeeded as need:
        return _confirmation_page(request, need.plan)
    except (params.BadNumber, run_service.RunError) as exc:
        messages.error(request, str(exc))
        return params.redirect_back(request)
    if run.paddle_flags:
        messages.success(request, _("Run %(id)s queued: %(n)s configs, with Paddle flags %(flags)s.")
                         % {"id": run.pk, "n": run.total, "flags": run.paddle_flags_text})
    else:
        messages.success(request, _("Run %(id)s queued: %(n)s configs.") % {"id": run.pk, "n": run.total})
    return redirect("runs:detail", run_id=run.pk)


@staff_member_required
@require_POST
def diagnose(request):
    """Queue the diagnosis of a task, an API's tasks or every CPU task (diagnoses run on the CPU lane)."""
    try:
        tasks = cpu_evidence_service.diagnosable_tasks(request.POST.get("scope", ""),
                                                       tasks=task_numbers(request.POST.getlist("task")),
                                                       api=request.POST.get("api") or None)
    except (params.BadNumber, run_service.RunError) as exc:
        messages.error(request, str(exc))
        return params.redirect_back(request)
    diagnosis_service.start_diagnosis(tasks)
    messages.success(request, _("Diagnosis of %(n)s tasks queued: the failing configs of each, up to %(k)s per task.")
                     % {"n": len(tasks), "k": settings.DIAGNOSE_MAX_CONFIGS})
    return params.redirect_back(request)
