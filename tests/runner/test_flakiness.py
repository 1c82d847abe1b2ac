"""Flakiness (issue #47): a config's repeated results on one build that disagree give it a Wilson-lower-bound score,
keep its task from "fix verified", and are listed apart (/flaky, /api/flaky, the task page)."""
import pytest
from django.utils import timezone

from apitester.pool import TimeBudget
from tracker.models import Event, TestRun
from tracker.selectors.flakiness import config_flakiness, flaky_rows, wilson_lower_bound
from tracker.selectors.runs import task_verification, verifications_in_own_lane
from tracker.services.runs import create_run, execute_run, record_run_outcomes, store_result

from .conftest import PASSING, make_task

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}
PASS = {"status": "pass", "exact": True, "max_ulp": 0}
FAIL = {"status": "accuracy_error", "direction": "forward", "max_abs": 1.0, "exact": False, "max_ulp": 9}


def test_wilson_lower_bound_matches_the_published_values():
    assert wilson_lower_bound(0, 5) == 0.0 and wilson_lower_bound(0, 0) == 0.0
    assert wilson_lower_bound(1, 2) == pytest.approx(0.0945, abs=1e-4)
    assert wilson_lower_bound(5, 10) == pytest.approx(0.2366, abs=1e-4)  # the textbook 95 % interval of 5 / 10
    assert wilson_lower_bound(1, 20) < wilson_lower_bound(1, 2)  # more agreeing results: less flaky
    with pytest.raises(ValueError, match="k=3 must be between 0 and n=2"):
        wilson_lower_bound(3, 2)


def _run(task_numbers, release="", version="3.3.1", lane="cpu", commit=""):
    return TestRun.objects.create(scope={"kind": "tasks", "tasks": task_numbers}, lane=lane, release=release,
                                  paddle_version=version, paddle_commit=commit, total=1, state="done",
                                  finished_at=timezone.now())


@pytest.mark.django_db
def test_repeated_results_of_one_build_score_and_block_fix_verified(client):
    steady, wobbly, mended, nightly = (f'paddle.abs(Tensor([{n}],"float32"), )' for n in (3, 4, 5, 6))
    task = make_task(3, "paddle.abs", [steady, wobbly])
    other = make_task(4, "paddle.abs", [mended, nightly])
    config = {c.config: c for c in task.failing_configs.all()} | {c.config: c for c in other.failing_configs.all()}
    # three runs on the main build (a re-run, another host's run, a run with other threads: each one result)
    for verdict in (FAIL, PASS, PASS):  # the first is no fix; each later pass comes with a disagreeing result
        run = _run([3])
        store_result(run, config[steady], PASS, 0.1)
        store_result(run, config[wobbly], verdict, 0.1)
        record_run_outcomes(run)
    # another build is not a repeat: failing on Paddle 3.0.0 and passing on the main build is a fix, not a flake;
    # so is a nightly of the same version with another commit
    store_result(_run([4], release="3.0.0", version="3.0.0"), config[mended], FAIL, 0.1)
    store_result(_run([4]), config[mended], PASS, 0.1)
    store_result(_run([4], commit="aaa"), config[nightly], FAIL, 0.1)
    store_result(_run([4], commit="bbb"), config[nightly], PASS, 0.1)

    scores = config_flakiness()
    flake = scores[(config[wobbly].pk, "cpu", "3.3.1", "")]
    assert (flake.results, flake.disagreeing, flake.usual) == (3, 1, "passing")
    assert flake.score == pytest.approx(wilson_lower_bound(1, 3)) and flake.flaky
    assert not scores[(config[steady].pk, "cpu", "3.3.1", "")].flaky
    assert not scores[(config[mended].pk, "cpu", "3.3.1", "")].flaky
    assert not scores[(config[mended].pk, "cpu", "3.0.0", "")].flaky
    assert not scores[(config[nightly].pk, "cpu", "3.3.1", "aaa")].flaky
    assert not scores[(config[nightly].pk, "cpu", "3.3.1", "bbb")].flaky

    verification = task_verification(task)
    assert verification.kind == "flaky" and verification.flaky == 1
    assert verification.text == "fix not verified: 1 of 2 configs are flaky (their results disagree between runs)"
    assert verifications_in_own_lane()[task.pk].kind == "flaky"  # the board's reader says the same
    assert task_verification(other).kind == "verified"
    assert not Event.objects.filter(task=task, kind="fix_verified").exists()
    assert [row.config for row in flaky_rows()] == [wobbly]

    data = client.get("/api/flaky").json()
    assert data["count"] == 1 and data["configs"][0]["config"] == wobbly
    assert data["configs"][0]["statuses"] == {"pass": 2, "accuracy_error": 1}
    assert client.get("/api/flaky?lane=tpu").json() == {"errors": ["lane='tpu': use one of cpu, gpu"]}
    assert client.get("/api/tasks/3").json()["retest"]["verification"]["flaky"] == 1
    listed = client.get("/flaky").content.decode()
    assert wobbly.replace('"', "&quot;") in listed and steady.replace('"', "&quot;") not in listed
    assert 'id="flaky"' in client.get("/tasks/3").content.decode()
    assert client.get("/flaky?lane=gpu").content.decode().count("<tr data-task") == 0


