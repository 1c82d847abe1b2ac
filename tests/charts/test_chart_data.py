"""Chart numbers checked against the database they are drawn from."""
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.github import payloads
from tests.github.conftest import fake_github  # noqa: F401  (the GitHub stand-in fixture)
from tracker.github.client import GitHubClient
from tracker.services.github_sync import sync_github
from tracker.models import Claim, ConfigResult, Contributor, Event, FailingConfig, PullRequest, Task, TestRun
from tracker.selectors import charts as sel
from tracker.services import latest
from tracker.services.synthetic import generate_results

from tests.factories import make_task

from .board_history import DAYS, at, comment, seed_history
from .figures import page_figure

pytestmark = pytest.mark.django_db

STATUSES = ["open", "claimed", "pr_submitted", "completed", "locked"]


def make_config(task, i=0):
    return FailingConfig.objects.create(task=task, config=f'{task.api}(Tensor([{i + 1}],"float32"), )',
                                        config_hash=f"{task.number}-{i}", origin_file="f")


def make_run(lane="cpu", days_ago=0, version="3.3.1"):
    run = TestRun.objects.create(lane=lane, state="done", paddle_version=version)
    TestRun.objects.filter(id=run.id).update(created=timezone.now() - timedelta(days=days_ago))
    run.refresh_from_db()
    return run


def result(run, cfg, status, max_rel=None):
    made = ConfigResult.objects.create(run=run, failing_config=cfg, task=cfg.task, status=status, max_rel=max_rel)
    latest.record(made, run)  # as store_result does
    return made


def test_funnel_equals_board_counts():
    for n in range(1, 41):
        make_task(n, status=STATUSES[n % len(STATUSES)], kernel="CPU" if n % 3 else "GPU")
    funnel = sel.funnel()
    claimable = Task.objects.exclude(status="locked")
    assert funnel["all"]["open"] == claimable.count() == 32
    assert funnel["all"]["claimed"] == claimable.filter(status__in=["claimed", "pr_submitted", "completed"]).count()
    assert funnel["all"]["pr_submitted"] == claimable.filter(status__in=["pr_submitted", "completed"]).count()
    assert funnel["all"]["completed"] == claimable.filter(status="completed").count()
    for kernel in ("CPU", "GPU"):
        assert funnel[kernel]["open"] == claimable.filter(kernel=kernel).count()
    assert funnel["CPU"]["completed"] + funnel["GPU"]["completed"] == funnel["all"]["completed"]
    assert funnel["all"]["verified"] == 0


def test_fix_verified_needs_every_config_passing_in_the_tasks_own_lane():
    cpu_task = make_task(1, status="completed")
    gpu_task = make_task(2, status="completed", kernel="GPU")
    partial = make_task(3, status="completed")
    cpu_cfgs = [make_config(cpu_task, i) for i in range(2)]
    gpu_cfg = make_config(gpu_task)
    partial_cfgs = [make_config(partial, i) for i in range(2)]
    # the fix comes with a new build (the same build failing, then passing, is flaky: never a verified fix)
    old, new = make_run(days_ago=2, version="3.3.0"), make_run(days_ago=1)
    result(old, cpu_cfgs[0], "accuracy_error", 3.0)
    for cfg in cpu_cfgs:
        result(new, cfg, "pass")
    result(new, gpu_cfg, "pass")  # a CPU-lane pass never verifies a GPU task
    result(new, partial_cfgs[0], "pass")
    result(new, partial_cfgs[1], "paddle_error")
    assert sel.verified_task_ids() == {cpu_task.id}
    assert sel.funnel()["all"]["verified"] == 1
    assert sel.funnel()["GPU"]["verified"] == 0


