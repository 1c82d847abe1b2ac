"""First verdicts first (issue 20, item 1): a run gives every task a verdict before it spends time on the
rest, and the board and task pages show each task's progress in the running run."""
import pytest
from django.utils import timezone

from apitester.pool import TimeBudget, WorkerPool, dispatch_order
from tracker.models import ConfigResult, TestRun
from tracker.selectors.runs import task_progress
from tracker.services.runs import create_run, execute_run, store_result

from .conftest import make_task

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}


def _clip(*shape):
    return f'paddle.clip(Tensor({list(shape)},"float64"), min=0.0, )'


def test_dispatch_order_puts_each_groups_smallest_first_then_largest_first():
    jobs = [("a", 300), ("a", 5), ("a", 40), ("b", 7), ("b", 1000), ("c", 2), ("d", 9), ("d", 9)]
    order = dispatch_order(jobs, size_of=lambda job: job[1], group_of=lambda job: job[0])
    # Phase one: one job per group (its smallest; the first of equals), smallest of those first.
    assert order[:4] == [("c", 2), ("a", 5), ("b", 7), ("d", 9)]
    # Phase two: the rest, largest first.
    assert order[4:] == [("b", 1000), ("a", 300), ("a", 40), ("d", 9)]
    assert sorted(order) == sorted(jobs)  # nothing lost, nothing twice


def test_dispatch_order_without_groups_is_largest_first_and_stable():
    jobs = [("x", 1), ("y", 50), ("z", 50), ("w", 3)]
    assert dispatch_order(jobs, size_of=lambda job: job[1]) == [("y", 50), ("z", 50), ("w", 3), ("x", 1)]
    assert dispatch_order([], size_of=len, group_of=len) == []


@pytest.fixture(scope="module")
def fast_pool():
    """One real worker for the tests that drive a pool directly (its paddle + torch start paid once)."""
    with WorkerPool(1, device="cpu", **FAST) as pool:
        yield pool


def test_real_pool_hands_out_one_config_per_group_first(fast_pool):
    """One real worker: results come back in dispatch order."""
    jobs = [("t1-big", _clip(40, 40)), ("t1-small", _clip(3)), ("t2-big", _clip(30, 30)), ("t2-small", _clip(4)),
            ("t1-mid", _clip(10, 10))]
    group = {"t1-big": 1, "t1-small": 1, "t1-mid": 1, "t2-big": 2, "t2-small": 2}
    keys = [r.key for r in fast_pool.run(jobs, group_of=group.__getitem__)]
    assert keys == ["t1-small", "t2-small", "t1-big", "t2-big", "t1-mid"]


@pytest.mark.django_db
def test_a_run_judges_every_tasks_smallest_config_before_the_rest(client):
    big, medium, small = _clip(60, 60), _clip(20, 20), _clip(3)
    make_task(1, "paddle.clip", [big, medium, small])
    make_task(2, "paddle.clip", [_clip(50, 50), _clip(6)])
    make_task(3, "paddle.clip", [_clip(30, 30)])
    run = create_run("tasks", tasks=[1, 2, 3], lane="cpu")
    execute_run(run.pk, workers=1, options=FAST)

    stored = list(ConfigResult.objects.filter(run=run).order_by("pk").select_related("failing_config", "task"))
    assert [r.status for r in stored] == ["pass"] * 6
    # The first three verdicts stored are one per task, each task's smallest config.
    assert [(r.task.number, r.failing_config.config) for r in stored[:3]] == [
        (1, small), (2, _clip(6)), (3, _clip(30, 30))]
    assert [r.failing_config.config for r in stored[3:]] == [big, _clip(50, 50), medium]
    # Finished: the API's per-task progress is complete.
    tasks = client.get(f"/api/runs/{run.pk}").json()["tasks"]
    assert tasks == {"1": {"total": 3, "done": 3, "pass": 3, "fail": 0, "other": 0},
                     "2": {"total": 2, "done": 2, "pass": 2, "fail": 0, "other": 0},
                     "3": {"total": 1, "done": 1, "pass": 1, "fail": 0, "other": 0}}


@pytest.mark.django_db
def test_board_and_task_page_show_per_task_progress_of_the_running_run(client, fast_pool):
    """Verdicts arrive through the runner's write path (store_result, with verdicts of a real pool)."""
    configs = [_clip(3), _clip(4), 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )']
    task = make_task(7, "paddle.clip", configs)
    other = make_task(8, "paddle.clip", [_clip(5)])
    run = create_run("tasks", tasks=[7, 8], lane="cpu")
    TestRun.objects.filter(pk=run.pk).update(state="running", started_at=timezone.now(), heartbeat_at=timezone.now())
    by_config = {fc.config: fc for fc in task.failing_configs.all()}

    page = client.get("/").content.decode()
    assert "0 of 3 configs re-tested" in page and "0 of 1 configs re-tested" in page

    jobs = [(configs[0], configs[0]), (configs[2], configs[2])]
    for result in fast_pool.run(jobs):
        store_result(run, by_config[result.key], result.verdict, result.seconds, build=fast_pool.build)

    progress = task_progress(run)
    assert progress[7].as_dict() == {"total": 3, "done": 2, "pass": 1, "fail": 1, "other": 0}
    assert progress[8].as_dict() == {"total": 1, "done": 0, "pass": 0, "fail": 0, "other": 0}

    board = client.get("/").content.decode()
    assert "2 of 3 configs re-tested: 1 pass, 1 fail" in board
    assert "0 of 1 configs re-tested" in board
    task_page = client.get("/tasks/7").content.decode()
    assert "2 of 3 configs re-tested: 1 pass, 1 fail" in task_page
    api = client.get(f"/api/runs/{run.pk}").json()
    assert api["tasks"]["7"] == {"total": 3, "done": 2, "pass": 1, "fail": 1, "other": 0}

    # In Chinese too.
    zh = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "已复测 2 / 3 个配置：1 个通过、1 个失败" in zh

    # The run ends: the rows no longer show a progress line.
    TestRun.objects.filter(pk=run.pk).update(state="done", finished_at=timezone.now())
    assert "configs re-tested" not in client.get("/").content.decode()
    assert other.number == 8
