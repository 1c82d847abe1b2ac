"""Runs executed in-process through real worker processes (real paddle and torch), stored in the test DB."""
from importlib.metadata import version

import pytest
from django.contrib.auth.models import User

from apitester.pool import TimeBudget
from tracker.models import ConfigResult, Event, TestRun, WorkerHeartbeat
from tracker.selectors.runs import regressions, task_verification
from tracker.services.runs import RunError, create_run, execute_run, requeue_declined_gpu_runs, start_run
from tracker.vocab import WaitingReason

from .conftest import FAILING_BACKWARD, FAILING_FORWARD, NO_SPEC, PASSING, make_task

pytestmark = pytest.mark.django_db

# Generous enough for a real config on a loaded 2-core CI machine; the hang spec still times out.
FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}


def _by_config(run):
    return {r.failing_config.config: r for r in ConfigResult.objects.filter(run=run).select_related("failing_config")}


def test_run_isolates_misbehaving_kernels_and_verifies_real_ones(extra_specs, tmp_path, client):
    die_once = f'paddle.testonly.die_once(x=Tensor([3],"float32"), marker="{tmp_path / "died"}", )'
    bad = {
        'paddle.testonly.segfault(x=Tensor([3],"float32"), )': "crash",
        'paddle.testonly.hang(x=Tensor([3],"float32"), )': "timeout",
        'paddle.testonly.huge(x=Tensor([100000, 100000],"float32"), )': "skipped_too_large",
        die_once: "flaky_crash",
    }
    fixed = make_task(1, "paddle.clip", PASSING[:2])
    failing = make_task(2, "paddle.clip", [PASSING[2], FAILING_BACKWARD, FAILING_FORWARD])
    gap = make_task(3, "paddle.nonexistent_api", [NO_SPEC, PASSING[0].replace("Tensor([4]", "Tensor([5]")])
    misbehaving = make_task(4, "paddle.testonly", list(bad))

    run = create_run("tasks", tasks=[1, 2, 3, 4], lane="cpu")
    report = execute_run(run.pk, workers=2, options=FAST)
    run.refresh_from_db()

    assert run.state == "done" and run.total == run.done == 11
    assert report.executed == 11
    assert run.paddle_version == version("paddlepaddle")
    assert run.torch_version.startswith(version("torch").split("+")[0])
    results = _by_config(run)
    assert len(results) == 11
    for config, status in bad.items():
        assert results[config].status == status, (config, results[config].message)
    assert "SIGSEGV" in results['paddle.testonly.segfault(x=Tensor([3],"float32"), )'].message
    flaky = results[die_once]
    assert "SIGILL" in flaky.message and "retry gave pass" in flaky.message
    for config in PASSING:
        assert results[config].status == "pass"
    assert results[FAILING_BACKWARD].status == "accuracy_error"
    assert results[FAILING_BACKWARD].direction == "backward"
    assert results[FAILING_BACKWARD].max_abs > 0.1
    assert results[FAILING_FORWARD].status == "accuracy_error" and results[FAILING_FORWARD].direction == "forward"
    # The stored diff map keeps the engine's NaN/inf mask: float16 1e6·x overflows to inf where Torch is finite.
    diff_map = results[FAILING_FORWARD].diff_map
    assert len(diff_map["values"]) == 8 and len(diff_map["values"][0]) == 8
    assert any(any(row) for row in diff_map["mask"])
    assert results[NO_SPEC].status == "unsupported"

    # Verification per task and lane, and the event for the verified fix.
    assert task_verification(fixed).text == f"fix verified on Paddle {run.paddle_version}"
    assert task_verification(failing).text == "still failing 2 of 3"
    assert task_verification(gap).kind == "engine_gap"
    assert task_verification(misbehaving).text == "still failing 3 of 4"  # skipped_too_large is no Paddle verdict
    assert Event.objects.filter(task=fixed, kind="fix_verified").count() == 1
    assert not Event.objects.filter(task=failing, kind="fix_verified").exists()

    # GET /api/runs/<id>
    data = client.get(f"/api/runs/{run.pk}").json()
    assert data["state"] == "done" and data["lane"] == "cpu" and data["total"] == data["done"] == 11
    assert data["paddle_version"] == run.paddle_version
    assert data["counts"] == {"pass": 4, "accuracy_error": 2, "unsupported": 1, "crash": 1, "timeout": 1,
                              "skipped_too_large": 1, "flaky_crash": 1}

    # Running the finished run again does nothing (no config runs twice).
    again = execute_run(run.pk, workers=1, options=FAST)
    assert again.executed == 0 and ConfigResult.objects.filter(run=run).count() == 11


