"""The run page's progress bar updates live (polling /api/runs/<id>) in a real browser, without reloading."""
import pytest
from django.utils import timezone

from tracker.models import TestRun
from tracker.services.runs import create_run, store_result

from .conftest import PASSING, make_task

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(page):
    """The shared page (tests/conftest.py), collecting uncaught page errors under the name this test uses."""
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    yield page


def test_progress_bar_follows_the_run_without_reload(live_server, page):
    task = make_task(3, "paddle.clip", PASSING + ['paddle.clip(Tensor([5, 2],"float64"), min=0.0, )'])
    run = create_run("task", tasks=[3], lane="cpu")
    configs = list(task.failing_configs.all())
    TestRun.objects.filter(pk=run.pk).update(state="running", started_at=timezone.now(), done=1,
                                             heartbeat_at=timezone.now(), paddle_version="3.3.1")
    store_result(run, configs[0], {"status": "pass"}, 0.1)

    page.goto(f"{live_server.url}/runs/{run.pk}")
    assert page.text_content("#run-done") == "1" and page.text_content("#run-total") == "4"
    page.evaluate("window.__notReloaded = true")

    for config in configs[1:3]:
        store_result(run, config, {"status": "accuracy_error", "direction": "forward", "max_abs": 0.5}, 0.1)
    TestRun.objects.filter(pk=run.pk).update(done=3)
    page.wait_for_function("document.getElementById('run-done').textContent === '3'", timeout=15000)
    assert page.evaluate("document.getElementById('run-progress').value") == 3
    assert "accuracy_error: 2" in page.text_content("#run-counts")
    assert page.text_content("#run-rate").endswith("configs/s")  # three results within the last minute
    assert page.text_content("#run-eta") != "—"

    store_result(run, configs[3], {"status": "pass"}, 0.1)
    TestRun.objects.filter(pk=run.pk).update(done=4, state="done", finished_at=timezone.now())
    page.wait_for_function("document.getElementById('run-state').textContent === 'done'", timeout=15000)
    assert page.evaluate("window.__notReloaded") is True
    assert page.js_errors == []


def test_board_rows_follow_each_tasks_progress_without_reload(live_server, page):
    """The board's rows show the running run's per-task progress and update it live (GET /api/runs/<id>)."""
    task = make_task(3, "paddle.clip", PASSING)
    make_task(4, "paddle.clip", ['paddle.clip(Tensor([5, 2],"float64"), min=0.0, )'])
    run = create_run("tasks", tasks=[3, 4], lane="cpu")
    TestRun.objects.filter(pk=run.pk).update(state="running", started_at=timezone.now(),
                                             heartbeat_at=timezone.now(), paddle_version="3.3.1")
    configs = list(task.failing_configs.all())
    store_result(run, configs[0], {"status": "pass"}, 0.1)

    page.goto(f"{live_server.url}/")
    # a short badge in the row, the sentence in its tooltip
    cell = '.run-progress[data-task="3"]'
    assert page.text_content(cell) == "1/3 ✓1" and page.get_attribute(cell, "title") == "1 of 3 configs re-tested: 1 pass"
    assert page.text_content('.run-progress[data-task="4"]') == "0/1"
    assert page.get_attribute('.run-progress[data-task="4"]', "title") == "0 of 1 configs re-tested"
    page.evaluate("window.__notReloaded = true")

    store_result(run, configs[1], {"status": "accuracy_error", "direction": "forward", "max_abs": 0.5}, 0.1)
    page.wait_for_function(
        f"document.querySelector('{cell}').textContent === '2/3 \u27131 \u27171'"
        f" && document.querySelector('{cell}').title === '2 of 3 configs re-tested: 1 pass, 1 fail'", timeout=15000)
    assert page.evaluate("window.__notReloaded") is True
    assert page.js_errors == []
