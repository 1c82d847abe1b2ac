"""One config must not wedge a run (issue 17, item 2).

A config with an absurd shape, a worker answer the parent can't read, a verdict no column can hold: each
becomes that config's verdict and the run goes on. Something that stops the executor whatever it does is
re-queued by the real stale sweep and ends `failed` after RUNNER_MAX_REQUEUES, with the reason on its page.
Real worker processes (real paddle and torch) and real SQLite throughout.
"""
import pytest

from apitester.pool import MEMORY_FACTOR, TimeBudget, WorkerPool, config_elements, describe_mib, estimate_bytes
from tracker.models import ConfigResult, TestRun
from tracker.services.runs import EXECUTOR_ERROR, create_run, execute_run, resume_orphaned_runs, store_result
from tracker.vocab import WaitingReason

from .conftest import EXTRA_SPECS, FAILING_FORWARD, PASSING, make_task

# The report line of the issue: 1 followed by 320 zeros elements.
ABSURD = 'paddle.cumprod(Tensor([1' + "0" * 320 + '],"float32"), dim=0, )'
CUMPROD = 'paddle.cumprod(Tensor([3, 4],"float32"), dim=0, )'
FAST = {"time_budget": TimeBudget(base=30.0, per_million_elements=5.0)}


def test_an_absurd_shape_is_sized_in_integers():
    need = estimate_bytes(ABSURD)
    assert need == MEMORY_FACTOR * 4 * 10**320  # exact: no float ever holds it
    assert describe_mib(need) == f"2.28e+{len(str(need >> 20)) - 1} MiB"
    assert describe_mib(3 << 20) == "3 MiB"
    assert config_elements(ABSURD) == 10**320
    # Its time budget is the cap, not an OverflowError (int too large to convert to float).
    assert TimeBudget(base=60, maximum=900).for_elements(10**320) == 900


@pytest.mark.django_db
def test_the_absurd_cumprod_line_is_skipped_too_large_and_an_all_run_finishes(client):
    make_task(1, "paddle.cumprod", [ABSURD, CUMPROD])
    make_task(2, "paddle.clip", [PASSING[0], FAILING_FORWARD])
    run = create_run("all_open", lane="cpu")  # what `retest --all` creates

    report = execute_run(run.pk, workers=1, options=FAST)

    run.refresh_from_db()
    assert run.state == "done" and run.done == run.total == 4 and report.executed == 4
    results = {r.failing_config.config: r for r in ConfigResult.objects.filter(run=run).select_related("failing_config")}
    absurd = results[ABSURD]
    assert absurd.status == "skipped_too_large"
    assert "e+" in absurd.message and "MiB exceeds the worker budget" in absurd.message
    assert results[CUMPROD].status == "pass"
    assert results[PASSING[0]].status == "pass"
    assert results[FAILING_FORWARD].status == "accuracy_error"
    page = client.get(f"/runs/{run.pk}")
    assert page.status_code == 200 and "skipped_too_large" in page.content.decode()


def test_an_answer_the_parent_cannot_read_is_that_configs_verdict():
    garbage = 'paddle.testonly.garbage_answer(x=Tensor([3],"float32"), )'
    jobs = [("garbage", garbage), ("pass", PASSING[0]), ("fail", FAILING_FORWARD)]
    with WorkerPool(1, time_budget=TimeBudget(base=30), env={"APITESTER_EXTRA_SPECS": EXTRA_SPECS}) as pool:
        results = {r.key: r for r in pool.run(jobs)}
    assert results["garbage"].status == "unsupported"
    assert "runner error while reading the worker's answer" in results["garbage"].verdict["message"]
    assert "JSONDecodeError" in results["garbage"].verdict["message"]
    # The worker that spoke garbage was replaced; the other configs are judged as usual.
    assert results["pass"].status == "pass" and results["fail"].status == "accuracy_error"


@pytest.mark.django_db
def test_a_verdict_no_column_can_hold_is_stored_not_raised():
    task = make_task(1, "paddle.cumprod", [ABSURD, CUMPROD])
    absurd, small = task.failing_configs.order_by("id")
    run = create_run("task", tasks=[1], lane="cpu")
    # An element count of 10**320 fits no BigIntegerField: the count is dropped, the verdict kept.
    stored = store_result(run, absurd, {"status": "accuracy_error", "direction": "forward", "total": 10**320,
                                        "mismatched": 10**319, "max_abs": 1.0}, 0.5)
    stored.refresh_from_db()
    assert stored.status == "accuracy_error" and stored.total_elements is None and stored.mismatched is None
    assert stored.max_abs == 1.0
    # A verdict of the wrong shape becomes an engine gap that says so.
    odd = store_result(run, small, ["not", "a", "verdict"], "soon")
    odd.refresh_from_db()
    assert odd.status == "unsupported" and odd.message.startswith("runner error: the verdict could not be stored")
    assert ConfigResult.objects.filter(run=run).count() == 2


@pytest.mark.django_db
def test_a_run_the_executor_always_stops_on_ends_failed_after_the_requeue_limit(settings, client):
    settings.RUNNER_MAX_REQUEUES = 1
    make_task(1, "paddle.clip", [PASSING[0]])
    run = create_run("task", tasks=[1], lane="cpu")
    # A scope no query can take (a run edited in the admin): every execution stops outside any one config.
    TestRun.objects.filter(pk=run.pk).update(scope={"kind": "task", "tasks": [1, "No.1"]})

    execute_run(run.pk, workers=1, options=FAST)
    run.refresh_from_db()
    assert run.state == "running" and run.heartbeat_at is None  # left for the sweep at once, with the reason
    assert run.message.startswith(f"{EXECUTOR_ERROR}: ValueError") and run.waiting == WaitingReason.EXECUTOR_ERROR
    assert resume_orphaned_runs(enqueue=False) == [run.pk]
    run.refresh_from_db()
    assert run.state == "queued" and run.requeues == 1 and EXECUTOR_ERROR in run.message
    assert run.waiting == WaitingReason.NONE  # the error is kept in the re-queue's message; the run waits no more

    execute_run(run.pk, workers=1, options=FAST)
    assert resume_orphaned_runs(enqueue=False) == []  # over the limit: not queued again
    run.refresh_from_db()
    assert run.state == "failed" and run.finished_at is not None
    assert "re-queued this run 1 times in a row" in run.message and "ValueError" in run.message
    page = client.get(f"/runs/{run.pk}").content.decode()
    assert "re-queued this run 1 times in a row" in page
    task_page = client.get("/tasks/1").content.decode()
    assert f'href="/runs/{run.pk}"' in task_page and "re-queued this run 1 times" in task_page
    assert "re-queued this run 1 times" in client.get("/runs").content.decode()
    assert not ConfigResult.objects.filter(run=run).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("reported", ["abc", "nan", "inf", -3.0, 1e400, None, [1, 2]])
def test_a_malformed_duration_in_a_verdict_is_stored_as_zero_and_the_verdict_kept(reported):
    task = make_task(3, "paddle.clip", [PASSING[0]])
    run = create_run("task", tasks=[3], lane="cpu")
    config = task.failing_configs.get()
    store_result(run, config, {"status": "accuracy_error", "direction": "forward", "max_abs": 0.5,
                               "framework_seconds": reported}, reported)
    stored = ConfigResult.objects.get(run=run, failing_config=config)
    assert (stored.status, stored.direction, stored.max_abs) == ("accuracy_error", "forward", 0.5)
    assert (stored.seconds, stored.framework_seconds) == (0.0, 0.0)
