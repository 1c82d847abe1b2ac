"""A real two-release matrix run: the main .venv's Paddle and the 3.0.0 env, through real workers."""
import sys
from importlib.metadata import version

import pytest
from django.core.management import CommandError, call_command

from apitester.pool import TimeBudget
from tracker.models import ConfigResult, TestRun
from tracker.selectors.releases import task_fixed_in, task_release_grid
from tracker.selectors.runs import run_summary, task_verification
from tracker.services.runs import RunError, create_matrix_run, create_run, execute_run
from tracker.vocab import WaitingReason

from ..runner.conftest import make_task
from .conftest import CLIP, CRASH_ON_OLD, OLD_RELEASE

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=60.0, per_million_elements=5.0)}
MAIN = version("paddlepaddle")


def test_clip_is_fixed_between_3_0_0_and_the_main_release(old_env, monkeypatch):
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", "tests.fake_specs.workers")
    task = make_task(11, "paddle.clip", [CLIP, CRASH_ON_OLD])
    parent = create_matrix_run("task", tasks=[11], releases=[OLD_RELEASE, MAIN])
    old, new = parent.lanes.order_by("id")
    assert (old.release, new.release, parent.total) == (OLD_RELEASE, MAIN, 4)

    for child in (old, new):
        execute_run(child.pk, workers=1, options=FAST)
    parent.refresh_from_db()
    old.refresh_from_db()
    new.refresh_from_db()
    assert parent.state == old.state == new.state == "done"

    results = {(r.run_id, r.failing_config.config): r for r in ConfigResult.objects.select_related("failing_config")}
    clip_old, clip_new = results[(old.pk, CLIP)], results[(new.pk, CLIP)]
    # 3.0.0 clips float64 to the float32 maximum: a forward accuracy error, fixed by the main release.
    assert (clip_old.status, clip_old.direction) == ("accuracy_error", "forward")
    assert clip_old.max_abs > 1e30
    assert clip_new.status == "pass"
    # Each verdict records the build that produced it.
    assert (clip_old.paddle_version, clip_old.paddle_commit) == (OLD_RELEASE, old_env.paddle_commit)
    assert clip_new.paddle_version == MAIN and clip_new.paddle_commit and clip_new.paddle_commit != old_env.paddle_commit
    assert clip_old.torch_version == clip_new.torch_version == old_env.torch_version
    assert old.paddle_version == OLD_RELEASE and new.paddle_version == MAIN
    # A config that kills the 3.0.0 worker is a crash there only.
    assert results[(old.pk, CRASH_ON_OLD)].status == "crash"
    assert results[(new.pk, CRASH_ON_OLD)].status == "pass"

    releases, rows = task_release_grid(task)
    assert releases == [OLD_RELEASE, MAIN]
    answer = task_fixed_in(task)
    assert (answer.kind, answer.release, answer.before, answer.failing_before) == ("fixed", MAIN, OLD_RELEASE, 2)
    # The board's verification reads the main release only: the older run finishing later changes nothing.
    assert task_verification(task).kind == "verified"

    summary = run_summary(parent)
    assert summary["releases"] == [OLD_RELEASE, MAIN] and summary["done"] == summary["total"] == 4
    assert [lane["counts"] for lane in summary["lanes"]] == [{"accuracy_error": 1, "crash": 1}, {"pass": 2}]


def test_a_worker_of_another_build_stores_nothing(old_env):
    make_task(11, "paddle.clip", [CLIP])
    run = create_run("task", tasks=[11], release=OLD_RELEASE)
    # Force the main interpreter onto a 3.0.0 run: the build check must refuse it.
    report = execute_run(run.pk, workers=1, options={**FAST, "python": sys.executable})
    run.refresh_from_db()
    assert run.state == "queued" and report.executed == 0
    assert run.message.startswith(f"waiting for a worker with Paddle {OLD_RELEASE}")
    assert run.waiting == WaitingReason.RELEASE_WORKER
    assert ConfigResult.objects.count() == 0


def test_unknown_release_is_a_clear_error_and_changes_nothing(old_env):
    make_task(11, "paddle.clip", [CLIP])
    with pytest.raises(RunError, match=r"no Paddle environment for release '2\.9\.9'.*installed: .*3\.0\.0.*PyPI offers"):
        create_run("task", tasks=[11], release="2.9.9")
    with pytest.raises(CommandError, match="2.9.9"):
        call_command("retest", "--task", "11", "--releases", f"{OLD_RELEASE},2.9.9")
    assert TestRun.objects.count() == 0


