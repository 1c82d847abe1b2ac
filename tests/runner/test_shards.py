"""A run's shards (issue 20, item 3), in-process: the plan keeps first verdicts first, a lease is held by one
executor at a time, a lapsed lease is taken over or re-queued by the sweep, and execute_run works through
every shard itself (the `retest --inline` path) with one result per config."""
import os
import socket
import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone

from apitester.pool import TimeBudget
from tracker.models import ConfigResult, FailingConfig, RunShard, TestRun
from tracker.services import shards
from tracker.selectors.envs import main_version
from tracker.services.runs import create_matrix_run, create_run, execute_run, resume_orphaned_runs, store_result

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}


def _clip(*shape):
    return f'paddle.clip(Tensor({list(shape)},"float64"), min=0.0, )'


def _dead_owner() -> str:
    """An executor name of this host whose process has exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return f"{socket.gethostname()}:{child.pid}"


def _me() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@pytest.fixture
def three_tasks(settings):
    settings.RUNNER_SHARD_SIZE = 2
    make_task(1, "paddle.clip", [_clip(60, 60), _clip(20, 20), _clip(3)])
    make_task(2, "paddle.clip", [_clip(50, 50), _clip(6)])
    make_task(3, "paddle.clip", [_clip(30, 30)])
    return create_run("tasks", tasks=[1, 2, 3], lane="cpu")


def _configs(shard):
    by_id = dict(FailingConfig.objects.filter(pk__in=shard.config_ids).values_list("id", "config"))
    return [by_id[i] for i in shard.config_ids]


def test_shards_follow_the_dispatch_order_each_tasks_smallest_config_first(three_tasks):
    assert shards.ensure_shards(three_tasks) == 3
    assert shards.ensure_shards(three_tasks) == 3  # made once
    plan = [_configs(s) for s in RunShard.objects.filter(run=three_tasks).order_by("index")]
    # One config per task first (smallest first), then the rest largest first; every config once.
    assert plan == [[_clip(3), _clip(6)], [_clip(30, 30), _clip(60, 60)], [_clip(50, 50), _clip(20, 20)]]


def test_a_shard_is_leased_by_one_executor_and_a_lapsed_lease_is_taken_over(three_tasks):
    shards.ensure_shards(three_tasks)
    first, second, third = (shards.lease_next(three_tasks, f"host-{n}:1") for n in "abc")
    assert [first.index, second.index, third.index] == [0, 1, 2]
    assert shards.lease_next(three_tasks, "host-d:1") is None  # all held, none lapsed
    assert not shards.renew(first, "host-d:1") and shards.renew(first, "host-a:1")

    # host-b stops renewing: its lease lapses and the next executor without a shard takes it over.
    RunShard.objects.filter(pk=second.pk).update(lease_expires=timezone.now() - timedelta(seconds=1))
    taken = shards.lease_next(three_tasks, "host-d:1")
    assert (taken.index, taken.lease_owner, taken.attempts) == (1, "host-d:1", 2)
    assert not shards.renew(second, "host-b:1") and not shards.finish(second, "host-b:1")  # b lost it
    assert shards.finish(taken, "host-d:1") and RunShard.objects.get(pk=second.pk).done_by == "host-d:1"

    # An owner on this host whose process exited has lapsed at once, whatever its expiry says.
    RunShard.objects.filter(pk=third.pk).update(lease_owner=_dead_owner())
    assert shards.lease_next(three_tasks, "host-e:1").index == 2


def test_sweep_requeues_only_the_dead_executors_shard_while_another_works(three_tasks):
    shards.ensure_shards(three_tasks)
    TestRun.objects.filter(pk=three_tasks.pk).update(state="running", executor=_dead_owner(),
                                                     heartbeat_at=timezone.now())
    alive = shards.lease_next(three_tasks, _me())
    dead = shards.lease_next(three_tasks, _dead_owner())
    assert resume_orphaned_runs(enqueue=False) == [three_tasks.pk]
    assert RunShard.objects.get(pk=dead.pk).state == "queued"
    assert RunShard.objects.get(pk=alive.pk).state == "leased"
    assert TestRun.objects.get(pk=three_tasks.pk).state == "running"  # the live executor goes on
    assert resume_orphaned_runs(enqueue=False) == []  # once


def test_sweep_puts_a_run_without_a_live_executor_back_on_the_queue(three_tasks):
    shards.ensure_shards(three_tasks)
    dead = _dead_owner()
    TestRun.objects.filter(pk=three_tasks.pk).update(state="running", executor=dead, heartbeat_at=timezone.now())
    lost = shards.lease_next(three_tasks, dead)
    assert resume_orphaned_runs(enqueue=False) == [three_tasks.pk]
    run = TestRun.objects.get(pk=three_tasks.pk)
    assert (run.state, run.requeues) == ("queued", 1)
    assert RunShard.objects.get(pk=lost.pk).state == "queued"


def test_a_resumed_run_no_worker_took_yet_is_not_queued_again_by_the_next_sweep(three_tasks):
    # The run back on the queue no longer names its dead executor: the next sweep would take it for a job a worker
    # took off the queue and died with ("queued again"), enqueue it a second time and count a second re-queue
    # for one death (a release lane whose only host died waits like this for a host with the release).
    shards.ensure_shards(three_tasks)
    dead = _dead_owner()
    TestRun.objects.filter(pk=three_tasks.pk).update(state="running", executor=dead, heartbeat_at=timezone.now())
    shards.lease_next(three_tasks, dead)
    assert resume_orphaned_runs(enqueue=False) == [three_tasks.pk]
    assert resume_orphaned_runs(enqueue=False) == []
    run = TestRun.objects.get(pk=three_tasks.pk)
    assert (run.state, run.requeues, run.executor) == ("queued", 1, "")
    assert run.message == f"resumed after its executor {dead} died"


def test_execute_run_works_through_every_shard_and_skips_stored_verdicts(three_tasks):
    shards.ensure_shards(three_tasks)
    # A verdict an earlier executor stored before it died: not run again.
    first = RunShard.objects.get(run=three_tasks, index=0)
    store_result(three_tasks, FailingConfig.objects.get(pk=first.config_ids[0]), {"status": "pass"}, 0.1)
    report = execute_run(three_tasks.pk, workers=1, options=FAST)
    assert (report.state, report.executed, report.skipped_existing, report.shards_finished) == ("done", 5, 1, 3)
    results = list(ConfigResult.objects.filter(run=three_tasks).values_list("failing_config_id", flat=True))
    assert len(results) == len(set(results)) == 6
    assert set(RunShard.objects.filter(run=three_tasks).values_list("state", "done_by")) == {("done", _me())}
    run = TestRun.objects.get(pk=three_tasks.pk)
    assert (run.done, run.total) == (6, 6)



def test_the_next_shard_is_leased_while_a_slow_config_of_the_last_one_runs(settings, extra_specs):
    """Two workers, shards of two: shard 0 is the task's smallest config and the slow one. The worker that is done
    with the small one leases shard 1 and runs both its configs while the slow config still runs -- one shard at
    a time it idled until the slow config ended, and the slow verdict was stored before shard 1's."""
    settings.RUNNER_SHARD_SIZE = 2
    slow = 'paddle.testonly.slow(Tensor([64],"float32"), 3.0, )'
    fast = [f'paddle.testonly.slow(Tensor([{n}],"float32"), 0.0, )' for n in (2, 3, 4)]
    make_task(1, "paddle.testonly.slow", [slow, *fast])
    run = create_run("tasks", tasks=[1], lane="cpu")
    shards.ensure_shards(run)
    assert _configs(RunShard.objects.get(run=run, index=0)) == [fast[0], slow]
    report = execute_run(run.pk, workers=2, options=FAST)
    assert (report.state, report.executed, report.shards_finished) == ("done", 4, 2)
    stored = list(ConfigResult.objects.filter(run=run).order_by("id").values_list("failing_config__config", flat=True))
    assert stored[-1] == slow and set(stored[:3]) == set(fast)
    assert set(RunShard.objects.filter(run=run).values_list("state", flat=True)) == {"done"}


def test_sweep_leaves_a_running_matrix_parent_alone(settings):
    # A matrix parent is `running` while a lane runs, but has no executor, heartbeat or shard of its own: its
    # lanes are the runs the sweep judges. It was taken for an orphaned run, re-queued at every heartbeat round
    # and ended `failed` ("re-queued 3 times in a row") in the middle of the matrix (tests/runner/test_shards_releases.py).
    make_task(1, "paddle.clip", [_clip(3)])
    parent = create_matrix_run("task", tasks=[1], releases=[main_version()])
    [lane] = parent.lanes.all()
    TestRun.objects.filter(pk=lane.pk).update(state="running", executor=_me(), heartbeat_at=timezone.now())
    TestRun.objects.filter(pk=parent.pk).update(state="running")
    for _ in range(settings.RUNNER_MAX_REQUEUES + 1):
        assert resume_orphaned_runs(enqueue=False) == []
    parent.refresh_from_db()
    assert (parent.state, parent.requeues, parent.message) == ("running", 0, "")
