"""CPU evidence for GPU tasks (issue 36 item 2): a GPU task's configs re-tested on the CPU lane with real paddle
and torch in worker processes are stored as CPU evidence of the GPU task — never a GPU verdict, never "fix
verified", never a GPU release answer — and the configs failing on CPU can be diagnosed."""
import re

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django_q.models import OrmQ

from apitester.pool import TimeBudget
from tracker.models import Diagnosis, Event, TestRun
from tracker.selectors.cpu_evidence import task_cpu_evidence
from tracker.selectors.releases import fixed_in_by_task
from tracker.selectors.runs import task_verification, verifications_in_own_lane
from tracker.services.cpu_evidence import create_cpu_evidence_run, diagnosable_tasks
from tracker.services.runs import RunError, execute_run
from tracker.vocab import EventKind

from .conftest import FAILING_FORWARD, PASSING, make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}


@pytest.fixture
def evidence():
    """Two GPU tasks re-tested on the CPU lane: No.133 has a config failing on CPU too and one passing;
    No.134's only config passes on CPU (a 'fix verified' would follow if it were a CPU task)."""
    mixed = make_task(133, "paddle.Tensor.__mul__", [FAILING_FORWARD, PASSING[0]], kernel="GPU")
    passing = make_task(134, "paddle.logit", [PASSING[0]], kernel="GPU")
    run = create_cpu_evidence_run([133, 134], requested_by="test")
    assert (run.lane, run.scope, run.total) == ("cpu", {"kind": "cpu_evidence", "tasks": [133, 134]}, 3)
    report = execute_run(run.pk, workers=1, options=FAST)
    assert report.state == "done"
    return mixed, passing


