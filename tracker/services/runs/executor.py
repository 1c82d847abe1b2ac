"""Executing a run: an executor claims the run (an atomic UPDATE on state/executor), leases its shards one at a time,
feeds their configs to an apitester.pool WorkerPool and stores each verdict as it arrives; the executor that finishes
the last shard ends the run and records its outcomes.

A redelivered queue message or a second cluster never runs a config twice: shards are leased by one executor at a
time, and the (run, failing_config) unique constraint is the last line of defence.
"""
from __future__ import annotations

import logging
import math
import os
import socket
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from apitester.pool import PoolError, TimeBudget, WorkerPool, warm_pool

from ...models import ConfigResult, FailingConfig, RunShard, TestRun
from ...selectors.envs import env_key
from ...selectors.runs import run_configs
from ...vocab import ACTIVE_RUN_STATES, WaitingReason
from .. import latest, paddle_envs, shards
from ..queue import enqueue_run
from .matrix import refresh_matrix
from .outcomes import record_run_outcomes
from .store import WrongBuild, check_flags_in_effect, check_release_build, expected_paddle, store_result

log = logging.getLogger(__name__)

# Start of the message a CPU-only executor leaves on a GPU run it received and declined (waiting: GPU_WORKER).
GPU_DECLINED = "waiting for a GPU worker"

# Start of the message an executor without the run's Paddle release leaves on the run it declined (waiting:
# RELEASE_WORKER).
RELEASE_DECLINED = "waiting for a worker with Paddle"

# Start of the message an executor leaves on the run when something outside any one config stopped it (waiting:
# EXECUTOR_ERROR).
EXECUTOR_ERROR = "executor error"


def runner_workers() -> int:
    return settings.RUNNER_WORKERS


def pool_options() -> dict:
    budget_mb = settings.RUNNER_MEMORY_BUDGET_MB
    return {
        "time_budget": TimeBudget(
            base=settings.RUNNER_TIME_BASE,
            per_million_elements=settings.RUNNER_TIME_PER_MELEMENT,
            maximum=settings.RUNNER_TIME_MAX,
        ),
        "memory_budget": budget_mb * 2**20 if budget_mb else None,
        "threads_per_worker": settings.RUNNER_THREADS_PER_WORKER or None,
        "readings_per_group": settings.RUNNER_READINGS_PER_GROUP,
    }


def torch_cache_for(run: TestRun) -> dict | None:
    """The Torch result cache a run's workers use: a release matrix's lanes (and bisection probes) share Torch's results
    across Paddle builds; a single run has nothing to share them with (apitester.engine.torch_cache)."""
    if not run.parent_id or not settings.TORCH_CACHE_DIR:
        return None
    return {"dir": settings.TORCH_CACHE_DIR, "max_bytes": settings.TORCH_CACHE_MAX_MB << 20}


def executor_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class ExecutionReport:
    run_id: int
    state: str
    executed: int = 0  # configs this call ran (a resume runs only the ones without a result)
    skipped_existing: int = 0
    shards_finished: int = 0  # shards this call leased and finished
    worker_seconds: float = 0.0
    wall_seconds: float = 0.0
    statuses: dict = field(default_factory=dict)
    finished_here: bool = False  # this call recorded the run as done (its outcomes): what follows a run, once


