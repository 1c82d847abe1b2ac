"""Start a run: the one service the web views (task page, CPU evidence, release matrix, /alignment, the board's
buttons) and `manage.py retest` both call.

A request (`RunRequest`) is first planned (`plan_run`: the scope resolved, its bounds applied, the configs counted,
nothing written), then started (`start_requested_run`). The bounds are retest's: a CPU-evidence run (GPU tasks'
configs on the CPU lane) takes each task's ``smallest`` N configs and/or the configs of at most ``max_elements`` input
elements; any other run takes its whole scope. A plan of more than ``settings.RUN_CONFIRM_ABOVE`` config runs is
started only when the caller confirms that very number (`ConfirmationNeeded` otherwise, carrying the plan the page
shows): one click on the CPU-evidence button of a GPU task with 15,403 configs queues nothing until a person has
read "15,403 configs" and confirmed it or bounded it. The command line is its own confirmation (``confirmed=True``):
the operator typed the scope.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from ..models import FailingConfig, TestRun
from ..vocab import Lane
from . import cpu_evidence
from . import runs as run_service
from .queue import enqueue_run
from .runs import RunError


@dataclass(frozen=True)
class RunRequest:
    """What a person asked to run. ``on_cpu``: the GPU tasks ``tasks`` on the CPU lane (CPU evidence, on ``release``);
    ``releases``: one matrix run on these releases (``mode`` bisect or full); otherwise scope ``kind`` on ``lane``."""

    kind: str = ""
    tasks: tuple[int, ...] = ()
    api: str | None = None
    lane: str = Lane.CPU
    on_cpu: bool = False
    release: str = ""
    releases: tuple[str, ...] = ()
    mode: str = run_service.BISECT
    paddle_flags: str | dict = ""
    readings: bool = False
    threads: int = 1  # both frameworks pinned to this many threads in the run's workers (issue #46)
    torch: str = ""  # judge against this Torch instead of the project's (one release; issue #46's drift)
    smallest: int | None = None
    max_elements: int | None = None
    requested_by: str = ""


@dataclass(frozen=True)
class RunPlan:
    """A request resolved: ``configs`` of the scope (after the bounds) on ``lanes`` releases; ``size`` config runs are
    queued now (a bisecting matrix starts with its oldest and newest release only)."""

    request: RunRequest
    configs: int
    tasks: int
    lanes: int = 1
    config_ids: list[int] | None = None
    extra_scope: dict | None = field(default=None)

    @property
    def size(self) -> int:
        first_round = min(self.lanes, 2) if self.request.mode == run_service.BISECT else self.lanes
        return self.configs * (first_round if self.request.releases else 1)

    @property
    def needs_confirmation(self) -> bool:
        return self.size > settings.RUN_CONFIRM_ABOVE


class ConfirmationNeeded(RunError):
    """The plan is larger than RUN_CONFIRM_ABOVE config runs and the caller did not confirm its size."""

    def __init__(self, plan: RunPlan):
        super().__init__(f"{plan.size} config runs is more than RUN_CONFIRM_ABOVE ({settings.RUN_CONFIRM_ABOVE}): "
                         "confirm the number or bound the run; nothing queued")
        self.plan = plan


def _check_bounds(request: RunRequest) -> None:
    if (request.smallest is not None or request.max_elements is not None) and not request.on_cpu:
        raise RunError("the bounds (each task's smallest configs, at most N input elements) bound a CPU-evidence run "
                       "(GPU tasks on the CPU lane), as retest's --smallest and --max-elements do")
    if request.on_cpu and (request.releases or request.api or request.lane != Lane.CPU):
        raise RunError("a CPU-evidence run takes GPU task numbers, on the cpu lane, one release")
    if request.torch and (request.releases or request.on_cpu):
        raise RunError("a run against another Torch takes one release and the lane's own tasks (no release matrix, no "
                       "CPU evidence): it measures how far the reference moves, one release at a time")


def plan_run(request: RunRequest) -> RunPlan:
    """The request resolved and counted, nothing written; RunError for a scope or bound that can't be run."""
    _check_bounds(request)
    if request.on_cpu:
        tasks = cpu_evidence.gpu_tasks(request.tasks)
        ids, scope = cpu_evidence.bounded_configs(request.tasks, max_elements=request.max_elements,
                                                  smallest=request.smallest)
        count = len(ids) if ids is not None else FailingConfig.objects.filter(task__in=tasks).count()
        return RunPlan(request, configs=count, tasks=len(tasks), config_ids=ids, extra_scope=scope)
    tasks = run_service.resolve_scope(request.kind, tasks=list(request.tasks) or None, api=request.api,
                                      lane=request.lane)
    count = FailingConfig.objects.filter(task__in=tasks).count()
    if count == 0:
        raise RunError("the scope has no failing configs to run (is the board imported?)")
    releases = [run_service.check_release(r) for r in request.releases]
    run_service.check_torch(run_service.check_release(request.release), request.torch)
    return RunPlan(request, configs=count, tasks=len(tasks), lanes=len(releases) or 1)


def start_requested_run(request: RunRequest, *, confirmed: int | bool | None = None, queue: bool = True) -> TestRun:
    """Plan the request, then create the run — and queue it for the lane's qcluster unless ``queue`` is False (retest
    --inline executes it in its own process). ``confirmed``: the number of config runs the person was shown and
    confirmed (it must equal the plan's), or True when the caller's request is its own confirmation (retest).
    ConfirmationNeeded when the plan is larger than RUN_CONFIRM_ABOVE and not confirmed; RunError when it can't run."""
    plan = plan_run(request)
    if plan.needs_confirmation and confirmed is not True and confirmed != plan.size:
        raise ConfirmationNeeded(plan)
    run = _create(plan)
    if queue:
        _enqueue(run)
    return run


def _create(plan: RunPlan) -> TestRun:
    request = plan.request
    if request.on_cpu:
        return cpu_evidence.create_cpu_evidence_run(
            list(request.tasks), requested_by=request.requested_by, release=request.release, configs=plan.config_ids,
            extra_scope=plan.extra_scope, paddle_flags=request.paddle_flags)
    common = {"tasks": list(request.tasks) or None, "api": request.api, "lane": request.lane,
              "requested_by": request.requested_by, "paddle_flags": request.paddle_flags, "readings": request.readings,
              "threads": request.threads}
    if request.torch:
        common["torch"] = request.torch
    if request.releases:
        return run_service.create_matrix_run(request.kind, releases=list(request.releases), mode=request.mode, **common)
    return run_service.create_run(request.kind, release=request.release, **common)


def _enqueue(run: TestRun) -> None:
    """A matrix run queues its lanes (start_matrix_run's way); any other run is queued itself."""
    if run.release == run_service.MATRIX:
        for lane in run.lanes.order_by("id"):
            enqueue_run(lane)
    else:
        enqueue_run(run)
