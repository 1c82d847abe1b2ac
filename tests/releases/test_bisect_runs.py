"""A bisecting matrix run through the real write path: real workers on fake release envs (the main Paddle
reporting another version), each round's lanes planned by refresh_matrix when the previous ones end.

The fake envs are the module's (one directory), and the lanes run on warm pools (RUNNER_WARM_POOLS, one idle
pool a release, as a matrix host keeps them): a release's worker starts (imports paddle and torch) once for the
whole file instead of once a lane — 5 starts instead of 20. A lane on a fresh pool is the same code path with
the start in front (tests/releases/test_release_runs.py, tests/runner/test_pool.py's warm-pool tests)."""
from importlib.metadata import version

import pytest

from apitester.pool import TimeBudget, close_idle_pools
from tracker.models import ConfigResult, TestRun
from tracker.services.runs import BISECT, create_matrix_run, execute_run

from ..runner.conftest import make_task
from .fake_envs import make_fake_envs

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=60.0, per_million_elements=5.0)}
MAIN = version("paddlepaddle")
FAKES = ["3.0.0", "3.1.0", "3.2.0", "3.3.0"]
RELEASES = FAKES + [MAIN]
FIXED_IN_3_2 = 'paddle.testonly.fixed_in_release(x=Tensor([3],"float64"), release="3.2.0", )'
ALWAYS_PASSES = 'paddle.testonly.fixed_in_release(x=Tensor([4],"float64"), release="3.0.0", )'


def run_until_done(parent):
    """Execute queued lanes (as a qcluster would) until the matrix asks for no more; the lanes run."""
    executed = []
    while queued := list(parent.lanes.filter(state="queued").order_by("id")):
        for lane in queued:
            execute_run(lane.pk, workers=1, options=FAST)
            executed.append(lane.release)
    parent.refresh_from_db()
    return executed


@pytest.fixture(scope="module")
def envs_dir(tmp_path_factory):
    """The fake release envs, one directory for the module: the warm pools' key holds the env's python path."""
    close_idle_pools()
    yield make_fake_envs(tmp_path_factory.mktemp("bisect") / "envs", FAKES)
    close_idle_pools()  # the module's idle workers end with it


@pytest.fixture
def fake_envs(settings, envs_dir, monkeypatch):
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", "tests.fake_specs.workers")
    settings.PADDLE_ENVS_DIR = str(envs_dir)
    settings.RUNNER_WARM_POOLS = len(RELEASES)  # one idle pool a release (each one worker)


def test_bisection_runs_the_ends_then_probes_only_the_config_whose_ends_differ_and_the_pages_show_it(fake_envs, client):
    """One bisecting run (4 lanes, a worker each), then what the task page and its API make of it: the run and
    inferred cells and the releases run (one test, not two: the run is the cost, 65 s of a loaded 2-core run)."""
    make_task(31, "paddle.testonly.fixed_in_release", [FIXED_IN_3_2, ALWAYS_PASSES])
    parent = create_matrix_run("task", tasks=[31], releases=RELEASES, mode=BISECT)
    assert sorted(lane.release for lane in parent.lanes.all()) == ["3.0.0", MAIN]

    lanes = run_until_done(parent)
    assert parent.state == "done"
    # Round 1: both ends; round 2: the middle (3.2.0, passes); round 3: 3.1.0 (fails) — the change point.
    assert lanes == ["3.0.0", MAIN, "3.2.0", "3.1.0"]
    cells = {(r.failing_config.config, r.paddle_version): r.status
             for r in ConfigResult.objects.select_related("failing_config")}
    assert {release: status for (config, release), status in cells.items() if config == FIXED_IN_3_2} == {
        "3.0.0": "accuracy_error", "3.1.0": "accuracy_error", "3.2.0": "pass", MAIN: "pass"}
    assert {release for config, release in cells if config == ALWAYS_PASSES} == {"3.0.0", MAIN}
    # 6 verdicts instead of 2 configs × 5 releases.
    assert ConfigResult.objects.count() == 6 and parent.total == parent.done == 6
    assert TestRun.objects.filter(parent=parent).count() == 4

    html = client.get("/tasks/31").content.decode()
    assert (f"fixed in Paddle 3.2.0: fails on 3.0.0 and 3.1.0, passes on 3.2.0 and {MAIN}; "
            "3.3.0 not run") in html
    assert html.count('class="inferred ') == 4  # 3.3.0 of the first config, 3.1.0–3.3.0 of the second
    assert 'id="release-grid-legend"' in html and "inferred from 3.0.0 (not run)" in html
    data = client.get("/api/tasks/31").json()["releases"]
    first, second = (row["by_release"] for row in data["verdicts"])
    assert first["3.3.0"] == {**first["3.2.0"], "inferred": True, "inferred_from": "3.2.0"}
    assert first["3.1.0"]["inferred"] is False and second["3.2.0"]["inferred_from"] == "3.0.0"
    assert data["fixed_in"]["not_run"] == ["3.3.0"] and data["fixed_in"]["release"] == "3.2.0"


