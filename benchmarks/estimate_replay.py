"""Replay a recorded run's timeline and compare the run page's remaining-time estimate with the truth.

    python benchmarks/estimate_replay.py TIMELINE [--workers 2] [--every 60]

TIMELINE: a JSON file {"workers": W, "configs": [[group, elements, seconds], ...]} (tests/data/
first_start_timeline.json, made from a whole-set run by ``--from-jsonl``), or with ``--from-jsonl RUN.jsonl OUT``
the timeline is written from benchmarks/every_config.py's output (group = the API, an index; no config text).

The replay hands the configs out as the runner does (``apitester.pool.dispatch_order``, grouped by task) to W
workers, each taking the next config as soon as it is free, with each config's recorded seconds; at every
``--every`` seconds it asks ``tracker.estimate.remaining_seconds`` what is left, given only what the page would
know then (the done configs' seconds, the running ones' time so far, the sizes of the rest), and prints the
estimate beside the true remaining time.
"""
from __future__ import annotations

import argparse
import heapq
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apitester.pool import TimeBudget, dispatch_order  # noqa: E402
from tracker.estimate import Done, Left, remaining_seconds  # noqa: E402


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
    """What the page knows at ``now``: done results, running configs with their time so far, the rest by size."""
    budget = TimeBudget()
    done, left = [], []
    for start, end, (group, elements, seconds) in timeline:
        if end <= now:
            done.append(Done(group, elements, seconds))
        else:
            # The page does not know which configs are running, or since when: every one not done is left whole,
            # as tracker.selectors.runs.remaining_estimate sees it.
            left.append(Left(group, elements, cap=budget.for_elements(elements)))
    return done, left


def replay(configs: list[tuple], workers: int, every: float = 60.0) -> list[dict]:
    """One row per checkpoint: {"at", "true", "low", "expected", "high"} (seconds)."""
    timeline = schedule(configs, workers)
    end = max(e for _, e, _ in timeline)
    rows, now = [], every
    while now < end:
        done, left = view_at(timeline, now)
        estimate = remaining_seconds(done, left, workers)
        if estimate is not None:
            rows.append({"at": now, "true": end - now, "low": estimate.low, "expected": estimate.expected,
                         "high": estimate.high})
        now += every
    return rows


def from_jsonl(source: str, out: str, workers: int) -> None:
    groups: dict[str, int] = {}
    configs = []
    for line in Path(source).read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            configs.append([groups.setdefault(row["api"], len(groups)), int(row["elements"]), round(row["seconds"], 3)])
    Path(out).write_text(json.dumps({"workers": workers, "source": "benchmarks/every_config.py run, Paddle 3.3.1",
                                     "configs": configs}, separators=(",", ":")) + "\n")
    print(f"{len(configs)} configs of {len(groups)} APIs -> {out}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--from-jsonl", action="store_true")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--every", type=float, default=60.0)
    args = parser.parse_args()
    if args.from_jsonl:
        from_jsonl(args.timeline, args.out, args.workers or 2)
        return 0
    workers, configs = load_timeline(args.timeline)
    workers = args.workers or workers
    rows = replay(configs, workers, args.every)
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
