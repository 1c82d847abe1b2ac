"""Run pages, start/cancel (staff only), and the task/board partials."""
import pytest
from django.contrib.auth.models import User
from django.template.loader import render_to_string
from django.test import RequestFactory
from django_q.models import OrmQ

from tracker.models import ConfigResult, TestRun
from tracker.selectors.charts import task_config_matrix
from tracker.selectors.runs import board_run_actions, task_runs_panel
from tracker.services.runs import create_run, store_result

from .conftest import FAILING_BACKWARD, PASSING, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = User.objects.create_user("maint", password="pw", is_staff=True)
    client.force_login(user)
    return user


def test_staff_starts_and_cancels_a_run(client, staff):
    make_task(5, "paddle.clip", PASSING[:2])
    response = client.post("/runs/start", {"scope": "task", "task": "5", "lane": "cpu", "next": "/tasks/5"})
    run = TestRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}"
    assert run.state == "queued" and run.total == 2 and run.requested_by == "maint" and run.scope["tasks"] == [5]
    assert OrmQ.objects.filter(key="board").count() == 1  # the CPU lane's queue

    page = client.get(f"/runs/{run.pk}").content.decode()
    assert "Cancel run" in page and f"/api/runs/{run.pk}" in page
    assert f"/runs/{run.pk}" in client.get("/runs").content.decode()

    assert client.post(f"/runs/{run.pk}/cancel").status_code == 302
    run.refresh_from_db()
    assert run.state == "cancelled" and "maint" in run.message
    assert "Cancel run" not in client.get(f"/runs/{run.pk}").content.decode()
    assert client.get(f"/api/runs/{run.pk}").json()["state"] == "cancelled"


def test_bad_start_request_says_why_and_creates_nothing(client, staff):
    make_task(6, "paddle.all", ['paddle.all(Tensor([3, 4],"bool"), )'], kernel="GPU")
    response = client.post("/runs/start", {"scope": "task", "task": "6", "lane": "cpu", "next": "/tasks/6"},
                           follow=False)
    assert response.status_code == 302 and response["Location"] == "/tasks/6"
    assert not TestRun.objects.exists()
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("No.6 is a GPU task" in m for m in messages)


def test_non_staff_cannot_start_or_cancel(client):
    make_task(5, "paddle.clip", PASSING[:1])
    run = create_run("task", tasks=[5], lane="cpu")
    client.force_login(User.objects.create_user("someone", password="pw"))
    assert client.post("/runs/start", {"scope": "task", "task": "5", "lane": "cpu"}).status_code == 302
    assert client.post(f"/runs/{run.pk}/cancel").status_code == 302
    assert TestRun.objects.count() == 1 and TestRun.objects.get().state == "queued"
    assert "Cancel run" not in client.get(f"/runs/{run.pk}").content.decode()


def test_task_partial_shows_latest_verdicts_with_diff_numbers():
    task = make_task(9, "paddle.clip", [PASSING[1], FAILING_BACKWARD])
    first = create_run("task", tasks=[9], lane="cpu")
    configs = {fc.config: fc for fc in task.failing_configs.all()}
    store_result(first, configs[PASSING[1]], {"status": "pass", "max_abs": 0.0}, 0.1)
    store_result(first, configs[FAILING_BACKWARD], {
        "status": "accuracy_error", "direction": "backward", "max_abs": 1.50509, "max_rel": "inf",
        "mismatched": 1, "total": 1, "worst_index": [0], "message": "grad min differs"}, 0.2)
    assert store_result(first, configs[PASSING[1]], {"status": "pass"}, 0.1) is None  # one result per run+config
    assert ConfigResult.objects.count() == 2

    request = RequestFactory().get("/tasks/9")
    request.user = User.objects.create_user("maint", is_staff=True)
    # The view hands the partial what the selectors read (the template tags only format it).
    panels = {"task": task, "runs_panel": task_runs_panel(task), "task_matrix": task_config_matrix(task)}
    html = render_to_string("tracker/partials/task_runs.html", panels, request=request)
    assert "still failing 1 of 2" in html
    assert "accuracy_error (backward)" in html and "1.50509" in html and "1/1" in html
    assert "Re-test 2 configs on the CPU lane" in html and 'value="9"' in html  # the size, stated before queuing

    request.user = User.objects.create_user("visitor")
    html = render_to_string("tracker/partials/task_runs.html", panels, request=request)
    assert "still failing 1 of 2" in html and "on the CPU lane</button>" not in html

    board = render_to_string("tracker/partials/board_actions.html", {"run_actions": board_run_actions()},
                             request=request)
    assert "Re-test all open" not in board
    request.user = User.objects.get(username="maint")
    board = render_to_string("tracker/partials/board_actions.html", {"run_actions": board_run_actions()},
                             request=request)
    assert "Re-test all open CPU tasks" in board and "no GPU worker is connected" in board


