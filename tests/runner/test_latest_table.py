"""LatestResult (issue #45): the newest-verdict rows store_result keeps give every "latest" reader the answers the
results themselves give — read here the old way, by scanning every result — on a board with several runs, lanes and
releases, superseded and re-run verdicts, a verdict stored late into an older run, a config moved to another task,
a deleted run and a deleted result; and the data migration's fill writes the rows store_result wrote."""
import pytest

from tests.factories import make_task
from tracker.models import ConfigResult, FailingConfig, LatestResult, Task, TestRun
from tracker.selectors import releases, runs
from tracker.selectors.envs import main_version
from tracker.services import latest
from tracker.services.diagnoses import apply_implied_verdict
from tracker.services.runs import store_result
from tracker.vocab import lane_of

pytestmark = pytest.mark.django_db

MAIN = main_version() or "3.0.0"


# ----------------------------------------------------------------------------- the old readers: every result scanned


def _newest(results, key) -> dict:
    best = {}
    for result in results:
        if (k := key(result)) not in best or result.run_id > best[k].run_id:
            best[k] = result
    return best


def old_latest(task: Task, lane: str) -> dict[int, int]:
    """config id -> result id: the newest verdict in the lane on the main environment, over every result."""
    results = ConfigResult.objects.filter(failing_config__task=task, run__lane=lane,
                                          run__release__in={"", main_version()}).select_related("run")
    return {config_id: r.pk for config_id, r in _newest(results, lambda r: r.failing_config_id).items()}


def old_grids(task_ids=None) -> dict[int, dict[int, dict[str, int]]]:
    """task id -> config id -> release -> (run id, status): each cell's newest verdict, over every result of these
    tasks."""
    own = {t.pk: lane_of(t.kernel) for t in (Task.objects.all() if task_ids is None
                                             else Task.objects.filter(pk__in=task_ids))}
    results = ConfigResult.objects.filter(task_id__in=own).select_related("run")
    newest = _newest(results, lambda r: (r.failing_config_id, r.run.lane, r.paddle_version or r.run.paddle_version))
    grids: dict = {}
    for (config_id, lane, release), r in newest.items():
        if release and lane == own[r.task_id]:
            grids.setdefault(r.task_id, {}).setdefault(config_id, {})[release] = (r.run_id, r.status)
    return grids


def old_verifications() -> dict[int, list[tuple]]:
    """task id -> the (status, run, version, adaptations) its Verification reads: each config's newest verdict per
    lane on the main environment over every result, kept where the lane is its result's task's own."""
    results = ConfigResult.objects.filter(run__release__in={"", main_version()}).select_related("run", "task")
    found: dict = {}
    for (_config, lane), r in _newest(results, lambda r: (r.failing_config_id, r.run.lane)).items():
        if lane == lane_of(r.task.kernel):
            found.setdefault(r.task_id, []).append((r.status, r.run_id, r.run.paddle_version, r.adaptations))
    return found


# ----------------------------------------------------------------------------- the board


def _run(lane, release="", version=MAIN):
    return TestRun.objects.create(scope={"kind": "all_open"}, lane=lane, release=release, paddle_version=version,
                                  state="done")


def _store(run, config, status, version=None):
    build = None if version is None else {"paddle_version": version}
    return store_result(run, config, {"status": status, "max_abs": 1.0 if status != "pass" else 0.0,
                                      "direction": "forward"}, 0.1, build=build)


@pytest.fixture
def board():
    cpu = make_task(101, configs=[f'paddle.api_101(Tensor([{i + 2}],"float32"), )' for i in range(4)])
    gpu = make_task(102, configs=[f'paddle.api_102(Tensor([{i + 2}],"float32"), )' for i in range(3)], kernel="GPU")
    a, b, c, d = cpu.failing_configs.order_by("pk")
    g1, g2, g3 = gpu.failing_configs.order_by("pk")
    first, second = _run("cpu"), _run("cpu")
    for config in (a, b, c, d):
        _store(first, config, "accuracy_error")
    for config in (a, b):  # re-run: a passes now, b still fails; c and d keep the first run's verdict
        _store(second, config, "pass" if config == a else "accuracy_error")
    _store(first, c, "pass")  # a second write for (run, config) is ignored
    late = _run("cpu")
    _store(late, d, "pass")
    _store(first, d, "accuracy_error")  # (already stored: ignored)
    resumed_old = _run("cpu")
    newer = _run("cpu")
    _store(newer, c, "crash")
    _store(resumed_old, c, "pass")  # stored after the newer run's verdict, into an older run: not the newest
    for release, statuses in (("2.6.2", ["accuracy_error"] * 4), ("3.1.0", ["pass", "accuracy_error", "pass", "pass"])):
        lane = _run("cpu", release=release, version=release)
        for config, status in zip((a, b, c, d), statuses):
            _store(lane, config, status, version=release)
    gpu_run, evidence = _run("gpu"), _run("cpu")
    for config in (g1, g2, g3):
        _store(gpu_run, config, "accuracy_error")
        _store(evidence, config, "pass")  # a GPU task's CPU evidence: never its verdict
    deleted = _run("gpu")
    for config in (g1, g2):
        _store(deleted, config, "pass")
    moved = make_task(103, configs=[])
    FailingConfig.objects.filter(pk=g3.pk).update(task=moved)  # staff moved it: its verdicts keep their task
    _store(_run("cpu"), g3, "pass")  # judged under its new task
    return {"tasks": [cpu, gpu, moved], "deleted": deleted, "configs": (a, b, c, d)}


