"""Run pages: list, detail with live progress, cancel, start (staff), regressions, GET /api/runs/<id>."""
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
from ..selectors import runs as run_selectors
from ..selectors import visibility
from ..services import cpu_evidence as cpu_evidence_service
from ..services import diagnoses as diagnosis_service
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
    })


@require_GET
def api_run(request, run_id):
    run = get_object_or_404(TestRun, pk=run_id)
    return JsonResponse(visibility.shown_run_summary(run_selectors.run_summary(run), staff=request.user.is_staff))


@require_GET
@public_page("lane")
def regression_list(request):
    lane = params.choice(request, "lane", TestRun.Lane.values) or None
    return render(request, "tracker/runs/regressions.html",
                  {"regressions": run_selectors.regressions(lane=lane), "lane": lane})


@staff_member_required
@require_POST
def cancel(request, run_id):
    run = get_object_or_404(TestRun, pk=run_id)
    if run_service.cancel_run(run, by=request.user.get_username()):
        messages.success(request, _("Run %(id)s cancelled.") % {"id": run.pk})
    else:
        messages.warning(request, _("Run %(id)s had already ended.") % {"id": run.pk})
    return redirect("runs:detail", run_id=run.pk)


@staff_member_required
@require_POST
def start(request):
    kind = request.POST.get("scope", "")
    lane = request.POST.get("lane", TestRun.Lane.CPU)
    numbers = [n for n in request.POST.getlist("task") if n.strip()]
    try:
        tasks = [int(n) for n in numbers]
    except ValueError:
        tasks = None
    if tasks is None:
        messages.error(request, _("Task numbers must be integers: %(v)s") % {"v": ", ".join(map(params.shown, numbers))})
        return params.redirect_back(request)
    releases = request.POST.get("releases", "").strip()
    # "FLAGS_x=1, ...": checked against the run's release(s) before anything is queued (services.runs)
    flags = request.POST.get("paddle_flags", "")
    # the stability re-run and who is closer for every inexact config (the alignment page asks; off otherwise)
    readings = bool(request.POST.get("readings"))
    try:
        if request.POST.get("on_cpu"):  # GPU tasks' configs on the CPU lane: CPU evidence, never a GPU verdict
            run = cpu_evidence_service.start_cpu_evidence_run(tasks, requested_by=request.user.get_username(),
                                                              paddle_flags=flags)
        elif releases:  # "all" or "3.0.0,3.3.1": one matrix run, bisecting unless mode=full
            mode = run_service.FULL if request.POST.get("mode") == run_service.FULL else run_service.BISECT
            run = run_service.start_matrix_run(kind, releases=run_service.parse_releases(releases), tasks=tasks,
                                               api=request.POST.get("api") or None, lane=lane,
                                               requested_by=request.user.get_username(), mode=mode,
                                               paddle_flags=flags, readings=readings)
        else:
            run = run_service.start_run(kind, tasks=tasks, api=request.POST.get("api") or None, lane=lane,
                                        requested_by=request.user.get_username(), paddle_flags=flags,
                                        readings=readings)
    except run_service.RunError as exc:
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
        numbers = [int(n) for n in request.POST.getlist("task") if n.strip()]
        tasks = cpu_evidence_service.diagnosable_tasks(request.POST.get("scope", ""), tasks=numbers,
                                                       api=request.POST.get("api") or None)
    except ValueError as exc:  # RunError, or a task number that is not an integer
        messages.error(request, str(exc) if isinstance(exc, run_service.RunError)
                       else _("Task numbers must be integers."))
        return params.redirect_back(request)
    diagnosis_service.start_diagnosis(tasks)
    messages.success(request, _("Diagnosis of %(n)s tasks queued: the failing configs of each, up to %(k)s per task.")
                     % {"n": len(tasks), "k": settings.DIAGNOSE_MAX_CONFIGS})
    return params.redirect_back(request)
