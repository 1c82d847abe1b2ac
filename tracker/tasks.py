"""django-q2 entry points for re-test runs, and the hooks that make a qcluster a runner worker.

Routing: CPU runs go to the queue RUNNER_CPU_QUEUE (default: the site's cluster name), GPU runs to
RUNNER_GPU_QUEUE (default "gpu"). A GPU host runs ``Q_CLUSTER_NAME=gpu python manage.py qcluster``
against the same database/broker; without one, GPU runs simply stay queued and their page says
"waiting for a GPU worker".

When a qcluster worker process starts it (1) advertises the lanes it can serve in WorkerHeartbeat
(gpu only when its Paddle is compiled with CUDA) and keeps that fresh, (2) resumes runs left
`running` by a dead executor (kill -9 of a previous cluster), and (3) on a CUDA build, puts back on
the GPU queue the GPU runs a CPU-only cluster received and declined.
"""
from __future__ import annotations

import logging
import os
import socket
import threading

from django.conf import settings
from django.utils import timezone

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 60


def cpu_queue() -> str:
    return getattr(settings, "RUNNER_CPU_QUEUE", "") or settings.Q_CLUSTER.get("name", "default")


def gpu_queue() -> str:
    return getattr(settings, "RUNNER_GPU_QUEUE", "") or "gpu"


def queue_for_lane(lane: str) -> str:
    return gpu_queue() if lane == "gpu" else cpu_queue()


def enqueue_run(run) -> str:
    from django_q.tasks import async_task

    return async_task("tracker.tasks.execute_run_task", run.pk, cluster=queue_for_lane(run.lane),
                      task_name=f"run-{run.pk}-{timezone.now():%H%M%S%f}", group="runs")


def execute_run_task(run_id: int) -> dict:
    """The queued job: execute (or resume) one run."""
    from .services.runs import execute_run

    report = execute_run(run_id)
    return {"run": run_id, "state": report.state, "executed": report.executed}


def resume_runs_task() -> list[int]:
    from .services.runs import resume_orphaned_runs

    return resume_orphaned_runs()


# ----------------------------------------------------------------------------- worker hooks


def _cluster_name() -> str:
    from django_q.conf import Conf

    return Conf.CLUSTER_NAME


def advertise(lanes: list[str], paddle_version: str, name: str | None = None, releases: list[str] | None = None):
    from .models import WorkerHeartbeat

    host = socket.gethostname()
    name = name or f"{_cluster_name()}@{host}:{os.getpid()}"
    # The releases this worker serves: its main env's Paddle plus every installed paddle env.
    releases = releases if releases is not None else ([paddle_version] if paddle_version else [])
    WorkerHeartbeat.objects.update_or_create(
        name=name, defaults={"host": host, "lanes": lanes, "paddle_version": paddle_version, "releases": releases,
                             "last_seen": timezone.now()})
    return name


def _worker_lanes() -> tuple[list[str], str]:
    """Lanes this cluster serves: its queue's lane, gpu only with a CUDA build of Paddle."""
    from apitester.pool import probe_capabilities

    caps = probe_capabilities()
    if _cluster_name() == gpu_queue():
        lanes = ["gpu"] if caps.get("cuda") else []
        if not caps.get("cuda"):
            log.warning("cluster %s consumes the GPU queue but Paddle %s is CPU-only: it runs no GPU verdicts",
                        _cluster_name(), caps.get("paddle_version"))
    else:
        lanes = ["cpu"]
    return lanes, caps.get("paddle_version", "")


def _heartbeat_loop(stop: threading.Event) -> None:
    from django.db import close_old_connections

    from .services.runs import resume_orphaned_runs

    from .services import paddle_envs

    try:
        lanes, version = _worker_lanes()
    except Exception:
        log.exception("cannot probe paddle for the worker heartbeat")
        return
    # Every release it has an env for (probed when the env was built: paddle-env.json).
    releases = sorted({version, *(env.version for env in paddle_envs.installed())} - {""},
                      key=paddle_envs.version_key)
    try:
        from .services.runs import requeue_declined_release_runs

        requeued = requeue_declined_release_runs(releases)
        if requeued:
            log.info("requeued runs %s that a worker without their Paddle release had declined", requeued)
    except Exception:
        log.exception("requeueing declined release runs failed")
    if "gpu" in lanes:
        try:
            from .services.runs import requeue_declined_gpu_runs

            requeued = requeue_declined_gpu_runs()
            if requeued:
                log.info("requeued GPU runs %s that a CPU-only worker had declined", requeued)
        except Exception:
            log.exception("requeueing declined GPU runs failed")
    while True:
        try:
            advertise(lanes, version, releases=releases)
            # Also the periodic sweep for runs whose executor fell silent (e.g. its host was lost).
            resumed = resume_orphaned_runs()
            if resumed:
                log.info("resumed runs %s left by a dead executor", resumed)
        except Exception:
            log.exception("worker heartbeat failed")
        finally:
            close_old_connections()
        if stop.wait(HEARTBEAT_SECONDS):
            return


def on_worker_spawn(sender=None, proc_name=None, **kwargs) -> None:
    """post_spawn receiver (connected in TrackerConfig.ready)."""
    stop = threading.Event()
    threading.Thread(target=_heartbeat_loop, args=(stop,), name="runner-heartbeat", daemon=True).start()
    try:
        from .services.runs import resume_orphaned_runs

        resumed = resume_orphaned_runs()
        if resumed:
            log.info("resumed runs %s left by a dead executor", resumed)
    except Exception:
        log.exception("resuming orphaned runs failed")


def connect_signals() -> None:
    from django_q.signals import post_spawn

    post_spawn.connect(on_worker_spawn, dispatch_uid="tracker.runner.on_worker_spawn")
