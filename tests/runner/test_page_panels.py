"""The task page's and the board's panels read through selectors the views call; the template tags only
format what they are handed (no query of their own)."""
import pytest
from django.db import connection
from django.template import Context, Template
from django.test.utils import CaptureQueriesContext

from tracker.models import TestRun
from tracker.selectors import charts as chart_selectors
from tracker.selectors import releases as release_selectors
from tracker.selectors import runs as run_selectors
from tracker.services.runs import store_result

from .conftest import FAILING_FORWARD, PASSING, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def retested():
    task = make_task(7, "paddle.clip", [PASSING[1], FAILING_FORWARD])
    other = make_task(8, "paddle.logit", [PASSING[0]])
    done = TestRun.objects.create(scope={"kind": "task", "tasks": [7]}, lane="cpu", state="done",
                                  paddle_version="3.3.1", total=2)
    for config, status in zip(task.failing_configs.order_by("id"), ("pass", "accuracy_error")):
        store_result(done, config, {"status": status, "direction": "forward"}, 0.1)
    queued = TestRun.objects.create(scope={"kind": "tasks", "tasks": [7, 8]}, lane="cpu", total=3)
    elsewhere = TestRun.objects.create(scope={"kind": "task", "tasks": [8]}, lane="cpu", state="running", total=1)
    return task, other, queued, elsewhere


def test_task_runs_panel_is_a_selector(retested):
    task, _other, queued, _elsewhere = retested
    panel = run_selectors.task_runs_panel(task)
    assert panel["lane"] == "cpu" and panel["no_lane_worker"] is False
    assert panel["verification"].text == "still failing 1 of 2"
    assert [a["run"].pk for a in panel["active_runs"]] == [queued.pk]  # not the run of another task
    assert panel["latest"]["tested"] == 2 and panel["regressions"] == []


def test_board_run_actions_is_a_selector(retested):
    _task, _other, queued, elsewhere = retested
    panel = run_selectors.board_run_actions()
    assert panel["gpu_waiting"] is True  # no GPU worker reported in
    assert {summary["id"] for summary in panel["active_runs"]} == {queued.pk, elsewhere.pk}


def test_the_panels_template_tags_run_no_query(retested, rf):
    task = retested[0]
    request = rf.get(f"/tasks/{task.number}")
    request.user = type("Anonymous", (), {"is_staff": False})()
    context = Context({
        "task": task, "request": request,
        "runs_panel": run_selectors.task_runs_panel(task),
        "task_matrix": chart_selectors.task_config_matrix(task),
        "releases_panel": release_selectors.task_releases_panel(task),
        "run_actions": run_selectors.board_run_actions(),
    })
    template = Template("{% load runs_tags releases_tags %}{% task_runs_panel task runs_panel task_matrix %}"
                        "{% task_releases_panel task releases_panel %}{% board_run_actions run_actions %}")
    with CaptureQueriesContext(connection) as queries:
        html = template.render(context)
    assert [q["sql"] for q in queries.captured_queries] == []
    assert "still failing 1 of 2" in html and 'id="latest-verdicts"' in html and 'id="release-grid"' in html
