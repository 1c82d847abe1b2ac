"""The sweeps every worker's heartbeat round runs: runs a dead executor left behind go back on the queue (or end
`failed` after RUNNER_MAX_REQUEUES re-queues in a row), queued jobs nobody took are sent again, and runs a worker
declined (no GPU, not its Paddle release) are re-queued when a worker that can run them starts."""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from ...models import TestRun
from ...vocab import WaitingReason
from ...selectors.envs import split_key
from .. import shards
from ..queue import enqueue_run
from .matrix import MATRIX, refresh_matrix

log = logging.getLogger(__name__)

# Start of the message the heartbeat round leaves on a queued run whose job it sent again (resend_unclaimed_runs;
# waiting: RESENT).
RESENT = "job sent again"


def stale_after() -> timedelta:
    """A running run whose executor hasn't reported for this long is orphaned."""
    return timedelta(seconds=settings.RUNNER_STALE_SECONDS)


def queued_resend_after() -> timedelta:
    """A queued run nobody took off the queue for this long is sent again (RUNNER_QUEUED_RESEND_SECONDS)."""
    return timedelta(seconds=settings.RUNNER_QUEUED_RESEND_SECONDS)


def max_requeues() -> int:
    """Re-queues in a row without a new verdict after which the stale sweep ends a run `failed`."""
    return settings.RUNNER_MAX_REQUEUES


def executor_dead(run: TestRun, *, now=None) -> bool:
    """True when the run's executor of record is gone: its process on this host has exited, or it fell silent."""
    now = now or timezone.now()
    if shards.process_gone(run.executor):
        return True
    return run.heartbeat_at is None or now - run.heartbeat_at > stale_after()


def requeue_declined_gpu_runs(*, enqueue: bool = True) -> list[int]:
    """GPU runs whose queue message a CPU-only cluster consumed (a CPU host started on the GPU queue) and
    declined go back on the GPU queue; a worker that can serve the GPU lane calls this when it starts.
    Without it such a run would stay queued forever: no message is left for any GPU worker to receive."""
    declined = TestRun.objects.filter(lane=TestRun.Lane.GPU, state=TestRun.State.QUEUED,
                                      waiting=WaitingReason.GPU_WORKER)
    return _requeue_declined(declined, lambda run: "requeued for a GPU worker", enqueue=enqueue)


def served_runs_q(keys: list[str]) -> Q:
    """Runs a worker advertising these env keys can execute: a plain release's runs on the project's Torch, and for
    a key pairing a release with another Torch ("3.3.1+torch2.14.1") the runs asking for exactly that pair."""
    plain = [key for key in keys if not split_key(key)[1]]
    served = Q(release__in=plain, torch="")
    for key in keys:
        release, torch = split_key(key)
        if torch:
            served |= Q(release=release, torch=torch)
    return served


def requeue_declined_release_runs(releases: list[str], *, enqueue: bool = True) -> list[int]:
    """Runs a worker without their Paddle release declined go back on the queue when a worker that has
    the release starts (their queue message was consumed by the declining worker)."""
    declined = TestRun.objects.filter(served_runs_q(releases), state=TestRun.State.QUEUED,
                                      waiting=WaitingReason.RELEASE_WORKER)
    return _requeue_declined(declined, lambda run: f"requeued for a worker with Paddle {run.release}"
                                                   + (f" and Torch {run.torch}" if run.torch else ""),
                             enqueue=enqueue)


def _requeue_declined(declined, requeued_message, *, enqueue: bool) -> list[int]:
    """Each declined run back on its queue, no longer waiting, its message ``requeued_message(run)``."""
    requeued = []
    for run in declined:
        # Conditional on the decline we saw, so two starting workers don't both enqueue it.
        if TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED, waiting=run.waiting,
                                  message=run.message).update(waiting=WaitingReason.NONE,
                                                              message=requeued_message(run)):
            requeued.append(run.pk)
            if enqueue:
                enqueue_run(run)
    return requeued


def _requeue_or_fail(run: TestRun, why: str, **requeue_fields) -> str | None:
    """The stale sweep's step for one orphaned run: back on the queue ("requeued"), or `failed` ("failed") once it
    was re-queued RUNNER_MAX_REQUEUES times in a row without a new verdict; None when another sweeper won.

    Conditional on the state, executor and heartbeat we judged dead, so two sweepers don't both act. ``why`` is
    the re-queue message; an executor error left on the run is kept in it, so the page says what happened.
    """
    judged = TestRun.objects.filter(pk=run.pk, state=run.state, executor=run.executor, heartbeat_at=run.heartbeat_at)
    error = run.message if run.waiting == WaitingReason.EXECUTOR_ERROR else ""
    if run.requeues >= max_requeues():
        message = (f"failed: the stale sweep re-queued this run {run.requeues} times in a row and its executor "
                   f"({run.executor or 'unknown'}) stopped again without storing a verdict"
                   f"{f' — {error}' if error else ''}. Limit: RUNNER_MAX_REQUEUES={max_requeues()}.")
        if not judged.update(state=TestRun.State.FAILED, finished_at=timezone.now(), waiting=WaitingReason.NONE,
                             message=message[:5000]):
            return None
        log.warning("run %s: %s", run.pk, message)
        if run.parent_id:
            refresh_matrix(run.parent)
        return "failed"
    message = f"{why} ({error})" if error else why
    if not judged.update(requeues=F("requeues") + 1, waiting=WaitingReason.NONE, message=message[:5000],
                         **requeue_fields):
        return None
    return "requeued"


