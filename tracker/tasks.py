"""django-q2 entry points (re-test runs, diagnoses, the GitHub poll), and the hooks that make a qcluster a runner
worker.

The GitHub poll, for a site no webhook can reach, is scheduled once (the dotted path is stored in django-q's
Schedule table; migration 0017 moved rows that still named the old path ``tracker.github.tasks.poll``)::

    from django_q.tasks import schedule
    schedule("tracker.tasks.poll_github_task", schedule_type="I", minutes=10)

Routing lives in tracker/services/queue.py: CPU runs go to the queue RUNNER_CPU_QUEUE (default: the
site's cluster name), GPU runs to RUNNER_GPU_QUEUE (default "gpu"). A GPU host runs
``Q_CLUSTER_NAME=gpu python manage.py qcluster`` against the same database/broker; without one, GPU
runs simply stay queued and their page says "waiting for a GPU worker".

When a qcluster worker process starts (django-q2's post_spawn), one heartbeat thread (1) resumes runs
left `running` by a dead executor (kill -9 of a previous cluster) — at start and then periodically,
(2) advertises the lanes the worker can serve in WorkerHeartbeat (gpu only when its Paddle is compiled
with CUDA) and keeps that fresh, and (3) on a CUDA build, puts back on the GPU queue the GPU runs a
CPU-only cluster received and declined. The thread stops when the worker process exits.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from multiprocessing.util import Finalize

from django.conf import settings
from django.db import close_old_connections, connections

from apitester.builds import probe_build, version_key

from .github.client import client_from_settings, parse_issue_ref
from .services.diagnoses import diagnose_tasks
from .services.github_sync import sync_github
from .services.queue import gpu_queue
from .services import paddle_envs
from .services.first_start import queue_follow_up_diagnosis
from .services.workers import advertise
from .models import TestRun
from .selectors.runs import run_task_numbers
from .web.warm import warm_after_run
from .vocab import Lane
from .services.runs import (execute_run, requeue_declined_gpu_runs, requeue_declined_release_runs,
                            resend_unclaimed_runs, resume_orphaned_runs)

log = logging.getLogger(__name__)


def heartbeat_seconds() -> float:
    """Seconds between two heartbeat rounds of a worker (RUNNER_HEARTBEAT_SECONDS, default 60)."""
    return settings.RUNNER_HEARTBEAT_SECONDS


def execute_run_task(run_id: int) -> dict:
    """The queued job (services.queue.EXECUTE_RUN_TASK): work on one run's shards until none is left. The job
    that starts the run puts one more job per shard on the queue, so every qcluster serving the lane joins in."""
    report = execute_run(run_id, fan_out=True)
    if report.finished_here:
        follow_up_finished_run(run_id)
    return {"run": run_id, "state": report.state, "executed": report.executed, "shards": report.shards_finished}


def follow_up_finished_run(run_id: int) -> None:
    """What follows a run once, from the executor that recorded it done: the first start's diagnosis
    (services/first_start.py), and the public pages it changed rendered for visitors (web/warm.py, with shared
    renderings). The verdicts are stored whatever happens here: a failure is logged."""
    try:
        queue_follow_up_diagnosis(TestRun.objects.get(pk=run_id))
    except Exception:  # only the follow-up is lost; the staff diagnose button still works
        log.exception("run %s: could not queue its follow-up diagnosis", run_id)
    warm_after_run(run_id, run_task_numbers(run_id))


def diagnose_tasks_task(numbers: list[int], limit: int | None = None) -> dict:
    """The queued job (services.diagnoses.DIAGNOSE_TASK): diagnose these tasks' strictly failing configs (``limit``
    each, default DIAGNOSE_MAX_CONFIGS)."""
    return diagnose_tasks(numbers, limit)


def resume_runs_task() -> list[int]:
    return resume_orphaned_runs()


def poll_github_task() -> list[str]:
    """The scheduled job (see above): one incremental sync of the tracking issue and the board's PRs; returns the
    report lines."""
    repo, issue = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
    client = client_from_settings()
    report = sync_github(client, repo=repo, issue=issue, pr_repos=settings.GITHUB_PR_REPOS,
                         prefix=settings.GITHUB_PR_TITLE_PREFIX)
    return report.lines()


# ----------------------------------------------------------------------------- worker hooks


def _cluster_name() -> str:
    from django_q.conf import Conf

    return Conf.CLUSTER_NAME


def _worker_name() -> str:
    return f"{_cluster_name()}@{socket.gethostname()}:{os.getpid()}"


def _worker_lanes() -> tuple[list[str], str]:
    """Lanes this cluster serves: its queue's lane, gpu only with a CUDA build of Paddle."""
    caps = probe_build()
    if _cluster_name() == gpu_queue():
        lanes = [Lane.GPU.value] if caps.get("cuda") else []
        if not caps.get("cuda"):
            log.warning("cluster %s consumes the GPU queue but Paddle %s is CPU-only: it runs no GPU verdicts",
                        _cluster_name(), caps.get("paddle_version"))
    else:
        lanes = [Lane.CPU.value]
    return lanes, caps.get("paddle_version", "")


