"""A task's diagnosis through the real write path (issue 19): the runner stores the verdicts (real paddle and
torch in worker processes), `diagnose_tasks` — the queued job's work — runs `python -m apitester diagnose` per
strictly failing config, and the task page, the board's column and /api/tasks/<n> show the same distinct
failures, with a repro script that reproduces the failure on its own."""
import subprocess
import sys

import pytest
from django.contrib.auth.models import User
from django_q.models import OrmQ

from apitester.pool import TimeBudget, close_idle_pools
from tracker.models import Diagnosis, Event
from tracker.services.diagnoses import diagnose_tasks, diagnosis_targets
from tracker.services.runs import create_run, execute_run

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}
# float16 x 1e6: Paddle overflows to inf where the product is finite (Torch gives the rounded value).
# The shrink keeps the failing element (cut from the failing draw): the first two shrink to that one element
# (float16[1, 1]); the third keeps its rank (float16[1]): float16[1,1] and float16[1] are two signatures.
SAME_A = 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )'
SAME_B = 'paddle.Tensor.__mul__(Tensor([16, 8],"float16"), 1000000.0, )'
OTHER = 'paddle.Tensor.__mul__(Tensor([64],"float16"), 1000000.0, )'
PASSING = 'paddle.Tensor.__mul__(Tensor([8, 8],"float32"), 2.0, )'


@pytest.fixture(scope="module")
def warm_pool_of_the_module():
    """The tests that retest task 141 run on one warm pool (RUNNER_WARM_POOLS): its worker imports paddle and
    torch once for the module instead of once a test. Closed when the module ends."""
    close_idle_pools()
    yield
    close_idle_pools()


@pytest.fixture
def retested(settings, warm_pool_of_the_module):
    settings.RUNNER_WARM_POOLS = 1
    task = make_task(141, "paddle.Tensor.__mul__", [SAME_A, SAME_B, OTHER, PASSING])
    execute_run(create_run("task", tasks=[141], lane="cpu").pk, workers=1, options=FAST)
    return task


