"""The run page's time left (tracker/estimate.py, selectors.runs.remaining_estimate): costed config by config from
the sizes left and this run's seconds per size — constructed cases of known answer, the selector on a real
database and GET /api/runs/<id>. The replay of a recorded first-start run is tests/runner/test_estimate_replay.py."""
import pytest
from django.utils import timezone

from tracker.estimate import Done, Left, remaining_seconds
from tracker.models import ConfigResult, TestRun
from tracker.selectors.runs import remaining_estimate, run_summary
from tracker.services.runs import create_run

from .conftest import make_task


def _linear(elements: int) -> float:
    return 0.01 + 1e-6 * elements  # a start-up cost and a cost per element, as the engine's


def test_a_run_whose_cost_is_linear_in_size_is_estimated_from_the_sizes_left():
    done = [Done("a", e, _linear(e)) for e in (10, 100, 1000, 20_000, 50_000)]
    left = [Left("a", e) for e in (1_000_000, 2_000_000)]  # bigger than anything done: in proportion to elements
    estimate = remaining_seconds(done, left, workers=1)
    assert estimate.expected == pytest.approx(_linear(1_000_000) + _linear(2_000_000), rel=0.02)
    assert estimate.low <= estimate.expected <= estimate.high and estimate.basis == 5


def test_the_small_configs_left_are_not_costed_at_the_rate_of_the_large_ones_done():
    # Largest first: the big ones are done, and 1,000 tiny ones are left. The rate of the last results
    # (1 config per 2 s) says 2,000 s; what is left costs ~10 s.
    done = [Done("a", 2_000_000, 2.0)] * 5 + [Done("a", 10, 0.01)]
    left = [Left("a", 10)] * 1000
    assert remaining_seconds(done, left, workers=1).expected == pytest.approx(10.0, rel=0.05)


def test_a_costly_task_stays_costly():
    # Two tasks of the same sizes, one 100x dearer per config: each task's own results set its level.
    done = [Done("cheap", e, _linear(e)) for e in (100, 20_000)] + [Done("dear", e, 100 * _linear(e)) for e in (100, 20_000)]
    cheap = remaining_seconds(done, [Left("cheap", 20_000)], workers=1).expected
    dear = remaining_seconds(done, [Left("dear", 20_000)], workers=1).expected
    assert dear / cheap == pytest.approx(100, rel=0.3)


def test_the_runners_caps_bound_a_config():
    done = [Done("a", e, _linear(e)) for e in (10, 20_000, 50_000)]
    assert remaining_seconds(done, [Left("a", 10**12, cap=900.0)], workers=1).expected == 900.0
    assert remaining_seconds(done, [Left("a", 10**12, skipped=True)], workers=1).expected == 0.0


def test_workers_share_the_work_but_not_one_config():
    done = [Done("a", e, _linear(e)) for e in (10, 20_000, 50_000)]
    many = [Left("a", 50_000)] * 8
    assert remaining_seconds(done, many, workers=2).expected == pytest.approx(4 * _linear(50_000), rel=0.05)
    one = [Left("a", 5_000_000)]
    assert remaining_seconds(done, one, workers=4).expected == pytest.approx(_linear(5_000_000), rel=0.05)


def test_nothing_to_stand_on_before_the_first_result_and_nothing_left_at_the_end():
    assert remaining_seconds([], [Left("a", 10)], workers=2) is None
    assert remaining_seconds([Done("a", 10, 0.1)], [], workers=2).expected == 0.0


@pytest.mark.django_db
def test_the_api_says_the_time_left_with_a_range(client, settings):
    settings.RUNNER_WORKERS = 1
    settings.RUNNER_MEMORY_BUDGET_MB = 1024
    configs = [f'paddle.exp(Tensor([{n}],"float32"), )' for n in (10, 100, 20_000, 40_000, 400_000, 800_000)]
    make_task(11, "paddle.exp", configs)
    run = create_run("task", tasks=[11], lane="cpu")
    assert run_summary(run)["eta_seconds"] is None  # queued: nothing measured
    TestRun.objects.filter(pk=run.pk).update(state=TestRun.State.RUNNING, started_at=timezone.now())
    run.refresh_from_db()
    assert remaining_estimate(run) is None  # running, no result yet
    from tracker.models import FailingConfig

    for fc in FailingConfig.objects.filter(config__in=configs[:4]):
        n = int(fc.config.split("[")[1].split("]")[0])
        ConfigResult.objects.create(run=run, failing_config=fc, task=fc.task, status="pass", seconds=_linear(n))
    data = client.get(f"/api/runs/{run.pk}").json()
    expected = _linear(400_000) + _linear(800_000)
    assert data["eta_seconds"] == pytest.approx(expected, rel=0.05)
    low, high = data["eta_range"]
    assert low <= data["eta_seconds"] <= high