def test_regression_detected_between_two_real_runs(extra_specs, tmp_path, client):
    marker = tmp_path / "broken-build"
    regressing = f'paddle.testonly.regressing(x=Tensor([4, 4],"float32"), marker="{marker}", )'
    task = make_task(7, "paddle.testonly.regressing", [regressing, PASSING[1]])

    first = create_run("task", tasks=[7], lane="cpu")
    execute_run(first.pk, workers=1, options=FAST)
    assert task_verification(task).kind == "verified"
    assert regressions(lane="cpu") == []

    marker.touch()  # the "next Paddle build" breaks the kernel
    second = create_run("task", tasks=[7], lane="cpu")
    execute_run(second.pk, workers=1, options=FAST)

    found = regressions(lane="cpu")
    assert [(r.config, r.passed_run_id, r.failed_run_id, r.status) for r in found] == [
        (regressing, first.pk, second.pk, "accuracy_error")]
    assert found[0].max_abs == pytest.approx(1.0)
    assert task_verification(task).text == "still failing 1 of 2"
    assert Event.objects.filter(task=task, kind="regression").count() == 1
    assert regressions(lane="gpu") == []

    page = client.get("/regressions").content.decode()
    assert "testonly.regressing" in page and f"#{first.pk}" in page and f"#{second.pk}" in page
    staff = User.objects.create_user("maint", password="pw", is_staff=True)
    client.force_login(staff)
    task_page_panel = client.get(f"/runs/{second.pk}").content.decode()
    assert "accuracy_error" in task_page_panel


def test_gpu_run_waits_for_a_gpu_worker(client):
    from django_q.models import OrmQ

    make_task(2, "paddle.all", ['paddle.all(Tensor([3, 4],"bool"), )'], kernel="GPU")
    WorkerHeartbeat.objects.create(name="board@here:1", host="here", lanes=["cpu"], paddle_version="3.3.1",
                                   last_seen=__import__("django.utils.timezone").utils.timezone.now())
    run = start_run("task", tasks=[2], lane="gpu")
    assert OrmQ.objects.filter(key="gpu").count() == 1  # on the GPU queue, which no CPU cluster consumes
    assert not OrmQ.objects.filter(key="board").exists()

    # Even handed to this CPU-only build directly, it produces no GPU verdict and stays queued.
    report = execute_run(run.pk, workers=1)
    run.refresh_from_db()
    assert report.executed == 0 and run.state == "queued" and run.waiting == WaitingReason.GPU_WORKER
    assert not ConfigResult.objects.filter(run=run).exists()

    data = client.get(f"/api/runs/{run.pk}").json()
    assert data["state"] == "queued" and data["lane"] == "gpu" and data["done"] == 0
    assert data["waiting"] == "waiting for a GPU worker"
    assert "waiting for a GPU worker" in client.get(f"/runs/{run.pk}").content.decode()

    # A worker that serves the GPU lane puts the declined run back on the GPU queue, once.
    assert requeue_declined_gpu_runs() == [run.pk] and OrmQ.objects.filter(key="gpu").count() == 2
    run.refresh_from_db()
    assert (run.state, run.waiting, run.message) == ("queued", WaitingReason.NONE, "requeued for a GPU worker")
    assert requeue_declined_gpu_runs() == []


def test_scope_errors_change_nothing():
    make_task(1, "paddle.clip", PASSING[:1])
    make_task(2, "paddle.all", ['paddle.all(Tensor([3, 4],"bool"), )'], kernel="GPU")
    with pytest.raises(RunError, match="No.2 is a GPU task"):
        create_run("task", tasks=[2], lane="cpu")
    with pytest.raises(RunError, match="no task No.99"):
        create_run("tasks", tasks=[1, 99], lane="cpu")
    with pytest.raises(RunError, match="unknown lane"):
        create_run("task", tasks=[1], lane="tpu")
    with pytest.raises(RunError, match="no CPU task for paddle.nope"):
        create_run("api", api="paddle.nope", lane="cpu")
    assert TestRun.objects.count() == 0
    run = create_run("all_open", lane="cpu")
    assert run.scope == {"kind": "all_open", "tasks": [1]} and run.total == 1