def execute_run(run_id: int, *, workers: int | None = None, options: dict | None = None,
                fan_out: bool = False) -> ExecutionReport:
    """Work on the run until none of its shards is left to lease; returns what this call did.

    Safe to call twice or concurrently, from several hosts: each shard is leased by one executor at a time,
    and only configs without a result run. ``fan_out`` (the queued job's): the executor that starts the run
    puts one more job per remaining shard on the lane's queue, so other qclusters join in. The in-process
    path (``retest --inline``) leaves it off and works through every shard itself.
    """
    started = time.monotonic()
    run = TestRun.objects.get(pk=run_id)
    report = ExecutionReport(run_id, run.state)
    if run.state not in ACTIVE_RUN_STATES:
        return report
    if run.lanes.exists():
        return report  # a matrix parent: its lanes are the runs that execute
    try:
        python = paddle_envs.interpreter_for(run.release, run.torch)
    except paddle_envs.EnvError:
        # Not a release (or release and Torch pair) this host has: leave it queued for a worker that has it (never
        # the wrong build).
        TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(
            waiting=WaitingReason.RELEASE_WORKER,
            message=f"{RELEASE_DECLINED} {env_key(run.release, run.torch)} (this host has: "
                    f"{', '.join(paddle_envs.served_keys())})")
        report.state = TestRun.objects.get(pk=run.pk).state
        return report
    shards.ensure_shards(run)
    if not shards.has_work(run):
        # Every shard is done or held by a live executor (e.g. a job of the fan-out arriving late).
        _finish_if_complete(run, report)
        return report
    me = executor_name()
    mark_dequeued(run, me)

    opts = {**pool_options(), "python": python, **(options or {})}
    if run.threads:  # the run pins both frameworks to its thread count (None: a run from before, the pool's default)
        opts["threads_per_worker"] = run.threads
    if run.paddle_flags:  # set in each worker's environment before it imports Paddle (apitester.pool)
        opts["paddle_flags"] = dict(run.paddle_flags)
    try:
        return _execute(run, me, report, started, workers, opts, fan_out)
    except PoolError as exc:
        # Paddle/torch can't even start here (e.g. a broken env): say so on the run, store nothing.
        TestRun.objects.filter(pk=run.pk, state__in=ACTIVE_RUN_STATES).update(
            state=TestRun.State.FAILED, finished_at=timezone.now(), waiting=WaitingReason.NONE,
            message=f"workers could not start: {exc}")
        report.state = TestRun.State.FAILED
        if run.parent_id:
            refresh_matrix(run.parent)
        return report
    except Exception as exc:
        # Not one config's doing (those become verdicts): the run is left to the stale sweep, which re-queues
        # it now (no heartbeat) and ends it `failed` after RUNNER_MAX_REQUEUES; its page says why meanwhile.
        log.exception("run %s: the executor stopped", run.pk)
        TestRun.objects.filter(pk=run.pk, state__in=ACTIVE_RUN_STATES, executor=me).update(
            heartbeat_at=None, waiting=WaitingReason.EXECUTOR_ERROR,
            message=f"{EXECUTOR_ERROR}: {type(exc).__name__}: {str(exc)[:500]}")
        report.state = TestRun.objects.get(pk=run.pk).state
        return report


def _declined(run: TestRun, info: dict, build: dict) -> bool:
    """This pool can't give the run's verdicts (a CPU build on the GPU lane, another Paddle release): say so on
    a queued run and leave it to a worker that can; True when declined."""
    if run.lane == TestRun.Lane.GPU and not info.get("cuda"):
        # Never a GPU verdict from a CPU build. Its queue message is consumed now, so the message below marks
        # the run for requeue_declined_gpu_runs().
        TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(
            executor="", heartbeat_at=None, waiting=WaitingReason.GPU_WORKER,
            message=f"{GPU_DECLINED} (this worker's Paddle {info.get('paddle_version')} is CPU-only)")
        return True
    try:
        check_release_build(run, build)
    except WrongBuild as exc:
        TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(
            waiting=WaitingReason.RELEASE_WORKER, message=f"{RELEASE_DECLINED} {expected_paddle(run)} ({exc})")
        return True
    return False


def _flags_not_taken(run: TestRun, build: dict) -> bool:
    """The workers' Paddle did not read the run's flags as asked (checked when the run was requested, so only a
    build changed since): the run ends failed, saying so, with no verdict; True when it did."""
    try:
        check_flags_in_effect(run, build)
    except WrongBuild as exc:
        TestRun.objects.filter(pk=run.pk, state__in=ACTIVE_RUN_STATES).update(
            state=TestRun.State.FAILED, finished_at=timezone.now(), waiting=WaitingReason.NONE, message=str(exc))
        if run.parent_id:
            refresh_matrix(run.parent)
        return True
    return False


def _start(run: TestRun, info: dict, fan_out: bool) -> None:
    """The executor that moved the run from queued to running records the build and, for a queued job, puts
    one job per further shard on the lane's queue (each job leases shards until none is left)."""
    done = ConfigResult.objects.filter(run=run).count()
    build = (info.get("paddle_version", ""), info.get("paddle_commit", ""))
    rebuilt = done and build != (run.paddle_version, run.paddle_commit)
    TestRun.objects.filter(pk=run.pk).update(
        paddle_version=info.get("paddle_version", ""), paddle_commit=info.get("paddle_commit", ""),
        torch_version=info.get("torch_version", ""), host=socket.gethostname(),
        started_at=run.started_at or timezone.now(), total=run_configs(run).count(), done=done, message="",
        waiting=WaitingReason.NONE)
    if rebuilt:  # results stored under the run's former build: their counts follow the run's build
        latest.rebuild(ConfigResult.objects.filter(run=run).values_list("failing_config_id", flat=True))
    if run.parent_id:
        refresh_matrix(run.parent)
    if fan_out:
        for _ in range(shards.queued_count(run) - 1):
            enqueue_run(run)


