"""Provenance and the threads axis through the real runner (issue #46): a run pins its workers to its thread count
(paddle and torch in a worker process), every stored verdict references the worker's provenance — one Provenance row
per distinct provenance, not one per result — and a verdict that changes with the thread count alone is shown as
thread-sensitive on the task and run pages; the host is shown to staff only, in the pages and in /api/runs/<id>."""
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from apitester.pool import TimeBudget
from tracker.models import ConfigResult, Provenance, TestRun
from tracker.services.runs import RunError, create_run, execute_run

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=30.0, per_million_elements=5.0)}
THREADED = 'apitester_test.threaded_sum(Tensor([4096],"float32"), )'  # tests/fake_specs/threads.py
STEADY = 'paddle.maximum(Tensor([8, 4],"float32"), Tensor([8, 4],"float32"), )'  # exact at any thread count


@pytest.fixture
def task(monkeypatch):
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", "tests.fake_specs.threads")
    return make_task(46, "apitester_test.threaded_sum", [THREADED, STEADY])


def _run(threads: int) -> TestRun:
    run = create_run("tasks", tasks=[46], lane="cpu", threads=threads)
    execute_run(run.pk, workers=1, options=FAST)
    run.refresh_from_db()
    return run


def test_runs_at_two_and_one_thread_store_their_provenance_and_mark_the_thread_sensitive_config(task, client):
    two, one = _run(2), _run(1)
    assert (two.threads, one.threads) == (2, 1) and two.state == one.state == "done"
    by_run = {(r.run_id, r.failing_config.config): r for r in ConfigResult.objects.select_related("provenance")}
    assert by_run[(two.pk, THREADED)].exact is False and by_run[(one.pk, THREADED)].exact is True
    assert by_run[(two.pk, STEADY)].exact is True and by_run[(one.pk, STEADY)].exact is True
    # one row per worker provenance: the two results of a run share it
    assert Provenance.objects.count() == 2
    for run, threads in ((two, 2), (one, 1)):
        rows = {by_run[(run.pk, c)].provenance_id for c in (THREADED, STEADY)}
        assert len(rows) == 1
        prov = Provenance.objects.get(pk=rows.pop())
        assert prov.threads == threads and prov.thread_detail["paddle"] == threads
        assert prov.thread_detail["omp_env"] == str(threads) and prov.paddle_version == run.paddle_version
        assert prov.cpu_capability["torch"] and prov.cpu_capability["paddle"] and prov.host

    page = client.get("/tasks/46").content.decode()
    assert 'id="task-provenance"' in page and 'class="thread-sensitive-config"' in page
    assert page.count('class="thread-sensitive-config"') == 1 and "threaded_sum" in page.split('id="thread-sensitive"')[1]
    assert "1 thread → exact" in page and "2 threads → within_tolerance" in page
    host = Provenance.objects.first().host
    assert "provenance-host" not in page
    run_page = client.get(f"/runs/{one.pk}").content.decode()
    assert 'id="run-provenance"' in run_page and "This run pins both frameworks to 1 thread." in run_page
    assert 'class="thread-sensitive-config"' in run_page and "provenance-host" not in run_page
    zh = client.get(f"/runs/{one.pk}", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "来源条件" in zh and "线程敏感" in zh

    api = client.get(f"/api/runs/{two.pk}").json()
    assert api["threads"] == 2 and len(api["provenance"]) == 1
    entry = api["provenance"][0]
    assert entry["threads"] == 2 and entry["results"] == 2 and entry["host"] == ""
    assert entry["paddle_commit"] == two.paddle_commit and entry["cpu_capability"]["torch"]
    client.force_login(User.objects.create_user("maint", is_staff=True))
    assert client.get(f"/api/runs/{two.pk}").json()["provenance"][0]["host"] == host
    staff_page = client.get("/tasks/46").content.decode()
    assert f'<td class="provenance-host">{host}</td>' in staff_page


def test_retest_threads_is_stored_on_the_run_and_a_bad_count_creates_nothing(task):
    call_command("retest", "--task", "46", "--threads", "4")
    call_command("retest", "--task", "46")
    assert list(TestRun.objects.order_by("id").values_list("threads", flat=True)) == [4, 1]
    for bad in (0, 257):
        with pytest.raises(CommandError, match="threads must be a whole number from 1 to 256"):
            call_command("retest", "--task", "46", "--threads", str(bad))
    with pytest.raises(RunError):
        create_run("tasks", tasks=[46], lane="cpu", threads=True)
    with pytest.raises(CommandError, match="--threads sets a new run's threads: an existing run keeps"):
        call_command("retest", "--resume", "--threads", "2")
    assert TestRun.objects.count() == 2