@pytest.mark.django_db(transaction=True)
def test_a_kernel_that_alternates_run_to_run_is_never_a_verified_fix(extra_specs, tmp_path):
    """paddle.testonly.flaky: each run's fresh worker process takes the next turn; odd turns are wrong by 1."""
    counter = tmp_path / "turns"
    counter.write_text("1")  # the first run fails, the second passes
    flaky = f'paddle.testonly.flaky(x=Tensor([4, 4],"float32"), counter="{counter}", )'
    task = make_task(7, "paddle.testonly.flaky", [flaky, PASSING[0]])

    statuses = []
    for _ in range(2):
        run = create_run("task", tasks=[7], lane="cpu")
        execute_run(run.pk, workers=1, options=FAST)
        statuses.append(run.results.get(failing_config__config=flaky).status)
    assert statuses == ["accuracy_error", "pass"]  # the newest verdict of every config passes ...
    verification = task_verification(task)
    assert verification.kind == "flaky" and verification.flaky == 1  # ... yet no fix is verified
    assert not Event.objects.filter(task=task, kind="fix_verified").exists()
    assert [(row.config, row.flakiness.disagreeing, row.flakiness.results) for row in flaky_rows()] == [(flaky, 1, 2)]


@pytest.mark.django_db
def test_pages_list_the_highest_scores_and_count_the_rest(client, monkeypatch):
    """A year-old board's task page carried 1.57 MB of flaky rows (issue #45): pages list FLAKY_LISTED of them,
    highest scores first, and say how many more there are; /api/flaky still lists every one."""
    from tracker.selectors import flakiness

    configs = [f'paddle.abs(Tensor([{n}],"float32"), )' for n in (3, 4, 5)]
    task = make_task(3, "paddle.abs", configs)
    ordered = list(task.failing_configs.order_by("pk"))
    for turn in range(4):  # the first config disagrees once in 4, the others twice: higher scores
        run = _run([3])
        for index, config in enumerate(ordered):
            store_result(run, config, FAIL if turn < (1 if index == 0 else 2) else PASS, 0.1)
    monkeypatch.setattr(flakiness, "FLAKY_LISTED", 2)
    listing = flakiness.flaky_listing()
    assert [row.config for row in listing["rows"]] == configs[1:] and listing["hidden"] == 1
    for path in ("/tasks/3", "/flaky"):
        page = client.get(path).content.decode()
        assert page.count("<tr data-task") == 2, path
        assert "1 more flaky config with a lower score is not listed" in page, path
    assert client.get("/api/flaky").json()["count"] == 3
