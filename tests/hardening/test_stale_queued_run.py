"""A run whose worker took its job off the queue and died before starting it is queued again by the sweep."""
import socket
import subprocess
import sys

import pytest
from django.utils import timezone
from django_q.models import OrmQ

from tests.runner.conftest import PASSING, make_task
from tracker.models import TestRun
from tracker.services.runs import create_run, executor_name, mark_dequeued, resume_orphaned_runs

pytestmark = pytest.mark.django_db


def dead_executor() -> str:
    """The executor name of a worker process that has exited (a real pid, reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return f"{socket.gethostname()}:{process.pid}"


def test_queued_run_of_a_dead_worker_is_queued_again_once():
    make_task(5, "paddle.clip", PASSING[:2])
    run = create_run("task", tasks=[5], lane="cpu")
    queued_before = OrmQ.objects.count()
    # The worker took the job off the queue, marked the run and died (kill -9) before claiming it.
    assert mark_dequeued(run, dead_executor())
    run.refresh_from_db()
    assert run.state == "queued" and run.executor

    assert resume_orphaned_runs() == [run.pk]
    run.refresh_from_db()
    assert run.state == "queued" and run.executor == "" and "died after taking its job" in run.message
    assert OrmQ.objects.count() == queued_before + 1  # a new job for it on the CPU lane's queue
    assert resume_orphaned_runs() == []  # and only once


def test_queued_runs_that_wait_or_are_starting_are_left_alone():
    make_task(6, "paddle.clip", PASSING[:1])
    waiting = create_run("task", tasks=[6], lane="cpu")  # still in the queue: nobody took it
    starting = create_run("task", tasks=[6], lane="cpu")
    assert mark_dequeued(starting, executor_name())  # this live process is starting it
    queued_before = OrmQ.objects.count()
    assert resume_orphaned_runs() == []
    assert OrmQ.objects.count() == queued_before

    # A mark by another host that fell silent longer than the stale limit counts as dead too.
    TestRun.objects.filter(pk=starting.pk).update(executor="gone-host:123",
                                                   heartbeat_at=timezone.now() - timezone.timedelta(hours=1))
    assert resume_orphaned_runs() == [starting.pk]
    waiting.refresh_from_db()
    assert waiting.executor == "" and waiting.message == ""