@pytest.mark.parametrize("next_url", ["//evil.example/phish", "https://evil.example/", "///evil.example",
                                      "/\\evil.example", "javascript:alert(1)",
                                      # not paths: redirect() took them for URL pattern names (NoReverseMatch: a 500)
                                      "1", " 1 ", "board", "tracker:board"])
def test_start_never_redirects_to_another_site(client, staff, next_url):
    make_task(6, "paddle.all", ['paddle.all(Tensor([3, 4],"bool"), )'], kernel="GPU")
    # A GPU task on the CPU lane is refused, which redirects back to `next`: only a page of this site.
    response = client.post("/runs/start", {"scope": "task", "task": "6", "lane": "cpu", "next": next_url})
    assert response.status_code == 302 and response["Location"] == "/"
    assert not TestRun.objects.exists()
    bad_numbers = client.post("/runs/start", {"scope": "task", "task": "x", "lane": "cpu", "next": next_url})
    assert bad_numbers.status_code == 302 and bad_numbers["Location"] == "/"


HUGE_TASK = "9" * 25  # past every database's integer column (SQLite raised OverflowError: a 500)


# The board's own numbers (one task, No.5), never the column's 1 to 9223372036854775807.
OUT_OF_RANGE = "is out of range: from 5 to 5."
NOT_ASCII = "is not a whole number written with the digits 0–9."


@pytest.mark.parametrize("numbers, expected", [
    ([HUGE_TASK], OUT_OF_RANGE), (["5", HUGE_TASK], OUT_OF_RANGE), (["-" + HUGE_TASK], NOT_ASCII),
    (["0"], OUT_OF_RANGE), (["6"], OUT_OF_RANGE),
    (["9" * 5000], OUT_OF_RANGE),  # past int()'s 4,300-digit limit: counted, never read
    (["٥"], NOT_ASCII), (["５"], NOT_ASCII), (["1_0"], NOT_ASCII), (["5.0"], NOT_ASCII), (["²"], NOT_ASCII),
])
def test_an_out_of_range_task_number_on_the_staff_form_is_a_form_error(client, staff, numbers, expected):
    make_task(5, "paddle.clip", PASSING[:1])
    kind = "task" if len(numbers) == 1 else "tasks"
    response = client.post("/runs/start", {"scope": kind, "task": numbers, "lane": "cpu", "next": "/tasks/5"})
    assert response.status_code == 302 and response["Location"] == "/tasks/5"
    assert not TestRun.objects.exists() and not OrmQ.objects.exists()
    messages = [str(m) for m in response.wsgi_request._messages]
    assert len(messages) == 1 and expected in messages[0]
    assert len(messages[0]) < 200  # a 5,000-digit number is shortened, not echoed
    page = client.get("/tasks/5")
    assert page.status_code == 200 and expected in page.content.decode()


def test_retest_command_names_an_out_of_range_task_or_run_without_a_traceback():
    from django.core.management import CommandError, call_command

    make_task(5, "paddle.clip", PASSING[:1])
    with pytest.raises(CommandError, match=r"^no task No\.9{23} on the board: the board's tasks go from No\.5 to No\.5$"):
        call_command("retest", "--task", "9" * 23)
    with pytest.raises(CommandError, match=r"^no run 9{23}$"):
        call_command("retest", "--run", "9" * 23, "--inline")
    assert not TestRun.objects.exists()