def test_heatmap_fraction_is_the_share_of_failing_configs():
    task = make_task(7)
    cfgs = [make_config(task, i) for i in range(4)]
    run = make_run()
    for cfg, status in zip(cfgs, ["pass", "accuracy_error", "paddle_error", "unsupported"]):
        result(run, cfg, status, max_rel=100.0 if status == "accuracy_error" else None)
    matrix = sel.task_run_matrix()
    row = [t["number"] for t in matrix.tasks].index(7)
    assert matrix.fail_fraction[row][0] == 0.5
    assert matrix.counts[row][0] == "2/4"
    assert matrix.log10_rel[row][0] == 2.0


def test_pass_fail_transition_is_pass_then_fail_in_the_same_lane():
    task = make_task(9)
    cfg, steady = make_config(task, 0), make_config(task, 1)
    r1, r2, r3 = make_run(days_ago=3, version="3.3.0"), make_run(days_ago=2, version="3.3.1"), make_run(days_ago=1, version="3.3.2")
    gpu = make_run("gpu", days_ago=0)
    result(r1, cfg, "pass"), result(r2, cfg, "accuracy_error", 5.0), result(r3, cfg, "accuracy_error", 5.0)
    result(r1, steady, "accuracy_error"), result(r2, steady, "pass")
    result(gpu, steady, "accuracy_error")  # different lane: not a transition from the cpu pass
    found = sel.pass_fail_transitions()
    assert [(r.failing_config_id, r.passed_version, r.failed_version) for r in found] == [(cfg.id, "3.3.0", "3.3.1")]
    assert sel.pass_fail_transitions(task)[0].task_number == 9


def test_contributor_stats_count_active_claims_on_claimable_tasks():
    now = timezone.now()
    alice, bob = Contributor.objects.create(login="alice"), Contributor.objects.create(login="bob")
    t1, t2, t3 = make_task(1, status="completed"), make_task(2, status="pr_submitted"), make_task(3, status="locked")
    # Claims made in comments carry their date (one imported from the issue text would give no lead time).
    Claim.objects.create(task=t1, contributor=alice, status="完成任务", source="comment", created=now - timedelta(days=10))
    Claim.objects.create(task=t2, contributor=alice, status="提交PR", source="comment", created=now - timedelta(days=5))
    Claim.objects.create(task=t2, contributor=bob, status="报名", source="seed", created=now, withdrawn_at=now)
    Claim.objects.create(task=t3, contributor=bob, status="报名", source="seed", created=now)
    pr = PullRequest.objects.create(repo="PaddlePaddle/Paddle", number=73000, author=alice, state="merged",
                                    created_at=now - timedelta(days=8), merged_at=now - timedelta(days=6))
    pr.tasks.add(t1)
    rows = {r["login"]: r for r in sel.contributor_stats()}
    assert rows["alice"]["claimed"] == 2 and rows["alice"]["pr_submitted"] == 2 and rows["alice"]["completed"] == 1
    assert rows["alice"]["median_claim_to_pr_days"] == 2.0
    assert rows["alice"]["median_pr_to_merge_days"] == 2.0
    assert "bob" not in rows  # withdrawn claim and a claim on a locked task do not count


def test_burndown_counts_each_task_once_on_its_first_day():
    make_task(1), make_task(2)
    comment("alice", "【报名】: 1", at(0, 9))
    comment("bob", "【报名】: 1", at(1, 9))  # a second claimant: task 1 still counts once, on day 0
    comment("carol", "【报名】: 2", at(2, 9))
    burndown = sel.burndown_from_events()
    assert burndown["days"] == [DAYS[0], DAYS[2]]
    assert burndown["claims"] == [1, 2]
    assert burndown["unclaimed"] == [1, 0]


