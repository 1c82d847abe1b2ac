"""The first start (``manage.py retest --first-start``, scripts/run.sh): what a new board runs by itself.

1. every CPU task's configs on the main env (the CPU lane's run);
2. then, on the CPU lane, the smallest FIRST_START_GPU_CONFIGS_PER_TASK configs of each GPU task: their CPU
   evidence ("fails on CPU too" / "passes on CPU", never a GPU verdict; services/cpu_evidence.py). All 42,091
   GPU-task configs take ~6 hours on 2 cores; the smallest few per task say as much about a device-independent
   failure in minutes, and `retest --all --on-cpu` runs the rest on demand;
3. when each of those runs ends, a diagnosis of FIRST_START_DIAGNOSE_PER_TASK strictly failing configs per task
   (``diagnose_after`` in the run's scope, read by ``queue_follow_up_diagnosis``), so "who is off" and the
   distinct failures are filled without a click. The diagnosis is bounded as any is (services/diagnoses.py).

Both runs go on the CPU queue in that order; one qcluster takes them first come, first served.
"""
from __future__ import annotations

from django.conf import settings

from ..models import Task, TestRun
from ..vocab import Kernel, Lane, ScopeKind
from ..selectors.diagnoses import diagnosable_results
from . import cpu_evidence
from .cpu_evidence import smallest_configs_per_task
from .diagnoses import start_diagnosis
from .runs import RunError, create_run
from .queue import enqueue_run

REQUESTED_BY = "first start"


def start_first_start() -> list[TestRun]:
    """Queue the first start's runs (CPU tasks, then GPU tasks' bounded CPU evidence); RunError when the board
    has nothing to run. The GPU share is left out when FIRST_START_GPU_CONFIGS_PER_TASK is 0 or there is no GPU
    task."""
    diagnose = {"diagnose_after": settings.FIRST_START_DIAGNOSE_PER_TASK}
    cpu_run = create_run(ScopeKind.ALL, lane=Lane.CPU, requested_by=REQUESTED_BY, extra_scope=diagnose)
    enqueue_run(cpu_run)
    runs = [cpu_run]
    per_task = settings.FIRST_START_GPU_CONFIGS_PER_TASK
    gpu = list(Task.objects.filter(kernel=Kernel.GPU).order_by("number"))
    if per_task > 0 and gpu:
        configs = smallest_configs_per_task(gpu, per_task)
        if configs:
            runs.append(cpu_evidence.start_cpu_evidence_run(
                [t.number for t in gpu], requested_by=REQUESTED_BY, configs=configs,
                extra_scope={**diagnose, "per_task": per_task}))
    return runs


def queue_follow_up_diagnosis(run: TestRun) -> str | None:
    """A finished run whose scope asks for ``diagnose_after`` N: queue the diagnosis of up to N strictly failing
    configs of each of its tasks that has one (CPU tasks, and GPU tasks on their CPU evidence). Returns the queued
    job's id, or None when nothing fails or nothing is asked."""
    limit = int(run.scope.get("diagnose_after") or 0)
    if limit <= 0 or run.state != TestRun.State.DONE:
        return None
    tasks = [t for t in Task.objects.filter(number__in=run.scope.get("tasks", [])).order_by("number")
             if diagnosable_results(t)]
    return start_diagnosis(tasks, limit=limit) if tasks else None


__all__ = ["REQUESTED_BY", "RunError", "queue_follow_up_diagnosis", "smallest_configs_per_task", "start_first_start"]
