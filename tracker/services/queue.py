"""Which django-q2 queue a run goes to, and putting it there.

Both the services that create runs (`services/runs/`) and the django-q2 entry points
(`tracker/tasks.py`) import this module at their top; neither imports the other lazily.

A CPU run goes to the queue ``RUNNER_CPU_QUEUE`` (default: the site name ``Q_SITE_NAME``, the queue a
plain ``manage.py qcluster`` consumes), a GPU run to ``RUNNER_GPU_QUEUE`` (default ``gpu``, consumed by
``Q_CLUSTER_NAME=gpu manage.py qcluster`` on a GPU host). Both settings are parsed once, in
config/settings.py.
"""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from django_q.tasks import async_task

from ..models import TestRun

# The job a queued run executes: dotted path to the django-q2 entry point (django-q2 stores the name).
EXECUTE_RUN_TASK = "tracker.tasks.execute_run_task"


def cpu_queue() -> str:
    return settings.RUNNER_CPU_QUEUE


def gpu_queue() -> str:
    return settings.RUNNER_GPU_QUEUE


def queue_for_lane(lane: str) -> str:
    return gpu_queue() if lane == TestRun.Lane.GPU else cpu_queue()


def enqueue_run(run) -> str:
    """Put the run on its lane's queue; returns django-q2's task id. A queued run records when (``sent_at``): the
    heartbeat round sends it again if nobody takes it for RUNNER_QUEUED_RESEND_SECONDS (runs.resend_unclaimed_runs)."""
    task_id = async_task(EXECUTE_RUN_TASK, run.pk, cluster=queue_for_lane(run.lane),
                         task_name=f"run-{run.pk}-{timezone.now():%H%M%S%f}", group="runs")
    TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(sent_at=timezone.now())
    return task_id