@dataclass
class _Serving:
    """What this worker serves, probed once (it starts paddle and torch in a subprocess)."""

    lanes: list[str]
    version: str
    releases: list[str]


def _probe_serving() -> _Serving:
    lanes, version = _worker_lanes()
    # Every release it has an env for (probed when the env was built: paddle-env.json), and each env pairing a
    # release with another Torch by its key ("3.3.1+torch2.14.1"): a run asking for that Torch is served only here.
    releases = sorted({version, *paddle_envs.served_keys()} - {""}, key=version_key)
    return _Serving(lanes, version, releases)


def heartbeat_round(serving: _Serving | None) -> _Serving:
    """One round: resume runs left `running` by a dead executor, take back the runs of this worker's lanes and
    releases that a worker without them declined, send again the jobs of its lanes' and releases' runs nobody took
    off the queue for RUNNER_QUEUED_RESEND_SECONDS (a killed cluster's pusher may have held them), advertise what
    it serves.

    Declined runs are taken back every round, not only at start: a host without a release consumes that
    release's job from the shared queue whenever it reaches it first, so a release run could otherwise wait
    until a host with the release restarts.
    """
    resumed = resume_orphaned_runs()
    if resumed:
        log.info("resumed runs %s left by a dead executor", resumed)
    serving = serving or _probe_serving()
    _requeue_declined_release_runs(serving.releases)
    if Lane.GPU in serving.lanes:
        _requeue_declined_gpu_runs()
    _resend_unclaimed_runs(serving)
    advertise(_worker_name(), serving.lanes, serving.version, releases=serving.releases)
    return serving


def _heartbeat_loop(stop: threading.Event) -> None:
    """This worker's one resume path and its advertisement: heartbeat_round right away, then every
    heartbeat_seconds() until `stop` is set."""
    serving = None
    try:
        while True:
            try:
                serving = heartbeat_round(serving)
            except Exception:
                log.exception("worker heartbeat failed")
            finally:
                close_old_connections()
            if stop.wait(heartbeat_seconds()):
                return
    finally:
        connections.close_all()  # this thread's own database connection


def _requeue_declined_release_runs(releases: list[str]) -> None:
    try:
        requeued = requeue_declined_release_runs(releases)
        if requeued:
            log.info("requeued runs %s that a worker without their Paddle release had declined", requeued)
    except Exception:
        log.exception("requeueing declined release runs failed")


def _resend_unclaimed_runs(serving: _Serving) -> None:
    try:
        resent = resend_unclaimed_runs(serving.lanes, serving.releases)
        if resent:
            log.info("sent the jobs of runs %s again: queued longer than RUNNER_QUEUED_RESEND_SECONDS, nobody took them",
                     resent)
    except Exception:
        log.exception("re-sending unclaimed queued runs failed")


def _requeue_declined_gpu_runs() -> None:
    try:
        requeued = requeue_declined_gpu_runs()
        if requeued:
            log.info("requeued GPU runs %s that a CPU-only worker had declined", requeued)
    except Exception:
        log.exception("requeueing declined GPU runs failed")


def _stop_heartbeat(stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(timeout=30)
    if thread.is_alive():
        log.warning("%s did not stop within 30 s", thread.name)
    else:
        log.info("%s stopped", thread.name)


def on_worker_spawn(sender=None, proc_name=None, **kwargs) -> None:
    """post_spawn receiver (connected in TrackerConfig.ready): start this worker process's heartbeat.

    django-q2 sends no signal when a worker stops. A worker leaves its task loop (STOP from a cluster
    that is shutting down, or recycling) and returns through multiprocessing's process bootstrap, which
    runs the process's finalizers: that is where the heartbeat's stop event is set and the thread joined,
    so it never dies in the middle of a database write.
    """
    stop = threading.Event()
    thread = threading.Thread(target=_heartbeat_loop, args=(stop,), name=f"runner-heartbeat-{proc_name or os.getpid()}",
                              daemon=True)
    thread.start()
    Finalize(None, _stop_heartbeat, args=(stop, thread), exitpriority=10)


def connect_signals() -> None:
    from django_q.signals import post_spawn

    post_spawn.connect(on_worker_spawn, dispatch_uid="tracker.runner.on_worker_spawn")
