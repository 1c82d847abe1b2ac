"""Readings only when asked (issue #43), through the real runner (paddle and torch in a worker process): a run
without them stores the verdict, ``exact`` and ``max_ulp`` and says the readings were not asked for; ``retest
--readings``, the task page's box and the alignment page's button ask for them; the run page says where the
worker time went; a release matrix's lanes share Torch's results through the cache, a single run does not."""
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from apitester.pool import TimeBudget
from apitester.readings import NOT_ASKED
from tracker.models import ConfigResult, FailingConfig, TestRun
from tracker.services.runs import create_matrix_run, create_run, execute_run, store_result
from tracker.services.runs.executor import torch_cache_for

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=30.0, per_million_elements=5.0)}
NUDGED = 'apitester_test.nudged(Tensor([64],"float32"), )'  # inexact, deterministic (tests/fake_specs/exact.py)
EXACT = 'paddle.maximum(Tensor([8, 4],"float32"), Tensor([8, 4],"float32"), )'


@pytest.fixture
def tasks(monkeypatch):
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", "tests.fake_specs.exact")
    make_task(8, "apitester_test.nudged", [NUDGED])
    make_task(9, "paddle.maximum", [EXACT])


def _run(readings: bool) -> TestRun:
    run = create_run("tasks", tasks=[8, 9], lane="cpu", readings=readings)
    execute_run(run.pk, workers=1, options=FAST)
    return run


def test_a_run_without_readings_keeps_the_exact_rule_and_says_what_it_did_not_read(tasks, client):
    asked, plain = _run(True), _run(False)  # the plain run is the newest: the task page shows it
    p = ConfigResult.objects.get(run=plain, failing_config__config=NUDGED)
    a = ConfigResult.objects.get(run=asked, failing_config__config=NUDGED)
    assert (p.status, p.exact, p.max_ulp) == (a.status, a.exact, a.max_ulp) and p.exact is False and p.max_ulp >= 1
    assert (p.stable, p.closer) == (None, "") and p.closer_skipped == NOT_ASKED
    assert a.stable is True and a.closer != "" and a.closer_skipped == ""
    assert "readings" in a.phases and "readings" not in p.phases
    assert set(p.phases) >= {"paddle", "torch", "compare", "exact", "other"} and p.torch_cache == {}
    exact = ConfigResult.objects.get(run=plain, failing_config__config=EXACT)
    assert exact.exact is True and exact.closer_skipped == ""

    page = client.get(f"/runs/{plain.pk}").content.decode()
    assert 'id="run-profile"' in page and "Where the worker time went" in page and "paddle " in page
    assert "without the readings (not asked for)" in page
    assert "with the readings (stability, who is closer)" in client.get(f"/runs/{asked.pk}").content.decode()
    zh = client.get(f"/runs/{plain.pk}", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "工作进程的时间花在" in zh and "未要求" in zh
    task = client.get("/tasks/8").content.decode()
    assert "readings not asked for" in task


def test_retest_and_the_staff_forms_ask_for_the_readings(tasks, client):
    call_command("retest", "--task", "8")
    call_command("retest", "--task", "8", "--readings")
    assert list(TestRun.objects.order_by("id").values_list("readings", flat=True)) == [False, True]
    with pytest.raises(CommandError, match="--readings asks a new CPU-task run"):
        call_command("retest", "--resume", "--readings")
    client.force_login(User.objects.create_user("maint", password="pw", is_staff=True))
    assert 'name="readings"' in client.get("/tasks/8").content.decode()
    client.post("/runs/start", {"scope": "task", "task": "8", "lane": "cpu", "readings": "1"})
    client.post("/runs/start", {"scope": "task", "task": "8", "lane": "cpu"})
    assert list(TestRun.objects.order_by("id").values_list("readings", flat=True))[2:] == [True, False]


def test_the_alignment_page_offers_staff_a_run_with_the_readings(tasks, client):
    run = _run(False)
    run.refresh_from_db()
    release = run.paddle_version
    assert release
    url = f"/alignment?release={release}&api=apitester_test.nudged&dtype=float32"
    assert 'id="alignment-readings-form"' not in client.get(url).content.decode()
    client.force_login(User.objects.create_user("maint", password="pw", is_staff=True))
    page = client.get(url).content.decode()
    assert 'id="alignment-readings-form"' in page and 'name="readings" value="1"' in page
    response = client.post("/runs/start", {"scope": "api", "api": "apitester_test.nudged", "lane": "cpu",
                                           "releases": release, "mode": "full", "readings": "1"})
    assert response.status_code == 302, response
    follow = client.get(response["Location"]).content.decode()
    assert "queued" in follow, follow[-3000:]
    matrix = TestRun.objects.get(release="matrix")
    assert matrix.readings and all(lane.readings for lane in matrix.lanes.all())


@override_settings(TORCH_CACHE_DIR="/tmp/board-torch-cache", TORCH_CACHE_MAX_MB=64)
def test_only_a_release_matrix_lane_uses_the_torch_cache(tasks):
    single = create_run("tasks", tasks=[9], lane="cpu")
    matrix = create_matrix_run("tasks", tasks=[9], releases=["3.3.1"], lane="cpu")
    assert torch_cache_for(single) is None
    assert torch_cache_for(matrix.lanes.get()) == {"dir": "/tmp/board-torch-cache", "max_bytes": 64 << 20}
    with override_settings(TORCH_CACHE_DIR=""):
        assert torch_cache_for(matrix.lanes.get()) is None


def test_a_workers_phases_and_cache_counts_are_figures_or_nothing(tasks):
    run = create_run("tasks", tasks=[9], lane="cpu")
    config = FailingConfig.objects.get(config=EXACT)
    verdict = {"status": "pass", "config": EXACT, "phases": {"paddle": 0.5, "torch": "nan", "evil": 3, "x" * 999: 1,
                                                               "other": -2},
               "torch_cache": {"hit": 3, "miss": "many", "drop tables": 1}}
    store_result(run, config, verdict, 1.0)
    stored = ConfigResult.objects.get(run=run)
    assert stored.status == "pass"
    assert stored.phases == {"paddle": 0.5, "torch": 0.0, "other": 0.0} and stored.torch_cache == {"hit": 3}
    other = create_run("tasks", tasks=[9], lane="cpu")
    store_result(other, config, {**verdict, "phases": ["not", "a", "dict"], "torch_cache": None}, 1.0)
    kept = ConfigResult.objects.get(run=other)
    assert (kept.status, kept.phases, kept.torch_cache) == ("pass", {}, {})