def _same_answers(board):
    for task in Task.objects.all():
        for lane in ("cpu", "gpu"):
            assert {c: r.pk for c, r in runs.latest_results(lane=lane, task=task).items()} == old_latest(task, lane)
    new = {t: {c: {r: (cell.run_id, cell.status) for r, cell in row.items() if not cell.inferred}
               for c, row in g.cells.items()} for t, g in releases.release_grids().items()}
    assert new == old_grids()
    for task in board["tasks"]:
        grid = releases.release_grids([task.pk], details=True).get(task.pk)
        assert ({c: {r: (cell.run_id, cell.status) for r, cell in row.items()} for c, row in grid.cells.items()}
                if grid else None) \
            == old_grids([task.pk]).get(task.pk)
    verifications, expected = runs.verifications_in_own_lane(), old_verifications()
    assert verifications.keys() == expected.keys()
    for task_id, rows in expected.items():  # (flakiness is read as before: the same count)
        total = FailingConfig.objects.filter(task_id=task_id).count()
        assert verifications[task_id] == runs._verification(total, rows, verifications[task_id].flaky)


def test_the_table_gives_the_old_readers_answers(board):
    a, b, c, d = board["configs"]
    newest = runs.latest_results(lane="cpu", task=board["tasks"][0])
    assert [newest[x.pk].status for x in (a, b, c, d)] == ["pass", "accuracy_error", "crash", "pass"]
    _same_answers(board)
    # a diagnosis' implied verdict changes a newest verdict's status: the grids read the row's copy
    b = ConfigResult.objects.select_related("task").get(failing_config=b, run__release="", status="accuracy_error",
                                                        run_id=newest[b.pk].run_id)
    assert apply_implied_verdict(b, {"diagnosed": True, "implied_verdict": {"status": "torch_suspect"}})
    assert releases.release_grids()[b.task_id].cells[b.failing_config_id][MAIN].status == "torch_suspect"
    _same_answers(board)
    written = set(LatestResult.objects.values_list("failing_config_id", "task_id", "lane", "release", "version",
                                                   "run_id", "result_id", "status", "exact"))
    assert latest.rebuild() == len(written)  # the data migration's fill writes what store_result wrote
    assert set(LatestResult.objects.values_list("failing_config_id", "task_id", "lane", "release", "version",
                                                "run_id", "result_id", "status", "exact")) == written


def test_a_deleted_run_or_result_gives_the_older_verdict_back(board):
    gpu = board["tasks"][1]
    assert {r.run_id for r in runs.latest_results(lane="gpu", task=gpu).values()} == {board["deleted"].pk}
    latest.delete_runs(TestRun.objects.filter(pk=board["deleted"].pk))
    assert {r.status for r in runs.latest_results(lane="gpu", task=gpu).values()} == {"accuracy_error"}
    c = board["configs"][2]
    latest.delete_results(ConfigResult.objects.filter(failing_config=c, status="crash"))
    assert runs.latest_results(lane="cpu", config_ids=[c.pk])[c.pk].status == "pass"  # the resumed older run's
    _same_answers(board)


# ----------------------------------------------------------------------------- the result counts (flakiness)

def old_flakiness(task_ids=None, main_only=False) -> dict:
    """Flakiness as it was read before the ResultCount rows: every result grouped, in Python, here."""
    found = {}
    results = ConfigResult.objects.filter(run__torch="").select_related("run")
    if main_only:
        results = results.filter(run__release__in=["", main_version()])
    if task_ids is not None:
        results = results.filter(task_id__in=task_ids)
    for r in results:
        key = (r.failing_config_id, r.run.lane, r.run.paddle_version, r.run.paddle_commit)
        found.setdefault(key, {}).setdefault(r.status, 0)
        found[key][r.status] += 1
    return found


def _same_flakiness():
    from tracker.selectors.flakiness import config_flakiness

    for main_only in (False, True):
        new = {key: dict(f.statuses) for key, f in config_flakiness(main_release_only=main_only).items()}
        assert new == old_flakiness(main_only=main_only), main_only
    task = Task.objects.order_by("pk").first()
    assert {k: dict(f.statuses) for k, f in config_flakiness(task_ids=[task.pk]).items()} == old_flakiness([task.pk])


def _counts():
    from tracker.models import ResultCount

    return set(ResultCount.objects.filter(n__gt=0).values_list("failing_config_id", "task_id", "lane", "release",
                                                                 "version", "commit", "status", "n"))


def test_the_counts_give_the_old_flakiness_through_writes_restatus_and_deletes(board):
    _same_flakiness()
    a, b, c, d = board["configs"]
    newest = runs.latest_results(lane="cpu", task=board["tasks"][0])
    b_result = ConfigResult.objects.select_related("task").get(pk=newest[b.pk].pk)
    assert apply_implied_verdict(b_result, {"diagnosed": True, "implied_verdict": {"status": "torch_suspect"}})
    _same_flakiness()  # the count moved from accuracy_error to torch_suspect
    latest.delete_runs(TestRun.objects.filter(pk=board["deleted"].pk))
    latest.delete_results(ConfigResult.objects.filter(failing_config=c, status="crash"))
    _same_flakiness()
    written = _counts()
    latest.rebuild()  # the data migration's fill counts what store_result counted
    assert _counts() == written


def test_a_build_recorded_after_results_were_stored_moves_their_counts(board):
    """An executor records the run's build with an update; results stored before it (a resumed run) are counted
    again under it."""
    from tracker.services.runs.executor import _start

    a = board["configs"][0]
    run = _run("cpu", version="")
    _store(run, a, "pass")
    run = TestRun.objects.get(pk=run.pk)
    _start(run, {"paddle_version": MAIN, "paddle_commit": "c0ffee"}, fan_out=False)
    _same_flakiness()
