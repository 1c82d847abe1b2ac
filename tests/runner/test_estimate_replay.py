"""The run page's time left on a replayed whole-set run (issue 37 item 6): within a factor of 1.5 of the true time
left from the first minute on.

tests/data/first_start_timeline.json is a recorded run that did NOT make the cost profile the estimate starts from
(tracker/data/config_costs.json comes from an earlier run, on another day's load): every CPU-task config of the
reports with its API, input elements and seconds (no config text), `benchmarks/every_config.py run` then
`benchmarks/estimate_replay.py --timeline-from`. The replay hands the configs to two workers in the runner's
dispatch order and asks the estimate, each minute, what the run page would (benchmarks/estimate_replay.py)."""
import json
from pathlib import Path

from benchmarks.estimate_replay import load_timeline, replay, schedule
from tracker.estimate import PROFILE_PATH, Profile

TIMELINE = Path(__file__).resolve().parents[1] / "data" / "first_start_timeline.json"


def test_the_estimate_is_within_1_5x_of_the_true_time_left_from_the_first_minute():
    workers, configs = load_timeline(TIMELINE)
    assert len(configs) > 3000 and workers == 2
    rows = replay(configs, workers, Profile.load(PROFILE_PATH), every=60.0)
    assert rows[0]["at"] == 60.0 and len(rows) >= 20  # every minute of a run of tens of minutes
    ratios = [row["expected"] / row["true"] for row in rows]
    off = [(row["at"] / 60, round(r, 2)) for row, r in zip(rows, ratios) if not 1 / 1.5 <= r <= 1.5]
    assert off == [], f"minutes where the estimate is off by more than 1.5x: {off}"
    for row in rows:
        assert row["low"] <= row["expected"] <= row["high"]


def test_the_last_minutes_rate_was_far_off_on_the_same_replay():
    """What the page said before: the configs left divided by the rate of the last minute's results."""
    workers, configs = load_timeline(TIMELINE)
    timeline = schedule(configs, workers)
    end = max(e for _, e, _ in timeline)
    worst = 1.0
    for now in range(120, int(end), 60):
        recent = [1 for _, e, _ in timeline if now - 60 < e <= now]
        left = sum(1 for _, e, _ in timeline if e > now)
        if recent:
            ratio = (left / (len(recent) / 60.0)) / (end - now)
            worst = max(worst, ratio, 1 / ratio)
    assert worst > 3  # the old estimate was off by more than 3x somewhere on this very run


def test_the_profile_is_the_committed_one_and_covers_every_api_of_the_timeline():
    profile = json.loads(PROFILE_PATH.read_text())
    _, configs = load_timeline(TIMELINE)
    assert {api for api, _, _ in configs} <= set(profile["apis"])