def _execute(run: TestRun, me: str, report: ExecutionReport, started: float, workers, opts,
             fan_out: bool) -> ExecutionReport:
    with warm_pool(settings.RUNNER_WARM_POOLS, workers or runner_workers(), device=run.lane, **opts) as pool:
        pool.readings_token = f"run {run.pk}"  # the readings' quota is per run (apitester.readings.Quota)
        pool.readings = run.readings  # asked for by the run (retest --readings, the alignment page), else none
        pool.torch_cache = torch_cache_for(run)
        # Its first ready worker's build; check_build refuses a build other than the run's release.
        info = pool.wait_ready()
        if _declined(run, info, pool.build) or _flags_not_taken(run, pool.build):
            report.state = TestRun.objects.get(pk=run.pk).state
            return report
        claimed = _claim(run, me)
        if claimed is None:
            report.state = TestRun.objects.get(pk=run.pk).state
            return report
        report.skipped_existing = ConfigResult.objects.filter(run=run).count()
        if claimed == "started":
            _start(run, info, fan_out)
        _run_shards(run, me, pool, report)
    _finish_if_complete(run, report)
    report.wall_seconds = time.monotonic() - started
    return report


def _claim(run: TestRun, me: str) -> str | None:
    """Start the run ("started": queued → running, `me` its executor of record), or join it while it runs
    ("joined": shards are shared, each one leased by one executor); None when it is no longer active."""
    now = timezone.now()
    fields = {"state": TestRun.State.RUNNING, "executor": me, "heartbeat_at": now}
    if TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(**fields):
        return "started"
    run.refresh_from_db()
    return "joined" if run.state == TestRun.State.RUNNING else None


def mark_dequeued(run: TestRun, me: str) -> bool:
    """A queued run's job was taken off the queue by `me`, which now starts its workers.

    Starting Paddle and Torch takes a while; if this process dies before it claims the run, the job is
    gone (Redis has no acknowledgement) and the run would stay `queued` for ever. The mark lets the
    resume sweep see that: a queued run marked by a dead executor is queued again.
    """
    return bool(TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(
        executor=me, heartbeat_at=timezone.now()))


class _HeldShards:
    """The shards an executor holds while its pool works through them. The next shard is leased when the pool has
    sent every config it has and a worker is free, so no worker waits at a shard's end for the shard's slowest
    config (one shard at a time idled a worker for about half a config at each of a lane's shard ends)."""

    def __init__(self, run: TestRun, me: str, report: ExecutionReport):
        self.run, self.me, self.report = run, me, report
        self.held: dict[int, RunShard] = {}
        self.open: dict[int, set[int]] = {}      # shard id -> its configs without a stored verdict
        self.shard_of: dict[int, int] = {}       # config id -> shard id
        self.by_id: dict[int, FailingConfig] = {}
        self.last_beat = time.monotonic()
        self.stopped = False

    def lease(self) -> list[tuple[int, str]]:
        """The next shard's configs that have no result yet ([] when no shard is left, or after a stop); a leased
        shard with none left is finished on the spot."""
        while not self.stopped and (shard := shards.lease_next(self.run, self.me)) is not None:
            # The newest leaser is the run's executor of record: alive whenever anyone is still working on it,
            # so the sweep never sends a run back to `queued` under a live executor between two of its shards.
            TestRun.objects.filter(pk=self.run.pk, state=TestRun.State.RUNNING).update(executor=self.me)
            done_ids = set(ConfigResult.objects.filter(run=self.run, failing_config_id__in=shard.config_ids)
                           .values_list("failing_config_id", flat=True))
            by_id = {fc.id: fc for fc in FailingConfig.objects.filter(pk__in=shard.config_ids)}
            pending = [by_id[i] for i in shard.config_ids if i in by_id and i not in done_ids]
            if not pending:
                self._finish(shard)
                continue
            self.held[shard.pk], self.open[shard.pk] = shard, {fc.id for fc in pending}
            for fc in pending:
                self.shard_of[fc.id], self.by_id[fc.id] = shard.pk, fc
            return [(fc.id, fc.config) for fc in pending]
        return []

    def should_stop(self) -> bool:
        """Lease renewal (the heartbeat) and cancel check, every few seconds even while a slow config runs: stop
        when the run is no longer running or a held shard's lease was lost."""
        if time.monotonic() - self.last_beat < 2.0:
            return self.stopped
        self.last_beat = time.monotonic()
        held = [shards.renew(shard, self.me) for shard in self.held.values()]  # every one, not up to a loss
        TestRun.objects.filter(pk=self.run.pk).update(heartbeat_at=timezone.now())
        state = TestRun.objects.values_list("state", flat=True).get(pk=self.run.pk)
        self.stopped = self.stopped or not all(held) or state != TestRun.State.RUNNING
        return self.stopped

    def stored(self, config_id: int) -> None:
        """The config's verdict is stored: its shard is finished when it was the shard's last."""
        shard_id = self.shard_of.pop(config_id)
        self.open[shard_id].discard(config_id)
        if not self.open[shard_id]:
            del self.open[shard_id]
            self._finish(self.held.pop(shard_id))

    def _finish(self, shard: RunShard) -> None:
        if shards.finish(shard, self.me):
            self.report.shards_finished += 1
        else:
            self.stopped = True  # the lease was lost: another executor has the shard now