def test_the_profile_is_calibrated_by_what_this_run_measured():
    from tracker.estimate import RUN_PRIOR_SECONDS, Profile

    profile = Profile.from_rows([("paddle.add", e, _linear(e)) for e in (100, 20_000, 10**9)]
                                + [("paddle.maximum", e, 20 * _linear(e)) for e in (100, 20_000, 10**9)])
    left = [Left(1, 10**9, "paddle.add"), Left(2, 10**9, "paddle.maximum")]
    # Nothing measured yet that the profile predicts much of: the profile as it is.
    barely = remaining_seconds([Done(1, 100, 2 * _linear(100), "paddle.add")], left, workers=1, profile=profile)
    assert barely.expected == pytest.approx(_linear(10**9) + 20 * _linear(10**9), rel=0.01)
    # This machine is twice as slow as the one that recorded the profile: once it has done far more predicted seconds
    # than RUN_PRIOR_SECONDS, what is left takes about twice as long.
    done = [Done(3, 10**9, 2 * _linear(10**9), "paddle.add")] * 20
    assert 20 * _linear(10**9) > 10 * RUN_PRIOR_SECONDS
    estimate = remaining_seconds(done, left, workers=1, profile=profile)
    assert estimate.expected == pytest.approx(2 * (_linear(10**9) + 20 * _linear(10**9)), rel=0.05)
    # The dear API is costed as the profile says, though only the cheap one was measured.
    only_dear = remaining_seconds(done, left[1:], workers=1, profile=profile)
    assert only_dear.expected == pytest.approx(2 * 20 * _linear(10**9), rel=0.05)
    # An API the profile lacks is costed from this run alone.
    unknown = remaining_seconds(done, [Left(3, 1_000_000, "paddle.new_api")], workers=1, profile=profile)
    assert unknown.expected > 0


def test_a_size_the_profile_has_not_seen_is_costed_from_the_nearest_smaller_size():
    from tracker.estimate import Profile

    profile = Profile.from_rows([("paddle.add", 1000, 0.01), ("paddle.add", 100_000, 1.0)])
    assert profile.predict("paddle.add", 1000) == pytest.approx(0.01)
    assert profile.predict("paddle.add", 2 ** 20) == pytest.approx(1.0 * 2 ** 20 / 2 ** 16.5, rel=1e-6)
    assert profile.predict("paddle.add", 10) == pytest.approx(0.01)  # smaller than any: the smallest bin's
    assert profile.predict("paddle.other", 10) is None


def test_what_a_config_costs_outside_its_worker_is_charged_to_every_config_left():
    """Small configs: 0.01 s in the worker, 0.1 s of wall time each (handing out, storing the verdict). Costed by their
    own seconds alone, 1,000 left would take 10 s; they take 100 s."""
    from tracker.estimate import per_config_overhead

    done = [Done("a", 10, 0.01)] * 100
    assert per_config_overhead(done, workers=1, elapsed=10.0) == pytest.approx(0.09)
    assert per_config_overhead(done, workers=2, elapsed=10.0) == pytest.approx(0.19)
    assert per_config_overhead(done, workers=1, elapsed=0.5) == 0.0  # never negative
    assert per_config_overhead(done, workers=1, elapsed=None) == 0.0
    left = [Left("a", 10)] * 1000
    assert remaining_seconds(done, left, workers=1, overhead=0.09).expected == pytest.approx(100.0, rel=0.05)


@pytest.mark.django_db
def test_the_api_measures_the_overhead_from_when_the_latest_results_were_stored(client, settings):
    from datetime import timedelta

    from tracker.models import FailingConfig

    settings.RUNNER_WORKERS = 1
    configs = [f'paddle.exp(Tensor([{n}],"float32"), )' for n in range(1, 41)]
    make_task(11, "paddle.exp", configs)
    run = create_run("task", tasks=[11], lane="cpu")
    TestRun.objects.filter(pk=run.pk).update(state=TestRun.State.RUNNING, started_at=timezone.now())
    start = timezone.now() - timedelta(minutes=5)
    for i, fc in enumerate(FailingConfig.objects.filter(config__in=configs[:20]).order_by("id")):
        result = ConfigResult.objects.create(run=run, failing_config=fc, task=fc.task, status="pass", seconds=0.01)
        ConfigResult.objects.filter(pk=result.pk).update(created=start + timedelta(seconds=0.1 * (i + 1)))
    # 20 results over 2 s of wall time, 0.01 s each in the worker: the 20 left take about 2 s, not 0.2 s
    assert client.get(f"/api/runs/{run.pk}").json()["eta_seconds"] == pytest.approx(2.0, rel=0.1)


def test_a_config_edited_to_an_absurd_shape_is_costed_not_a_crash():
    """Staff may save a config of 10**30 elements (the staff-form fuzzer did, and the run page answered 500 with
    OverflowError): its elements count as estimate.MAX_ELEMENTS, and the estimate is a finite number of seconds."""
    from tracker.estimate import MAX_ELEMENTS

    done = [Done("t", 10 ** 30, 2.0), Done("t", 20_000, 1.0), Done("t", 10, 0.1)]
    left = [Left("t", 10 ** 30), Left("t", 50_000)]
    assert Done("t", 10 ** 30, 2.0).elements == MAX_ELEMENTS
    estimate = remaining_seconds(done, left, workers=1)
    assert estimate is not None and 0 < estimate.expected < float("inf")