def test_cpu_results_are_evidence_never_a_gpu_verdict(evidence, client):
    mixed, passing = evidence
    first, second = task_cpu_evidence(mixed), task_cpu_evidence(passing)
    assert (first.tested, first.fails, first.passes, first.reading) == (2, 1, 1, "mixed")
    assert first.failing_configs == [FAILING_FORWARD] and first.passing_configs == [PASSING[0]]
    assert (second.fails, second.passes, second.reading) == (0, 1, "gpu_specific")
    assert first.lines()[0].startswith("fails on CPU too (device-independent): 1 of 2 configs re-tested on the CPU lane")
    assert second.lines() == ["passes on CPU (GPU-kernel-specific, or fixed): 1 of 1 configs re-tested on the CPU "
                              "lane (Paddle 3.3.1)"]
    # The GPU task's own verdict, its board column, "fixed in" and the fix-verified events are untouched.
    assert task_verification(passing).kind == "untested"
    assert passing.id not in verifications_in_own_lane() and mixed.id not in verifications_in_own_lane()
    assert passing.id not in fixed_in_by_task()
    assert not Event.objects.filter(kind__in=[EventKind.FIX_VERIFIED, EventKind.REGRESSION]).exists()

    body = client.get("/api/tasks/134").json()
    assert body["cpu_evidence"]["passes_on_cpu"] == 1 and body["cpu_evidence"]["reading"] == "gpu_specific"
    assert body["retest"]["verification"]["kind"] == "untested" and body["retest"]["latest_verdicts"] == []
    assert body["releases"]["verdicts"] == [] and body["releases"]["fixed_in"]["kind"] != "fixed"
    assert client.get("/api/tasks/133").json()["cpu_evidence"]["fails_on_cpu"] == 1

    page = client.get("/tasks/134").content.decode()
    assert "passes on CPU (GPU-kernel-specific, or fixed)" in page and "fix verified" not in page.lower()
    assert "not re-tested yet" in page  # the GPU lane's own panel
    zh = client.get("/tasks/133", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "在 CPU 上同样失败（与设备无关）" in zh and "在 CPU 上通过（GPU 内核特有，或已修复）" in zh
    board = client.get("/").content.decode()
    # the board's "fix verified N" chip counts no task: CPU evidence never verifies a GPU task's fix
    chip = re.search(r'id="chip-verified"[^>]*>([^<]*)<', board).group(1)
    assert chip.strip() == "fix verified 0"
    assert board.lower().count("fix verified") == 1  # the chip's label, and nowhere a row says it


NO_CPU_KERNEL = 'paddle.reciprocal(Tensor([4, 4],"float16"), )'  # Paddle registers reciprocal's float16 for GPU only


def test_a_config_paddle_has_no_cpu_kernel_for_is_no_evidence_either_way(client):
    """Paddle 3.3.1 raises "(NotFound) The kernel with key (CPU, …, float16) of kernel `reciprocal` is not
    registered": the config cannot run on the CPU, which says nothing about the GPU kernel's failure -- not "fails
    on CPU too", not a CPU repro, not a config to diagnose."""
    from tracker.selectors.diagnoses import diagnosable_results

    task = make_task(52, "paddle.reciprocal", [NO_CPU_KERNEL, FAILING_FORWARD], kernel="GPU")
    assert execute_run(create_cpu_evidence_run([52]).pk, workers=1, options=FAST).state == "done"
    ev = task_cpu_evidence(task)
    assert (ev.tested, ev.fails, ev.no_cpu_kernel, ev.failing_configs) == (2, 1, 1, [FAILING_FORWARD])
    assert ev.lines()[1] == "cannot run on CPU (Paddle has no CPU kernel for it: no evidence either way): 1 of 2"
    assert [r.failing_config.config for r in diagnosable_results(task)] == [FAILING_FORWARD]
    body = client.get("/api/tasks/52").json()["cpu_evidence"]
    assert (body["no_cpu_kernel"], body["fails_on_cpu"], body["reading"]) == (1, 1, "device_independent")
    zh = client.get("/tasks/52", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "无法在 CPU 上运行（Paddle 没有对应的 CPU kernel" in zh
    only = make_task(53, "paddle.reciprocal", [NO_CPU_KERNEL.replace("[4, 4]", "[8]")], kernel="GPU")
    assert execute_run(create_cpu_evidence_run([53]).pk, workers=1, options=FAST).state == "done"
    assert task_cpu_evidence(only).reading == "no_cpu_kernel" and not diagnosable_results(only)


def test_cpu_tasks_have_no_cpu_evidence_and_cannot_be_run_on_cpu_as_evidence(client):
    cpu = make_task(7, "paddle.clip", PASSING[1:2])
    assert task_cpu_evidence(cpu) is None
    assert client.get("/api/tasks/7").json()["cpu_evidence"] is None
    with pytest.raises(RunError, match="No.7 is a CPU task"):
        create_cpu_evidence_run([7])
    with pytest.raises(CommandError, match="No.7 is a CPU task"):
        call_command("retest", "--task", "7", "--on-cpu")
    with pytest.raises(CommandError, match="--on-cpu takes"):
        call_command("retest", "--api", "paddle.clip", "--on-cpu")
    assert not TestRun.objects.exists()


def test_retest_on_cpu_command_and_staff_form_queue_cpu_lane_runs(client):
    make_task(133, "paddle.Tensor.__mul__", [FAILING_FORWARD], kernel="GPU")
    call_command("retest", "--task", "133", "--on-cpu")
    run = TestRun.objects.get()
    assert (run.lane, run.scope["kind"], run.state) == ("cpu", "cpu_evidence", "queued")
    assert OrmQ.objects.filter(key="board").count() == 1  # the CPU lane's queue, not the GPU one
    user = User.objects.create_user("maint", password="pw", is_staff=True)
    client.force_login(user)
    page = client.get("/tasks/133").content.decode()
    assert 'id="cpu-evidence-form"' in page and "manage.py retest --task 133 --on-cpu" in page
    response = client.post("/runs/start", {"scope": "task", "task": "133", "on_cpu": "1", "next": "/tasks/133"})
    second = TestRun.objects.exclude(pk=run.pk).get()
    assert response["Location"] == f"/runs/{second.pk}" and second.scope["kind"] == "cpu_evidence"
    assert "GPU tasks on the CPU lane (evidence, not a GPU verdict)" in client.get(f"/runs/{second.pk}").content.decode()
    # Bad input says why and queues nothing: an unknown task, a number no column holds, a CPU task.
    for number, why in (("999", "999 is out of range: from 133 to 133"), ("9" * 30, "is out of range: from 133 to 133"),
                        ("7", "No.7 is a CPU task")):
        if number == "7":
            make_task(7, "paddle.clip", PASSING[1:2])
        response = client.post("/runs/start", {"scope": "task", "task": number, "on_cpu": "1", "next": "/tasks/133"},
                               follow=True)
        assert why in response.content.decode()
    assert TestRun.objects.count() == 2
    # The staff diagnosis form takes a GPU task by number (it diagnoses the task's CPU-lane failures).
    response = client.post("/runs/diagnose", {"scope": "task", "task": "133", "next": "/tasks/133"}, follow=True)
    assert "Diagnosis of 1 tasks queued" in response.content.decode()


def test_a_bounded_cpu_evidence_run_takes_the_configs_up_to_a_size_and_says_the_bound(capsys):
    """``retest --all --on-cpu --max-elements N``: every GPU task's configs of at most N input elements (the whole
    GPU half takes hours on 2 cores); the scope names the bound; the page counts what was re-tested of all."""
    make_task(133, "paddle.Tensor.__mul__", [FAILING_FORWARD], kernel="GPU")  # 64 elements
    make_task(134, "paddle.logit", [PASSING[0]], kernel="GPU")  # 4 elements
    make_task(135, "paddle.maximum", [PASSING[2]], kernel="GPU")  # 13,953 elements
    call_command("retest", "--all", "--on-cpu", "--max-elements", "64")
    run = TestRun.objects.get()
    assert run.scope["max_elements"] == 64 and run.scope["tasks"] == [133, 134, 135] and run.total == 2
    assert "2 configs of 3 GPU tasks on the cpu lane (the configs of at most 64 input elements)" in capsys.readouterr().out
    page = Client().get(f"/runs/{run.pk}", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "，仅限输入元素不超过 64 个的配置" in page
    assert ", only configs of at most 64 input elements" in Client().get(f"/runs/{run.pk}").content.decode()
    for options, why in ((("--all", "--on-cpu", "--max-elements", "3"), "no config of these GPU tasks has at most 3"),
                         (("--all", "--on-cpu", "--max-elements", "-1"), "a number of input elements, 0 or more"),
                         (("--all", "--max-elements", "64"), "--max-elements and --smallest bound an --on-cpu"),
                         (("--all", "--on-cpu", "--smallest", "0"), "a number of configs per task, 1 or more")):
        with pytest.raises(CommandError, match=why):
            call_command("retest", *options)
    assert TestRun.objects.count() == 1
    # each task's smallest config: the first start's share, on demand (No.135's one config is over 64 elements)
    call_command("retest", "--all", "--on-cpu", "--smallest", "1")
    smallest = TestRun.objects.latest("pk")
    assert smallest.total == 3 and smallest.scope["per_task"] == 1 and "max_elements" not in smallest.scope
    assert "(each task's 1 smallest configs)" in capsys.readouterr().out


def test_a_gpu_task_failing_on_cpu_gets_a_cpu_repro(evidence, capsys):
    mixed, _ = evidence
    assert diagnosable_tasks("task", tasks=[133]) == [mixed]
    call_command("diagnose", "--task", "133", "--inline", "--max-configs", "1")
    diagnosis = Diagnosis.objects.get(task=mixed)
    assert diagnosis.failing_config.config == FAILING_FORWARD and diagnosis.state == "done"
    assert "paddle" in diagnosis.repro and diagnosis.shrunk_config.startswith("paddle.Tensor.__mul__(")
    assert "No.133 paddle.Tensor.__mul__: 1 failing configs" in capsys.readouterr().out


def test_a_bounded_runs_config_list_and_the_diff_maps_are_not_decoded_per_verdict(evidence):
    """A bounded run lists its config ids in its scope (16,116 of them up to 1e5 elements) and a one_hot verdict's
    diff map is ~60 KB: read with every verdict, they made task No.178's page take 100 s. The readers of the newest
    verdicts leave both (and a config's origins) unread until a caller asks."""
    from tracker.selectors.runs import latest_results, run_results

    mixed, _ = evidence
    latest = list(latest_results(lane="cpu", task=mixed).values())
    listed = list(run_results(latest[0].run))
    for result in latest + listed:
        assert {"diff_map"} <= result.get_deferred_fields() and "scope" in result.run.get_deferred_fields()
    for result in listed:
        assert "origins" in result.failing_config.get_deferred_fields()
    # the newest verdicts come without their configs at all (issue #45: an object per config was a third of a GPU
    # task page's time); the few readers of a config's text read those
    assert not any("failing_config" in result._state.fields_cache for result in latest)
    failing = next(r for r in latest if r.status == "accuracy_error")
    assert failing.diff_map["values"]  # loaded when a caller asks for it
