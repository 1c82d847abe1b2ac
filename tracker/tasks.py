"""django-q2 entry points for re-test runs, and the hooks that make a qcluster a runner worker.

Routing lives in tracker/services/queue.py: CPU runs go to the queue RUNNER_CPU_QUEUE (default: the
site's cluster name), GPU runs to RUNNER_GPU_QUEUE (default "gpu"). A GPU host runs
``Q_CLUSTER_NAME=gpu python manage.py qcluster`` against the same database/broker; without one, GPU
runs simply stay queued and their page says "waiting for a GPU worker".

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

from django.db import close_old_connections
from django.utils import timezone

from apitester.pool import probe_capabilities

from .models import WorkerHeartbeat
from .services.queue import gpu_queue
from .services.runs import execute_run, requeue_declined_gpu_runs, resume_orphaned_runs

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 60


def execute_run_task(run_id: int) -> dict:
    """The queued job (services.queue.EXECUTE_RUN_TASK): execute (or resume) one run."""
    report = execute_run(run_id)
    return {"run": run_id, "state": report.state, "executed": report.executed}


def resume_runs_task() -> list[int]:
    return resume_orphaned_runs()


# ----------------------------------------------------------------------------- worker hooks


def _cluster_name() -> str:
    from django_q.conf import Conf

    return Conf.CLUSTER_NAME


def advertise(lanes: list[str], paddle_version: str, name: str | None = None):
    host = socket.gethostname()
    name = name or f"{_cluster_name()}@{host}:{os.getpid()}"
    WorkerHeartbeat.objects.update_or_create(
        name=name, defaults={"host": host, "lanes": lanes, "paddle_version": paddle_version, "last_seen": timezone.now()})
    return name


def _worker_lanes() -> tuple[list[str], str]:
    """Lanes this cluster serves: its queue's lane, gpu only with a CUDA build of Paddle."""
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
    try:
        lanes, version = _worker_lanes()
    except Exception:
        log.exception("cannot probe paddle for the worker heartbeat")
        return
    if "gpu" in lanes:
        try:
            requeued = requeue_declined_gpu_runs()
            if requeued:
                log.info("requeued GPU runs %s that a CPU-only worker had declined", requeued)
        except Exception:
            log.exception("requeueing declined GPU runs failed")
    while True:
        try:
            advertise(lanes, version)
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
        resumed = resume_orphaned_runs()
        if resumed:
            log.info("resumed runs %s left by a dead executor", resumed)
    except Exception:
        log.exception("resuming orphaned runs failed")


def connect_signals() -> None:
    from django_q.signals import post_spawn

    post_spawn.connect(on_worker_spawn, dispatch_uid="tracker.runner.on_worker_spawn")