def test_distinct_failures_are_shown_alike_on_the_task_page_the_board_and_the_api(client, retested, tmp_path):
    # One config per kind of failure first (status, direction, dtypes), smallest first: all three fail alike.
    assert [r.failing_config.config for r in diagnosis_targets(retested)] == [SAME_A, OTHER, SAME_B]
    assert diagnose_tasks([141]) == {141: 3}
    stored = {d.failing_config.config: d for d in Diagnosis.objects.all()}
    assert set(stored) == {SAME_A, SAME_B, OTHER}  # the passing config is not diagnosed
    assert {d.reading for d in stored.values()} == {"paddle_off"}
    assert stored[SAME_A].signature == stored[SAME_B].signature != stored[OTHER].signature
    assert stored[SAME_A].shrunk_config == 'paddle.Tensor.__mul__(Tensor([1, 1],"float16"), 1000000.0, )'
    assert stored[SAME_A].elements_before == 64 and stored[SAME_A].elements_after == 1

    page = client.get("/tasks/141").content.decode()
    assert "3 failing configs, 3 diagnosed: 2 distinct failures" in page
    assert "Paddle is off the float64 value; Torch is close to it" in page
    assert "64 → 1 elements" in page and "Repro script" in page
    zh = client.get("/tasks/141", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "3 个失败配置，已诊断 3 个：2 个不同的失败" in zh and "Paddle 偏离 float64 精确值" in zh
    board = client.get("/").content.decode()
    assert '<a href="/tasks/141#diagnosis">2</a>' in board

    data = client.get("/api/tasks/141").json()["diagnosis"]
    assert data["failing_configs"] == 3 and data["diagnosed"] == 3
    failures = data["distinct_failures"]
    assert [f["configs"] for f in failures] == [2, 1]
    assert failures[0]["reading"] == "paddle_off" and failures[0]["oracle"]["readings"][0]["torch"]["rmse"] == 0.0
    # The representative's script reproduces the failure by itself: exit 1 on the assert.
    script = tmp_path / "repro.py"
    script.write_text(failures[0]["repro"])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "AssertionError" in done.stderr


def test_a_config_the_engine_cannot_diagnose_is_stored_with_why(client, retested, settings):
    settings.DIAGNOSE_TIMEOUT = 0.01  # no engine process starts that fast
    diagnose_tasks([141], limit=1)
    failed = Diagnosis.objects.get()
    assert failed.state == "error" and "took longer than DIAGNOSE_TIMEOUT" in failed.message
    page = client.get("/tasks/141").content.decode()
    assert "1 config could not be diagnosed:" in page and "took longer than DIAGNOSE_TIMEOUT" in page
    assert "3 failing configs, 1 diagnosed: 0 distinct failures" in page


def test_staff_queue_a_diagnosis_and_bad_input_queues_nothing(client, retested):
    answer = client.post("/runs/diagnose", {"scope": "task", "task": "141", "next": "/tasks/141"})
    assert answer.status_code == 302 and "/login" in answer["Location"] and not OrmQ.objects.exists()
    client.force_login(User.objects.create_user("maint", password="pw", is_staff=True))
    assert "Diagnose the failing configs" in client.get("/tasks/141").content.decode()
    answer = client.post("/runs/diagnose", {"scope": "task", "task": "141", "next": "/tasks/141"}, follow=True)
    assert "Diagnosis of 1 tasks queued" in answer.content.decode()
    [queued] = OrmQ.objects.all()
    assert queued.task["func"] == "tracker.tasks.diagnose_tasks_task" and queued.task["args"] == ([141], None)  # None: DIAGNOSE_MAX_CONFIGS
    for bad in ({"scope": "task", "task": "No.1"}, {"scope": "task", "task": "99"}, {"scope": "api", "api": "x"}):
        page = client.post("/runs/diagnose", {**bad, "next": "/tasks/141"}, follow=True).content.decode()
        assert "queued" not in page
    assert OrmQ.objects.count() == 1


def test_an_engine_answer_of_the_wrong_shape_is_stored_without_failing_the_job(retested):
    """A wrong-shaped answer (an engine of another schema, a truncated line) never stops a task's diagnosis:
    what can be read is stored, the rest is left blank, and earlier diagnoses stay."""
    from tracker.services.diagnoses import store_diagnosis

    [first, second, *_] = diagnosis_targets(retested)
    kept = store_diagnosis(first, {"error": "the engine's answer is not JSON (Expecting value)"})
    odd = store_diagnosis(second, {"diagnosed": True, "shrink": "x", "reading": ["paddle_off"], "seconds": "nan",
                                   "signature": {"hash": 7}, "repro": None, "failure": {"status": 1}})
    assert kept.state == "error" and "not JSON" in kept.message
    odd.refresh_from_db()
    assert (odd.state, odd.seconds, odd.reading, odd.signature, odd.status, odd.repro) == ("done", 0.0, "", "7", "1", "")
    undiagnosed = store_diagnosis(second, {"diagnosed": False, "reason": "no strict failure to diagnose (pass)"})
    assert undiagnosed.state == "error" and undiagnosed.message.startswith("no strict failure")
    assert Diagnosis.objects.count() == 3


TORCH_OFF = 'apitester_diag.torch_off(Tensor([8, 8],"float32"), )'


def test_a_strict_failure_the_oracle_reads_torch_off_becomes_torch_suspect_and_never_a_verified_fix(
        client, monkeypatch):
    """Through the real write path: the runner's workers judge the config (strict fails: Torch's call is 5 %
    off by construction), the diagnosis' float64 oracle reads torch_off, and the stored final verdict becomes
    torch_suspect with the oracle's numbers; the strict layer stays failing, so the task is not "fix verified"
    and its page shows both layers.  A later diagnosis with another reading restores the engine's status."""
    from tracker.models import ConfigResult
    from tracker.services.diagnoses import run_engine, store_diagnosis
    from tracker.selectors.runs import latest_results

    monkeypatch.setenv("APITESTER_EXTRA_SPECS", "tests.engine.diagnosis_test_specs")
    close_idle_pools()  # a warm pool's workers were started without these specs: this run starts its own
    make_task(142, "apitester_diag.torch_off", [TORCH_OFF])
    execute_run(create_run("task", tasks=[142], lane="cpu").pk, workers=1, options=FAST)
    [judged] = ConfigResult.objects.filter(task__number=142)
    assert judged.status == "accuracy_error" and judged.strict == "accuracy_error" and not judged.engine_status

    assert diagnose_tasks([142]) == {142: 1}
    diagnosis = Diagnosis.objects.get()
    assert diagnosis.reading == "torch_off"
    judged.refresh_from_db()
    assert (judged.status, judged.strict, judged.engine_status) == ("torch_suspect", "accuracy_error", "accuracy_error")
    assert "error to the float64 oracle: Torch" in judged.evidence and "Paddle max_abs" in judged.evidence
    assert latest_results(lane="cpu", task=diagnosis.task)[judged.failing_config_id].status == "torch_suspect"

    # the change of the config's final status is a state change of the task: an Event naming the diagnosis
    [reread] = Event.objects.filter(task__number=142, kind="verdict_reread")
    assert reread.source == "diagnosis" and reread.source_ref == f"diagnosis {diagnosis.pk}"
    assert reread.data == {"run": judged.run_id, "failing_config": judged.failing_config_id, "result": judged.pk,
                           "from": "accuracy_error", "to": "torch_suspect"}
    assert "accuracy_error → torch_suspect (the float64 oracle reads Torch off)" in reread.message

    page = client.get("/tasks/142").content.decode()
    assert "verdict_reread" in page and f"diagnosis {diagnosis.pk}" in page
    assert "fix verified" not in page.lower()
    assert "final, from the float64 oracle's diagnosis:</span> <span class=\"status-torch_suspect\">" in page and "the engine said accuracy_error" in page
    assert "strict (plain Torch call)" in page and "error to the float64 oracle: Torch" in page
    zh = client.get("/tasks/142", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "最终结论（来自 float64 基准的诊断）" in zh and "引擎原判为 accuracy_error" in zh
    assert client.get("/api/tasks/142").json()["diagnosis"]["distinct_failures"][0]["reading"] == "torch_off"

    # A re-diagnosis whose answer has no implied verdict (here: the reading a fixed Torch would give) puts the
    # engine's own final status back; an engine error changes nothing.
    answer = run_engine(judged)
    assert answer["implied_verdict"]["status"] == "torch_suspect"
    store_diagnosis(judged, {"error": "the engine exited 1 without a diagnosis"})
    judged.refresh_from_db()
    assert judged.status == "torch_suspect"
    assert Event.objects.filter(kind="verdict_reread").count() == 1  # nothing changed, nothing recorded
    restoring = store_diagnosis(judged, {**answer, "implied_verdict": None, "reading": {"reading": "paddle_off"}})
    judged.refresh_from_db()
    assert (judged.status, judged.engine_status, judged.evidence) == ("accuracy_error", "", "")
    restored = Event.objects.filter(kind="verdict_reread").first()  # newest first
    assert restored.source_ref == f"diagnosis {restoring.pk}"
    assert (restored.data["from"], restored.data["to"]) == ("torch_suspect", "accuracy_error")
    assert "the diagnosis no longer reads Torch off" in restored.message