def requeue_lost_queued_runs(*, enqueue: bool = True) -> list[int]:
    """Queued runs whose job a worker took off the queue and then died before starting: queued again."""
    requeued = []
    for run in TestRun.objects.filter(state=TestRun.State.QUEUED).exclude(executor=""):
        if not executor_dead(run):
            continue
        outcome = _requeue_or_fail(run, f"queued again: worker {run.executor} died after taking its job off the queue",
                                   executor="", heartbeat_at=None)
        if outcome == "requeued":
            requeued.append(run.pk)
            if enqueue:
                enqueue_run(run)
    return requeued


def resend_unclaimed_runs(lanes: list[str], releases: list[str], *, enqueue: bool = True, now=None) -> list[int]:
    """Queued runs of these lanes and releases whose job nobody has taken off the queue (no dequeue mark) for
    RUNNER_QUEUED_RESEND_SECONDS since it was last sent: their job is put on the lane's queue again.

    A job can be lost without a trace: a qcluster's pusher takes jobs off the broker while its worker is busy, and
    a cluster killed then takes them with it (Redis never redelivers; the ORM broker only after Q_RETRY). The
    duplicate job this sends when the first one was merely waiting behind others is a no-op: starting a run is an
    atomic UPDATE (queued → running, see _claim), and a job for a started run only leases shards nobody holds.
    Not a re-queue for RUNNER_MAX_REQUEUES: no executor ran. Conditional on the ``sent_at`` seen, so two
    workers' heartbeat rounds send it once per interval. Called by every worker's heartbeat round with what it
    serves, so a run is only re-sent while a worker that can run it is alive (no pile of jobs nobody consumes).
    """
    now = now or timezone.now()
    cutoff = now - queued_resend_after()
    waiting = (TestRun.objects.filter(served_runs_q(["", *releases]), state=TestRun.State.QUEUED, executor="",
                                      lane__in=lanes)
               .exclude(release=MATRIX)
               .filter(Q(sent_at__lte=cutoff) | Q(sent_at__isnull=True, created__lte=cutoff)))
    resent = []
    for run in waiting:
        since = run.sent_at or run.created
        waited = int((now - since).total_seconds())
        fields = {"sent_at": now}
        # Any other message stays (a decline's run is what requeue_declined_*_runs look for; a re-queue's says why).
        if not run.message or run.waiting == WaitingReason.RESENT:
            fields["waiting"] = WaitingReason.RESENT
            fields["message"] = f"{RESENT}: queued {waited} s with no worker taking it off the queue"
        if not TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED, executor="",
                                      sent_at=run.sent_at).update(**fields):
            continue  # taken meanwhile, or another worker sent it
        log.info("run %s: queued %s s with no worker taking its job: its job is sent to the %s lane's queue again",
                 run.pk, waited, run.lane)
        resent.append(run.pk)
        if enqueue:
            enqueue_run(run)
    return resent


def resume_orphaned_runs(*, enqueue: bool = True) -> list[int]:
    """Work a dead executor left behind goes back on the queue: the lapsed shards of a run other executors are
    still working on (one job per shard), a run left `running` with no live executor (back to `queued`), and
    queued runs whose job a dead worker had taken off the queue before starting them. A run that keeps losing
    its executor without storing a verdict ends `failed` instead (see _requeue_or_fail)."""
    resumed = requeue_lost_queued_runs(enqueue=enqueue)
    # A matrix parent has no executor or shard of its own (refresh_matrix keeps its state): its lanes are judged.
    for run in TestRun.objects.filter(state=TestRun.State.RUNNING).exclude(release=MATRIX):
        if shards.live_lease(run):
            if _requeue_lapsed_shards(run, enqueue=enqueue):
                resumed.append(run.pk)
            continue
        if not executor_dead(run):
            continue
        stopped = "stopped" if run.waiting == WaitingReason.EXECUTOR_ERROR else "died"
        # Queued without its dead executor's name, or the next sweep takes it for a lost job and queues it twice.
        outcome = _requeue_or_fail(run, f"resumed after its executor {run.executor} {stopped}",
                                   state=TestRun.State.QUEUED, executor="", heartbeat_at=None)
        if outcome == "requeued":
            shards.requeue_lapsed(run)
            resumed.append(run.pk)
            if enqueue:
                enqueue_run(run)
    return resumed


def _requeue_lapsed_shards(run: TestRun, *, enqueue: bool) -> list[int]:
    """A run still worked on by a live executor: its lapsed shards only go back, each with a job of its own
    (an idle qcluster takes it; a live executor of the run takes it over anyway when it runs out of shards)."""
    requeued = shards.requeue_lapsed(run)
    if requeued:
        log.info("run %s: shards %s re-queued, their executor is gone", run.pk, requeued)
    for _ in requeued if enqueue else []:
        enqueue_run(run)
    return requeued