def test_retest_inline_bisects_by_default_and_full_scans_every_release(fake_envs, capsys):
    from django.core.management import call_command

    make_task(31, "paddle.testonly.fixed_in_release", [FIXED_IN_3_2, ALWAYS_PASSES])
    releases = ",".join(RELEASES)
    call_command("retest", "--task", "31", "--releases", releases, "--inline", "--workers", "1")
    bisected = TestRun.objects.get(release="matrix")
    assert bisected.state == "done" and ConfigResult.objects.filter(run__parent=bisected).count() == 6
    call_command("retest", "--task", "31", "--releases", releases, "--full", "--inline", "--workers", "1")
    full = TestRun.objects.filter(release="matrix").exclude(pk=bisected.pk).get()
    # Runs executed: 6 verdicts bisecting vs 2 configs × 5 releases = 10 scanning.
    assert full.scope["mode"] == "full" and ConfigResult.objects.filter(run__parent=full).count() == 10
    assert "run" in capsys.readouterr().out


def test_releases_chart_marks_the_releases_a_task_was_not_run_on(fake_envs, client):
    from tests.charts.figures import page_figure

    make_task(31, "paddle.testonly.fixed_in_release", [ALWAYS_PASSES])
    run_until_done(create_matrix_run("task", tasks=[31], releases=RELEASES, mode=BISECT))
    html = client.get("/charts/releases").content.decode()
    figure = page_figure(html, "task-release-heatmap")
    assert figure["data"][0]["z"] == [[1.0] * 5]
    marks = figure["data"][1]
    assert marks["name"] == "inferred (not run)" and marks["x"] == ["3.1.0", "3.2.0", "3.3.0"]
    assert html.count('<td class="inferred"') == 3
    assert f"passing on every release tested (3.0.0, {MAIN}); 3.1.0–3.3.0 not run (inferred)" in html


def test_a_tasks_smallest_config_scouts_the_change_point_and_the_others_probe_only_there(fake_envs):
    configs = [f'paddle.testonly.fixed_in_release(x=Tensor([{n}],"float64"), release="3.1.0", )' for n in (40, 2, 9)]
    make_task(32, "paddle.testonly.fixed_in_release", configs)
    parent = create_matrix_run("task", tasks=[32], releases=RELEASES, mode=BISECT)
    lanes = run_until_done(parent)
    assert parent.state == "done"
    # Round 2 and 3: only the scout (the 2-element config) bisects: 3.2.0 passes, 3.1.0 passes: fixed in
    # 3.1.0. Round 4: the two others run 3.1.0 only (3.0.0, the release before, is already run).
    assert lanes == ["3.0.0", MAIN, "3.2.0", "3.1.0", "3.1.0"]
    probes = [sorted(r.failing_config.config for r in ConfigResult.objects.filter(run=lane))
              for lane in parent.lanes.order_by("id")[2:]]
    assert probes == [[configs[1]], [configs[1]], sorted([configs[0], configs[2]])]
    cells = {(r.failing_config.config, r.paddle_version): r.status
             for r in ConfigResult.objects.select_related("failing_config")}
    for config in configs:
        assert cells[(config, "3.0.0")] == "accuracy_error" and cells[(config, "3.1.0")] == "pass"
    # 10 verdicts; bisecting each config on its own takes 12 (two probes each), a full scan 15
    assert ConfigResult.objects.count() == 10 and parent.total == parent.done == 10
