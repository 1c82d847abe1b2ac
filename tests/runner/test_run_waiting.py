"""What a run waits for is its `waiting` column (a WaitingReason), not the start of its message: the sweeps query the
column, and the migration that added it read the existing rows' messages so that they keep their meaning."""
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tracker.models import TestRun
from tracker.services.runs import (RESENT, requeue_declined_gpu_runs, requeue_declined_release_runs,
                                   resend_unclaimed_runs, resume_orphaned_runs)
from tracker.vocab import WaitingReason

from .conftest import PASSING, make_task

# (state, message) of rows written before the column existed, and the waiting reason each must be given.
OLD_ROWS = [
    ("queued", "waiting for a GPU worker (this worker's Paddle 3.3.1 is CPU-only)", "gpu_worker"),
    ("queued", "waiting for a worker with Paddle 3.0.0 (this host has: 3.3.1)", "release_worker"),
    ("queued", "job sent again: queued 700 s with no worker taking it off the queue", "resent"),
    ("running", "executor error: ValueError: Field 'number' expected a number", "executor_error"),
    ("queued", "", ""),
    ("queued", "requeued for a GPU worker", ""),
    ("queued", "resumed after its executor h:1 stopped (executor error: ValueError: x)", ""),  # not at the start
    # An ended run waits for nothing, whatever its message still says.
    ("done", "executor error: OSError: disk full", ""),
    ("cancelled", "waiting for a GPU worker (this worker's Paddle 3.3.1 is CPU-only)", ""),
]


def _waiting_migration(executor: MigrationExecutor):
    """The tracker migration that adds TestRun.waiting and the one before it (found by name: the number may move)."""
    graph = executor.loader.graph
    (added,) = [key for key in graph.nodes if key[0] == "tracker" and key[1].endswith("_testrun_waiting")]
    (before,) = [key for key in graph.node_map[added].parents if key[0] == "tracker"]
    return before, added


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_runs_the_waiting_reason_their_message_started_with():
    executor = MigrationExecutor(connection)
    before, added = _waiting_migration(executor)
    leaves = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate([before])
        old_run = MigrationExecutor(connection).loader.project_state(before).apps.get_model("tracker", "TestRun")
        assert "waiting" not in {f.name for f in old_run._meta.get_fields()}
        ids = [old_run.objects.create(state=state, message=message, lane="gpu" if "GPU" in message else "cpu").pk
               for state, message, _ in OLD_ROWS]

        MigrationExecutor(connection).migrate([added])
        new_run = MigrationExecutor(connection).loader.project_state(added).apps.get_model("tracker", "TestRun")
        rows = {row.pk: row for row in new_run.objects.filter(pk__in=ids)}
        assert [(rows[pk].state, rows[pk].message, rows[pk].waiting) for pk in ids] == OLD_ROWS  # messages unchanged
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(leaves)
    assert not MigrationExecutor(connection).migration_plan(leaves)  # the schema is back at the newest migration


@pytest.mark.django_db
def test_the_sweeps_find_runs_by_their_waiting_column_and_never_by_their_message():
    """A message that only reads like a decline (written by hand in the admin) names no waiting reason: the run is
    left alone; a run whose column says it was declined goes back on the queue, whatever its message says."""
    make_task(1, "paddle.clip", PASSING[:1])
    make_task(2, "paddle.all", ['paddle.all(Tensor([3, 4],"bool"), )'], kernel="GPU")
    lookalike_gpu = TestRun.objects.create(scope={"kind": "task", "tasks": [2]}, lane="gpu", total=1,
                                           message="waiting for a GPU worker, says the admin")
    declined_gpu = TestRun.objects.create(scope={"kind": "task", "tasks": [2]}, lane="gpu", total=1,
                                          waiting=WaitingReason.GPU_WORKER, message="declined by a CPU-only host")
    lookalike_release = TestRun.objects.create(scope={"kind": "task", "tasks": [1]}, release="3.0.0", total=1,
                                               message="waiting for a worker with Paddle 3.0.0")
    declined_release = TestRun.objects.create(scope={"kind": "task", "tasks": [1]}, release="3.0.0", total=1,
                                              waiting=WaitingReason.RELEASE_WORKER, message="declined")

    assert requeue_declined_gpu_runs(enqueue=False) == [declined_gpu.pk]
    assert requeue_declined_release_runs(["3.0.0"], enqueue=False) == [declined_release.pk]
    for run, waiting, message in ((lookalike_gpu, "", "waiting for a GPU worker, says the admin"),
                                  (declined_gpu, "", "requeued for a GPU worker"),
                                  (lookalike_release, "", "waiting for a worker with Paddle 3.0.0"),
                                  (declined_release, "", "requeued for a worker with Paddle 3.0.0")):
        run.refresh_from_db()
        assert (run.waiting, run.message) == (waiting, message)


@pytest.mark.django_db
def test_a_resent_job_refreshes_only_a_resend_s_message_and_an_executor_error_is_read_from_the_column(settings):
    settings.RUNNER_QUEUED_RESEND_SECONDS = 60
    make_task(1, "paddle.clip", PASSING[:1])
    long_ago = timezone.now() - timedelta(seconds=600)
    resent = TestRun.objects.create(scope={"kind": "task", "tasks": [1]}, total=1, sent_at=long_ago,
                                    waiting=WaitingReason.RESENT, message="job sent again: queued 61 s")
    other = TestRun.objects.create(scope={"kind": "task", "tasks": [1]}, total=1, sent_at=long_ago,
                                   message="job sent again, wrote someone by hand")
    assert sorted(resend_unclaimed_runs(["cpu"], [], enqueue=False)) == sorted([resent.pk, other.pk])
    resent.refresh_from_db()
    other.refresh_from_db()
    assert resent.waiting == WaitingReason.RESENT and resent.message.startswith(f"{RESENT}: queued 6")
    assert resent.message != "job sent again: queued 61 s"
    assert (other.waiting, other.message) == ("", "job sent again, wrote someone by hand")  # not a resend's: kept

    # Two runs whose executor is gone: the one the column says stopped on an error is resumed saying so.
    stopped = TestRun.objects.create(scope={"kind": "task", "tasks": [1]}, total=1, state="running",
                                     executor="gone:1", waiting=WaitingReason.EXECUTOR_ERROR,
                                     message="executor error: ValueError: x")
    died = TestRun.objects.create(scope={"kind": "task", "tasks": [1]}, total=1, state="running",
                                  executor="gone:2", message="executor error: in words only")
    assert sorted(resume_orphaned_runs(enqueue=False)) == sorted([stopped.pk, died.pk])
    stopped.refresh_from_db()
    died.refresh_from_db()
    assert stopped.message == "resumed after its executor gone:1 stopped (executor error: ValueError: x)"
    assert died.message == "resumed after its executor gone:2 died"
    assert stopped.waiting == died.waiting == WaitingReason.NONE and stopped.state == died.state == "queued"
