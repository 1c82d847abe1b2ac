"""Issue 45 item 4 / issue 42 item 8: one service starts a run for the web views and `retest`
(tracker/services/run_requests.py). A web run states its size before queuing, one of more than RUN_CONFIRM_ABOVE
config runs waits for a confirmation of that very number, and the CPU-evidence button takes retest's bounds."""
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings
from django_q.models import OrmQ

from tracker.models import TestRun
from tracker.services import run_requests
from tracker.services.runs import RunError

from tests.factories import make_task

pytestmark = pytest.mark.django_db

# Seven configs of one GPU task, of growing size (the bounds pick the smallest): 4, 8, ..., 256 elements.
GPU_CONFIGS = [f'paddle.abs(Tensor([{2 ** k}, 2],"float32"), )' for k in range(1, 8)]


@pytest.fixture
def staff(client):
    client.force_login(User.objects.create_user("maint", password="pw", is_staff=True))


@pytest.fixture
def large_gpu_task():
    return make_task(110, "paddle.abs", GPU_CONFIGS, kernel="GPU")


EVIDENCE_FORM = {"scope": "task", "task": "110", "on_cpu": "1", "next": "/tasks/110"}


@override_settings(RUN_CONFIRM_ABOVE=5)
def test_one_click_on_the_cpu_evidence_button_of_a_large_task_queues_nothing_and_states_the_size(
        client, staff, large_gpu_task):
    page = client.get("/tasks/110").content.decode()
    assert "Re-test this GPU task's 7 configs on the CPU lane" in page  # stated on the button already
    response = client.post("/runs/start", EVIDENCE_FORM)
    html = response.content.decode()
    assert response.status_code == 200 and "This run would queue 7 config runs" in html
    assert 'name="confirm" value="7"' in html and 'id="bounded-run-form"' in html
    assert not TestRun.objects.exists() and not OrmQ.objects.exists()
    # A confirmation of another number (the scope changed since the page was read) is no confirmation.
    again = client.post("/runs/start", {**EVIDENCE_FORM, "confirm": "6"})
    assert again.status_code == 200 and "This run would queue 7 config runs" in again.content.decode()
    assert not TestRun.objects.exists()
    confirmed = client.post("/runs/start", {**EVIDENCE_FORM, "confirm": "7"})
    run = TestRun.objects.get()
    assert confirmed.status_code == 302 and confirmed["Location"] == f"/runs/{run.pk}"
    assert run.total == 7 and run.scope["kind"] == "cpu_evidence" and OrmQ.objects.count() == 1


@override_settings(RUN_CONFIRM_ABOVE=5)
def test_the_web_takes_retests_bounds_and_picks_the_same_configs(client, staff, large_gpu_task):
    response = client.post("/runs/start", {**EVIDENCE_FORM, "smallest": "3"})
    web = TestRun.objects.get()  # 3 config runs: under the limit, queued without a second page
    assert response.status_code == 302 and web.total == 3 and web.scope["per_task"] == 3
    call_command("retest", "--task", "110", "--on-cpu", "--smallest", "3")
    command = TestRun.objects.exclude(pk=web.pk).get()
    assert command.scope == web.scope and command.requested_by == "retest command"
    sizes = client.post("/runs/start", {**EVIDENCE_FORM, "max_elements": "16"})
    bounded = TestRun.objects.order_by("-pk").first()
    assert sizes.status_code == 302 and bounded.total == 3 and bounded.scope["max_elements"] == 16
    assert TestRun.objects.count() == 3


@override_settings(RUN_CONFIRM_ABOVE=5)
def test_retest_is_its_own_confirmation_through_the_same_service(large_gpu_task, capsys):
    call_command("retest", "--task", "110", "--on-cpu")
    assert TestRun.objects.get().total == 7
    assert "7 configs of 1 GPU tasks on the cpu lane" in capsys.readouterr().out


@override_settings(RUN_CONFIRM_ABOVE=5)
@pytest.mark.parametrize("field, value, says", [
    ("smallest", "٣", "is not a whole number written with the digits 0–9"),
    ("smallest", "0", "is out of range: from 1 to 100000"),
    ("max_elements", "1e3", "is not a whole number written with the digits 0–9"),
    ("max_elements", "9" * 40, "is out of range: from 0 to 1000000000000"),
    ("confirm", "-7", "is not a whole number written with the digits 0–9"),
])
def test_a_bad_bound_says_which_field_and_queues_nothing(client, staff, large_gpu_task, field, value, says):
    response = client.post("/runs/start", {**EVIDENCE_FORM, field: value}, follow=True)
    assert says in response.content.decode()
    assert not TestRun.objects.exists() and not OrmQ.objects.exists()


@override_settings(RUN_CONFIRM_ABOVE=5)
def test_a_small_cpu_run_is_queued_at_once_and_a_bounded_cpu_task_run_is_refused(client, staff):
    make_task(5, "paddle.abs", GPU_CONFIGS[:2])
    response = client.post("/runs/start", {"scope": "task", "task": "5", "lane": "cpu", "next": "/tasks/5"})
    assert response.status_code == 302 and TestRun.objects.get().total == 2
    refused = client.post("/runs/start", {"scope": "task", "task": "5", "lane": "cpu", "smallest": "1",
                                          "next": "/tasks/5"}, follow=True)
    assert "bound a CPU-evidence run" in refused.content.decode() and TestRun.objects.count() == 1


@override_settings(RUN_CONFIRM_ABOVE=5)
def test_the_board_buttons_all_open_run_waits_for_a_confirmation(client, staff):
    make_task(5, "paddle.abs", GPU_CONFIGS[:4])
    make_task(6, "paddle.abs", GPU_CONFIGS[4:])
    response = client.post("/runs/start", {"scope": "all_open", "lane": "cpu", "next": "/"})
    assert response.status_code == 200 and "This run would queue 7 config runs" in response.content.decode()
    assert 'id="bounded-run-form"' not in response.content.decode()  # the bounds are CPU evidence's
    assert not TestRun.objects.exists()


def test_the_plan_counts_a_bisecting_matrix_by_its_first_round(large_gpu_task):
    make_task(5, "paddle.abs", GPU_CONFIGS[:3])
    request = run_requests.RunRequest(kind="task", tasks=(5,), releases=("3.0.0", "3.1.0", "3.3.1"))
    plan = run_requests.RunPlan(request, configs=3, tasks=1, lanes=3)
    assert plan.size == 6  # the oldest and the newest release first
    full = run_requests.RunPlan(run_requests.RunRequest(kind="task", tasks=(5,), releases=("a", "b", "c"),
                                                        mode="full"), configs=3, tasks=1, lanes=3)
    assert full.size == 9
    with override_settings(RUN_CONFIRM_ABOVE=2), pytest.raises(run_requests.ConfirmationNeeded) as need:
        run_requests.start_requested_run(run_requests.RunRequest(kind="task", tasks=(5,)))
    assert need.value.plan.size == 3 and "nothing queued" in str(need.value)
    with pytest.raises(RunError, match="bound a CPU-evidence run"):
        run_requests.plan_run(run_requests.RunRequest(kind="task", tasks=(5,), smallest=1))
    assert not TestRun.objects.exists()


def test_an_empty_board_says_so_instead_of_a_range(client, staff):
    response = client.post("/runs/start", {"scope": "task", "task": "5", "lane": "cpu", "next": "/"}, follow=True)
    assert "The board has no tasks yet" in response.content.decode() and not TestRun.objects.exists()