def test_threads_per_worker_is_a_setting_the_pool_workers_obey(settings):
    """RUNNER_THREADS_PER_WORKER: several qclusters on one host would otherwise each give their workers all the
    host's cores (cores ÷ RUNNER_WORKERS) and oversubscribe it (benchmarks/shards.py: 1.21× with 2 clusters, 1.86×
    with one thread each)."""
    from apitester.pool import WorkerPool
    from tracker.services.runs import pool_options

    settings.RUNNER_THREADS_PER_WORKER = 1
    with WorkerPool(1, **pool_options()) as pool:
        assert pool.wait_ready()["threads"] == 1
    settings.RUNNER_THREADS_PER_WORKER = 0
    assert pool_options()["threads_per_worker"] is None  # cores ÷ workers, as before


def test_a_verdict_whose_draw_is_malformed_is_stored_without_one_and_the_stored_draw_carries_its_format():
    """The draw comes from a worker's JSON: one that does not parse (unknown kind or format, a seed that is no
    number) costs the verdict only its replay text, never the verdict; a good one is stored with its format, so the
    repro command replays the same values after the engine's next draw format."""
    from tracker.services.runs import store_result

    task = make_task(9, "paddle.clip", [PASSING[0], FAILING_FORWARD])
    run = create_run("task", tasks=[9], lane="cpu")
    first, second = list(task.failing_configs.order_by("id"))
    for bad in ({"kind": "sideways", "seed": 0}, {"kind": "edge", "seed": 0, "format": 9}, {"kind": "edge", "seed": "x"}):
        stored = store_result(run, first, {"status": "accuracy_error", "direction": "forward", "draw": bad}, 0.1)
        assert stored is not None and stored.status == "accuracy_error" and stored.draw == ""
        stored.delete()
    good = store_result(run, second, {"status": "accuracy_error", "draw": {"kind": "edge", "seed": 0, "format": 2}}, 0.1)
    assert good.draw == "edge:0@2"
    assert ConfigResult.objects.filter(run=run).count() == 1


def test_the_runs_progress_is_the_count_of_its_results_written_at_most_every_progress_interval(monkeypatch):
    """The executor writes ``done`` (the COUNT of the run's results, right whichever executors stored them) at most
    every PROGRESS_SECONDS while it stores verdicts, and once more when it stops, so the last verdicts are never
    left out of the run's progress."""
    from tracker.services.runs import executor as run_services

    clock = [100.0]
    monkeypatch.setattr(run_services.time, "monotonic", lambda: clock[0])
    task = make_task(9, "paddle.clip", [PASSING[0], PASSING[1], FAILING_FORWARD])
    run = create_run("task", tasks=[9], lane="cpu")
    TestRun.objects.filter(pk=run.pk).update(requeues=2)
    first, second, third = list(task.failing_configs.order_by("id"))
    progress = run_services._Progress(run)

    def done():
        return TestRun.objects.values_list("done", "requeues").get(pk=run.pk)

    run_services.store_result(run, first, {"status": "pass"}, 0.1)
    progress.stored()
    assert done() == (1, 0)  # the first verdict is written at once: progress, the sweep's re-queue count restarts
    clock[0] += 0.5
    run_services.store_result(run, second, {"status": "pass"}, 0.1)
    progress.stored()
    assert done() == (1, 0)  # within the interval: not counted again yet
    # another executor stores a verdict of the same run: the count includes it whoever wrote it
    run_services.store_result(run, third, {"status": "accuracy_error", "direction": "forward"}, 0.1)
    clock[0] += run_services._Progress.PROGRESS_SECONDS
    progress.write()
    assert done() == (3, 0)
    TestRun.objects.filter(pk=run.pk).update(done=0)
    progress.write()  # nothing stored since the last write: no query, the row is left as it is
    assert TestRun.objects.get(pk=run.pk).done == 0