def _run_shards(run: TestRun, me: str, pool: WorkerPool, report: ExecutionReport) -> None:
    """Lease shards and run their configs until none is left, the run is cancelled or a lease is lost (what the
    pool had in flight is then abandoned with it)."""
    held = _HeldShards(run, me, report)
    progress = _Progress(run)
    try:
        # Grouped by task: in the first shard every task's smallest config comes first (pool.dispatch_order).
        for result in pool.run(held.lease(), should_stop=held.should_stop, more=held.lease,
                               group_of=lambda fc_id: held.by_id[fc_id].task_id):
            if held.should_stop():
                return
            if store_result(run, held.by_id[result.key], result.verdict, result.seconds, result.attempts,
                            build=result.build or pool.build):
                report.executed += 1
                report.worker_seconds += result.seconds
                report.statuses[result.status] = report.statuses.get(result.status, 0) + 1
                progress.stored()
            held.stored(result.key)
            if held.stopped:
                return
    finally:
        progress.write()


class _Progress:
    """The run's ``done`` count, written at most every PROGRESS_SECONDS while verdicts are stored and once when the
    executor stops. The count is the run's results (COUNT, right whichever executors stored them), and counting a
    lane of 3,292 configs after every verdict was a quarter of the executor's CPU in the release matrix
    (2026-12-05), time taken from the workers on a 2-core host."""

    PROGRESS_SECONDS = 1.0

    def __init__(self, run: TestRun):
        self.run = run
        self.unwritten = False
        self.written_at = -math.inf

    def stored(self) -> None:
        self.unwritten = True
        if time.monotonic() - self.written_at >= self.PROGRESS_SECONDS:
            self.write()

    def write(self) -> None:
        if not self.unwritten:
            return
        # A stored verdict is progress: the sweep's count of re-queues in a row starts again.
        TestRun.objects.filter(pk=self.run.pk).update(
            done=ConfigResult.objects.filter(run=self.run).count(), heartbeat_at=timezone.now(), requeues=0)
        self.unwritten, self.written_at = False, time.monotonic()


def _finish_if_complete(run: TestRun, report: ExecutionReport) -> None:
    """The run is done once every shard is: the executor whose conditional UPDATE wins records the outcome."""
    run.refresh_from_db()
    # Queued too: an executor that died after finishing the last shard leaves a run the sweep re-queued.
    if run.state in ACTIVE_RUN_STATES and shards.all_done(run):
        done = ConfigResult.objects.filter(run=run).count()
        if TestRun.objects.filter(pk=run.pk, state=run.state).update(
                state=TestRun.State.DONE, finished_at=timezone.now(), done=done, waiting=WaitingReason.NONE):
            run.refresh_from_db()
            record_run_outcomes(run)
            report.finished_here = True
    if run.parent_id:
        refresh_matrix(run.parent)
    report.state = TestRun.objects.get(pk=run.pk).state
