"""Replay a recorded run's timeline and compare the run page's remaining-time estimate with the truth.

    python benchmarks/estimate_replay.py TIMELINE [--profile P] [--workers 2] [--every 60]
    python benchmarks/estimate_replay.py --timeline-from RUN.jsonl OUT       # a timeline from a whole-set run
    python benchmarks/estimate_replay.py --profile-from RUN.jsonl OUT        # tracker/data/config_costs.json

A timeline is {"workers": W, "configs": [[api, elements, seconds], ...]} — the API, the input elements and the
seconds of each config of a recorded run (benchmarks/every_config.py's output; no config text). A profile is the
per-API cost fit (``tracker.estimate.fit``) of such a run: what the estimate starts from before this run has
measured anything of an API.

The replay hands the configs out as the runner does (``apitester.pool.dispatch_order``, grouped by task — here by
API) to W workers, each taking the next config as soon as it is free, with each config's recorded seconds; every
``--every`` seconds it asks ``tracker.estimate.remaining_seconds`` what is left, given only what the run page knows
then (the done configs' seconds, the sizes and APIs of the rest, the time budget), and prints the estimate beside
the true remaining time. Replay a run that did not make the profile, or the test proves nothing.
"""
from __future__ import annotations

import argparse
import heapq
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apitester.pool import TimeBudget, dispatch_order  # noqa: E402
from tracker.estimate import PROFILE_PATH, Done, Left, Profile, remaining_seconds  # noqa: E402


def load_timeline(path) -> tuple[int, list[tuple]]:
    data = json.loads(Path(path).read_text())
    return int(data["workers"]), [tuple(row) for row in data["configs"]]


def schedule(configs: list[tuple], workers: int) -> list[tuple[float, float, tuple]]:
    """(start, end, config) for each config, handed out in dispatch order to the first free worker."""
    ordered = dispatch_order(configs, size_of=lambda c: c[1], group_of=lambda c: c[0])
    free = [0.0] * workers
    heapq.heapify(free)
    out = []
    for config in ordered:
        start = heapq.heappop(free)
        end = start + config[2]
        out.append((start, end, config))
        heapq.heappush(free, end)
    return out


def view_at(timeline: list[tuple[float, float, tuple]], now: float) -> tuple[list[Done], list[Left]]:
    """What the page knows at ``now``: done results, and every config not done by its size (it does not know which
    are running, or since when: tracker.selectors.runs.remaining_estimate sees the same)."""
    budget = TimeBudget()
    done, left = [], []
    for _, end, (api, elements, seconds) in timeline:
        if end <= now:
            done.append(Done(api, elements, seconds, api))
        else:
            left.append(Left(api, elements, api, cap=budget.for_elements(elements)))
    return done, left


def replay(configs: list[tuple], workers: int, profile: Profile, every: float = 60.0) -> list[dict]:
    """One row per checkpoint: {"at", "true", "low", "expected", "high"} (seconds)."""
    timeline = schedule(configs, workers)
    end = max(e for _, e, _ in timeline)
    rows, now = [], every
    while now < end:
        done, left = view_at(timeline, now)
        estimate = remaining_seconds(done, left, workers, profile)
        if estimate is not None:
            rows.append({"at": now, "true": end - now, "low": estimate.low, "expected": estimate.expected,
                         "high": estimate.high})
        now += every
    return rows


def _rows(source: str):
    for line in Path(source).read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            yield row["api"], int(row["elements"]), round(float(row["seconds"]), 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline", nargs="?")
    parser.add_argument("--timeline-from", nargs=2, metavar=("RUN_JSONL", "OUT"))
    parser.add_argument("--profile-from", nargs=2, metavar=("RUN_JSONL", "OUT"))
    parser.add_argument("--profile", default=str(PROFILE_PATH))
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--every", type=float, default=60.0)
    args = parser.parse_args()
    if args.timeline_from:
        source, out = args.timeline_from
        configs = [list(row) for row in _rows(source)]
        Path(out).write_text(json.dumps({"workers": args.workers or 2, "source": f"benchmarks/every_config.py run",
                                         "configs": configs}, separators=(",", ":")) + "\n")
        print(f"{len(configs)} configs -> {out}")
        return 0
    if args.profile_from:
        source, out = args.profile_from
        profile = Profile.from_rows(_rows(source))
        Path(out).write_text(json.dumps({"bins": "mean seconds of an API's configs by size bin: int(log2(input "
                                                 "elements)) (tracker.estimate.Profile)",
                                         "source": "benchmarks/every_config.py run on Paddle 3.3.1 (CPU), 2 workers, "
                                                   "2-core Intel Xeon",
                                         "apis": profile.as_json()}, separators=(",", ":")) + "\n")
        print(f"{len(profile.apis)} APIs -> {out}")
        return 0
    workers, configs = load_timeline(args.timeline)
    workers = args.workers or workers
    rows = replay(configs, workers, Profile.load(args.profile), args.every)
    worst = 1.0
    for row in rows:
        ratio = row["expected"] / row["true"]
        worst = max(worst, ratio, 1 / ratio)
        print(f"{row['at'] / 60:6.1f} min: true {row['true'] / 60:6.1f} min, estimate {row['expected'] / 60:6.1f} "
              f"({row['low'] / 60:.1f}–{row['high'] / 60:.1f}) min, ratio {ratio:.2f}, "
              f"true in range: {row['low'] <= row['true'] <= row['high']}")
    inside = sum(row["low"] <= row["true"] <= row["high"] for row in rows)
    print(f"{len(configs)} configs, {workers} workers, run {max(r['at'] + r['true'] for r in rows) / 60:.1f} min; "
          f"worst ratio {worst:.2f}; true time inside the range at {inside} of {len(rows)} checkpoints")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