def test_a_run_for_a_release_nobody_serves_waits_and_says_so(old_env, settings, tmp_path):
    from tracker.models import WorkerHeartbeat
    from django.utils import timezone

    make_task(11, "paddle.clip", [CLIP])
    WorkerHeartbeat.objects.create(name="other@host", host="host", lanes=["cpu"], releases=["3.9.9"],
                                   paddle_version=MAIN, last_seen=timezone.now())
    run = create_run("task", tasks=[11], release="3.9.9")  # advertised by a worker elsewhere: accepted
    assert run_summary(run)["waiting"] == "queued"
    WorkerHeartbeat.objects.all().delete()
    assert run_summary(run)["waiting"] == "waiting for a worker with Paddle 3.9.9"
    report = execute_run(run.pk, workers=1)  # this host has no 3.9.9 env: declines, stores nothing
    run.refresh_from_db()
    assert run.state == "queued" and report.executed == 0 and ConfigResult.objects.count() == 0
    assert run.message.startswith("waiting for a worker with Paddle 3.9.9")
    assert run.waiting == WaitingReason.RELEASE_WORKER


def test_store_result_refuses_a_verdict_from_another_build(old_env):
    from tracker.services.runs import WrongBuild, store_result

    task = make_task(11, "paddle.clip", [CLIP])
    run = create_run("task", tasks=[11], release=OLD_RELEASE)
    with pytest.raises(WrongBuild, match="for Paddle 3.0.0 but the worker runs Paddle 3.3.1"):
        store_result(run, task.failing_configs.get(), {"status": "pass"}, 0.1,
                     build={"paddle_version": "3.3.1", "paddle_commit": "x", "torch_version": "2.13.0"})
    assert ConfigResult.objects.count() == 0


def test_a_declined_run_goes_back_on_the_queue_when_a_worker_with_its_release_starts(old_env):
    from django_q.models import OrmQ

    from tracker.services.runs import requeue_declined_release_runs

    make_task(11, "paddle.clip", [CLIP])
    run = create_run("task", tasks=[11], release=OLD_RELEASE)
    TestRun.objects.filter(pk=run.pk).update(waiting=WaitingReason.RELEASE_WORKER,
                                             message=f"waiting for a worker with Paddle {OLD_RELEASE} (this host has: 3.3.1)")
    assert requeue_declined_release_runs(["3.3.1"]) == []
    assert requeue_declined_release_runs([OLD_RELEASE, "3.3.1"]) == [run.pk]
    assert OrmQ.objects.count() == 1
    assert requeue_declined_release_runs([OLD_RELEASE]) == []  # once only


def test_first_start_queues_every_cpu_task_once(capsys):
    make_task(11, "paddle.clip", [CLIP])
    make_task(12, "paddle.cumsum", ['paddle.cumsum(Tensor([3],"float64"), )'], status="completed")
    make_task(13, "paddle.exp", ['paddle.exp(Tensor([3],"float32"), )'], kernel="GPU")
    call_command("retest", "--first-start")
    run = TestRun.objects.get(scope__kind="all")
    assert run.scope["tasks"] == [11, 12] and run.lane == "cpu" and run.release == ""
    # the GPU task's configs come after, on the cpu lane, as its CPU evidence (tests/runner/test_first_start.py)
    assert TestRun.objects.get(scope__kind="cpu_evidence").scope["tasks"] == [13]
    call_command("retest", "--first-start")
    assert TestRun.objects.count() == 2
    assert "already has runs; nothing queued" in capsys.readouterr().out


def test_a_running_worker_takes_back_a_run_declined_after_it_started(old_env):
    """Not only at start: a host without the release may consume the run's job at any time."""
    from django_q.models import OrmQ

    from tracker.models import WorkerHeartbeat
    from tracker.tasks import _Serving, heartbeat_round

    make_task(11, "paddle.clip", [CLIP])
    serving = _Serving(lanes=["cpu"], version="3.3.1", releases=[OLD_RELEASE, "3.3.1"])
    assert heartbeat_round(serving) is serving and OrmQ.objects.count() == 0  # the worker's first round
    run = create_run("task", tasks=[11], release=OLD_RELEASE)
    TestRun.objects.filter(pk=run.pk).update(waiting=WaitingReason.RELEASE_WORKER,
                                             message=f"waiting for a worker with Paddle {OLD_RELEASE} (this host has: 3.3.1)")
    heartbeat_round(serving)  # a later round
    run.refresh_from_db()
    assert OrmQ.objects.count() == 1 and run.message == f"requeued for a worker with Paddle {OLD_RELEASE}"
    assert run.waiting == WaitingReason.NONE
    assert WorkerHeartbeat.objects.get().releases == [OLD_RELEASE, "3.3.1"]
