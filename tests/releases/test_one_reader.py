"""One release-grid reader (selectors.releases.release_grids) and one rule (release_answers) behind every page and
chart: the task page, /api/tasks/<n>, the board's column and filters, the funnel and /charts/releases give each task
the same answer — a task with verdicts on one release included, which is never a fix in the test engine."""
import pytest

from tracker.models import TestRun
from tracker.selectors import charts as chart_selectors
from tracker.selectors.releases import fixed_in_by_task, release_grids, release_matrix, task_fixed_in
from tracker.selectors.releases import task_release_grid
from tracker.services.runs import store_result

from .grids import merged_pr, store_grid

pytestmark = pytest.mark.django_db

OK, FAIL = "pass", "accuracy_error"


@pytest.fixture
def tasks():
    """No.31 and No.32 pass where they were run and have a PaddleAPITest PR: No.31 on 3.0.0 only (it may have
    broken in the Paddle the report failed on), No.32 on 3.0.0 and 3.3.1 (a fix in the test engine). No.33 passes on
    the main release only; No.34 is fixed in 3.3.1; No.35 fails on its one release."""
    found = {
        31: store_grid(31, "paddle.tril", {"3.0.0": [OK, OK]}),
        32: store_grid(32, "paddle.triu", {"3.0.0": [OK, OK], "3.3.1": [OK, OK]}),
        33: store_grid(33, "paddle.exp", {"3.3.1": [OK]}),
        34: store_grid(34, "paddle.clip", {"3.0.0": [FAIL, FAIL], "3.3.1": [OK, OK]}),
        35: store_grid(35, "paddle.cumsum", {"3.3.1": [OK, FAIL]}),
    }
    merged_pr(found[31], number=160, repo="PFCCLab/PaddleAPITest")
    merged_pr(found[32], number=161, repo="PFCCLab/PaddleAPITest")
    return found


def test_every_page_and_chart_reads_the_same_answer_for_every_task(client, tasks):
    expected = {31: "passing", 32: "harness", 33: "passing", 34: "fixed", 35: "partly_fixed"}
    board = fixed_in_by_task()
    chart = {t["number"]: t["fixed_in"] for t in release_matrix()["tasks"]}
    for number, task in tasks.items():
        page = task_fixed_in(task)
        api = client.get(f"/api/tasks/{number}").json()["releases"]["fixed_in"]
        assert page.kind == expected[number], number
        assert page.as_dict() == board[task.id].as_dict() == chart[number] == api, number
        assert api["text"] in client.get(f"/tasks/{number}").content.decode()

    # The board's filters, the funnel and the chart's line count the one fix in the test engine: No.32.
    harness = client.get("/?harness_fix=1").content.decode()
    assert 'id="task-32"' in harness and 'id="task-31"' not in harness
    upstream = client.get("/?fixed_upstream=1").content.decode()
    assert all(f'id="task-{n}"' in upstream for n in (31, 33, 34))
    assert all(f'id="task-{n}"' not in upstream for n in (32, 35))
    assert chart_selectors.funnel()["CPU"]["harness_fix"] == 1
    assert release_matrix()["harness_fixes"] == {"CPU": 1, "GPU": 0}
    assert "Fixed in the test engine, not in Paddle (never counted above): 1 CPU, 0 GPU tasks" in \
        client.get("/charts/releases").content.decode()


def test_the_task_page_grid_is_the_readers_grid(tasks):
    grids = release_grids(details=True)
    for task in tasks.values():
        releases, rows = task_release_grid(task)
        assert releases == grids[task.id].releases
        assert {fc.id: cells for fc, cells in rows} == grids[task.id].cells
    assert release_grids([tasks[33].id]).keys() == {tasks[33].id}


def test_a_verdict_of_the_other_lane_is_no_cell_of_the_grid(tasks):
    """A CPU task's grid reads the cpu lane only: a gpu-lane verdict on another release adds no column."""
    task = tasks[35]
    run = TestRun.objects.create(scope={"kind": "task", "tasks": [35]}, lane="gpu", release="3.2.0",
                                 paddle_version="3.2.0", total=1, state="done")
    store_result(run, task.failing_configs.order_by("id").first(), {"status": OK}, 0.1,
                 build={"paddle_version": "3.2.0", "paddle_commit": "0" * 40, "torch_version": "2.13.0+cpu"})
    assert release_grids([task.id])[task.id].releases == ["3.3.1"]
    assert task_release_grid(task)[0] == ["3.3.1"] and task_fixed_in(task).kind == "partly_fixed"