def test_burndown_counts_a_merge_the_poller_first_sees_already_merged(fake_github):
    """A PR merged before the board saw it writes no state Event: the merge comes from the PR's merged_at."""
    task = make_task(1)
    fake_github.pulls = [payloads.search_item(73_005, "[Accuracy diff No.1] fix", "alice", state="closed",
                                              created_at=at(0, 9), updated_at=at(1, 9), closed_at=at(1, 9),
                                              merged_at=at(1, 9))]
    sync_github(GitHubClient(fake_github.url, "ghs_test_token", max_wait=5), repo=payloads.REPO,
                issue=payloads.ISSUE, pr_repos=[payloads.REPO], prefix="Accuracy diff", comments=False)
    assert not Event.objects.filter(kind="pr_state").exists()
    assert PullRequest.objects.get(number=73_005).tasks.get() == task
    burndown = sel.burndown_from_events()
    assert burndown["days"] == [DAYS[1]]
    assert burndown["prs"] == burndown["merged"] == [1]


def test_burndown_figure_draws_each_series_day_by_day(client):
    seed_history(1)
    make_task(4, status="locked")  # not claimable: outside the burn-down
    figure = page_figure(client.get("/charts/overview").content.decode(), "burndown")
    traces = {trace["name"]: trace for trace in figure["data"]}
    expected = {
        "tasks without a claim": [2, 1, 0],  # three unlocked tasks, claimed on days 0, 1, 2
        "tasks claimed": [1, 2, 3],
        "tasks with a PR": [0, 1, 2],
        "tasks with a merged PR": [0, 0, 1],
        "tasks with a verified fix": [0, 0, 1],
        "failing configs in the CPU report": [1, 2, 1],
    }
    assert set(traces) == set(expected)
    for name, values in expected.items():
        assert traces[name]["x"] == DAYS and traces[name]["y"] == values, name
    assert traces["failing configs in the CPU report"]["yaxis"] == "y2"
    funnel = sel.funnel()["all"]
    assert (funnel["open"], funnel["claimed"], funnel["pr_submitted"], funnel["completed"], funnel["verified"]) \
        == (3, 3, 2, 1, 1)


def test_contributor_figure_draws_each_persons_counts(client):
    seed_history(1)
    figure = page_figure(client.get("/charts/contributors").content.decode(), "contributors")
    traces = {trace["name"]: trace for trace in figure["data"]}
    assert {name: trace["type"] for name, trace in traces.items()} == dict.fromkeys(
        ("claimed", "PR submitted", "completed", "fix verified"), "bar")
    for name, counts in (("claimed", [2, 1]), ("PR submitted", [2, 0]), ("completed", [1, 0]),
                         ("fix verified", [1, 0])):
        assert traces[name]["x"] == ["alice", "bob"] and traces[name]["y"] == counts, name


def test_pages_render_with_tables(client):
    generate_results(runs=4, results=400, seed=1)
    for url, table in (("/charts/overview", "funnel-table"), ("/charts/heatmap", "heatmap-table"),
                       ("/charts/contributors", "contributors-table"), ("/charts/pass-fail-transitions", "pass-fail-transitions-table"),
                       ("/charts/heatmap?metric=log10rel", "heatmap-table")):
        response = client.get(url)
        assert response.status_code == 200, url
        assert f'id="{table}"' in response.content.decode(), url
    # plotly.js comes from the installed plotly package, found by the static-files machinery.
    from django.contrib.staticfiles import finders
    import plotly
    found = finders.find("plotly/plotly.min.js")
    assert found and found.startswith(str(__import__("pathlib").Path(plotly.__file__).parent))


def test_diff_map_page_marks_nan_inf_cells(client):
    task = make_task(5)
    cfg = make_config(task)
    res = ConfigResult.objects.create(run=make_run(), failing_config=cfg, task=task, status="accuracy_error",
                                      diff_map={"values": [[0.5, "inf"], [0.0, 1.5]], "mask": [[False, True], [False, False]]})
    page = client.get(f"/tasks/5/results/{res.id}/diff")
    assert page.status_code == 200
    body = page.content.decode()
    assert "python -m apitester --accuracy=True --api_config=" in body
    assert "NaN/inf" in body
