"""A queued run nobody took off the queue (its job may have died with a killed cluster's pusher) is sent to its
lane's queue again after RUNNER_QUEUED_RESEND_SECONDS, once per interval, by a worker that serves its lane and
release; and the duplicate job that makes is a no-op, because starting a run is an atomic UPDATE."""
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import OrmQ

from tracker import tasks
from tracker.models import ConfigResult, RunShard, TestRun
from tracker.services import shards
from tracker.services.runs import (RESENT, create_run, execute_run, executor_name, mark_dequeued, resend_unclaimed_runs,
                                   start_run)
from tracker.services.runs.executor import _claim
from tracker.vocab import WaitingReason

from .conftest import PASSING, make_task
from .test_shards import FAST

pytestmark = pytest.mark.django_db

RESEND = 600


@pytest.fixture
def resend(settings):
    settings.RUNNER_QUEUED_RESEND_SECONDS = RESEND
    make_task(5, "paddle.clip", PASSING[:2])


def _sent_ago(run, seconds):
    TestRun.objects.filter(pk=run.pk).update(sent_at=timezone.now() - timedelta(seconds=seconds))


def test_a_queued_run_nobody_took_is_sent_again_once_per_interval(resend):
    run = start_run("task", tasks=[5], lane="cpu")
    run.refresh_from_db()
    assert run.sent_at is not None  # enqueue_run records when
    jobs = OrmQ.objects.count()
    assert resend_unclaimed_runs(["cpu"], []) == []  # just sent: it waits its turn
    _sent_ago(run, RESEND + 1)
    assert resend_unclaimed_runs(["gpu"], []) == []  # a worker that doesn't serve the lane leaves it

    assert resend_unclaimed_runs(["cpu"], []) == [run.pk]
    run.refresh_from_db()
    assert (run.state, run.executor, run.requeues) == ("queued", "", 0)  # not a re-queue: no executor ran
    assert run.message.startswith(RESENT) and timezone.now() - run.sent_at < timedelta(seconds=60)
    assert run.waiting == WaitingReason.RESENT
    assert OrmQ.objects.count() == jobs + 1  # one more job on the CPU queue
    assert resend_unclaimed_runs(["cpu"], []) == []  # once per interval


def test_runs_that_are_marked_declined_or_of_another_release_keep_their_state(resend):
    starting = create_run("task", tasks=[5], lane="cpu")
    assert mark_dequeued(starting, executor_name())  # a worker took the job and starts it: not lost
    release = create_run("task", tasks=[5], lane="cpu")
    TestRun.objects.filter(pk=release.pk).update(release="3.1.0", waiting=WaitingReason.RELEASE_WORKER,
                                                 message="waiting for a worker with Paddle 3.1.0 (this host has: )")
    for run in (starting, release):
        _sent_ago(run, RESEND + 1)
    assert resend_unclaimed_runs(["cpu"], ["3.2.0"]) == []  # no 3.1.0 here
    # A worker with 3.1.0 sends it again; the decline's message stays for requeue_declined_release_runs.
    assert resend_unclaimed_runs(["cpu"], ["3.1.0"]) == [release.pk]
    release.refresh_from_db()
    assert release.message.startswith("waiting for a worker with Paddle 3.1.0")
    assert release.waiting == WaitingReason.RELEASE_WORKER
    started = TestRun.objects.get(pk=starting.pk)
    assert started.message == "" and started.sent_at < timezone.now() - timedelta(seconds=RESEND)


def test_the_heartbeat_round_sends_it_again(resend):
    run = create_run("task", tasks=[5], lane="cpu")  # never sent (sent_at empty): its creation counts
    TestRun.objects.filter(pk=run.pk).update(created=timezone.now() - timedelta(seconds=RESEND + 1))
    tasks.heartbeat_round(tasks._Serving(["cpu"], "3.3.1", ["3.3.1"]))
    run.refresh_from_db()
    assert run.message.startswith(RESENT) and run.sent_at is not None
    assert OrmQ.objects.count() == 1


def test_a_second_job_for_a_started_run_does_nothing(resend):
    run = create_run("task", tasks=[5], lane="cpu")
    jobs = OrmQ.objects.count()
    # The run's first job started it: this live process holds every shard (the claim was queued → running).
    TestRun.objects.filter(pk=run.pk, state="queued").update(state="running", executor=executor_name(),
                                                             heartbeat_at=timezone.now())
    while shards.lease_next(run, executor_name()) is not None:
        pass
    # The duplicate job finds nothing to start or lease: no pool, no verdict, no fan-out, the run unchanged.
    report = execute_run(run.pk, workers=1, options=FAST, fan_out=True)
    assert (report.state, report.executed, report.shards_finished) == ("running", 0, 0)
    assert not ConfigResult.objects.filter(run=run).exists() and OrmQ.objects.count() == jobs
    assert TestRun.objects.values_list("state", "executor").get(pk=run.pk) == ("running", executor_name())


def test_a_duplicate_job_after_the_run_finished_stores_no_second_verdict(resend):
    run = create_run("task", tasks=[5], lane="cpu")
    first = execute_run(run.pk, workers=1, options=FAST, fan_out=True)
    assert (first.state, first.executed) == ("done", 2)
    second = execute_run(run.pk, workers=1, options=FAST, fan_out=True)  # the re-sent job, arriving late
    assert (second.state, second.executed) == ("done", 0)
    results = list(ConfigResult.objects.filter(run=run).values_list("failing_config_id", flat=True))
    assert len(results) == len(set(results)) == 2
    assert set(RunShard.objects.filter(run=run).values_list("state", flat=True)) == {"done"}


def test_only_one_of_two_jobs_starts_the_run(resend):
    run = create_run("task", tasks=[5], lane="cpu")
    assert _claim(run, "host:1") == "started"  # the conditional UPDATE queued → running
    assert _claim(run, "host:2") == "joined"  # the other job only leases shards nobody holds
    assert TestRun.objects.values_list("state", "executor").get(pk=run.pk) == ("running", "host:1")
