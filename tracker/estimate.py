"""How long a run has left, from what is left in it (plain Python: no Django, tested on a replayed run).

The old estimate divided the configs left by the rate of the last minute. The runner hands each task's smallest
config out first and then the rest largest first (``apitester.pool.dispatch_order``), so at minute 8 of the first
start the last minute's rate was that of the largest configs, and "6.4 hours to go" was said of a run that ended
30 minutes later. Here each config left is costed by its own size:

* **a time-per-size curve from this run**: the done configs' seconds, binned by input elements (powers of two),
  the median and the quartiles of each bin, interpolated in log-log between bins; past the largest bin with
  results, time grows in proportion to elements (the engine's cost is per element at large sizes; the
  smallest bins' times are start-up costs and say nothing about slope);
* **a factor per task**: a task's done configs against that curve (median ratio, pulled towards 1 while it has
  few), since one API's configs cost alike (a deform_conv2d config costs ~100x a same-size add);
* **the runner's own caps**: a config never costs more than its time budget (``TimeBudget``: it is cut there)
  and a config over the memory budget costs nothing (it is skipped).

The work left (configs not started, and what the ones in flight still need) is divided among the workers, and
the run cannot end before its longest single config does. A range comes from the curve's quartiles instead of
its medians.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from statistics import median
from typing import Hashable, Iterable, Sequence

# Configs up to this many input elements cost the start-up of a call (the overhead); over LINEAR_FROM their cost
# per element is what the slope is measured from.
OVERHEAD_UP_TO = 1024
LINEAR_FROM = 10_000
# A config costs at least this (a verdict is never free).
MIN_SECONDS = 1e-3
# How many of a task's done configs nearest in size stand for one of its configs left.
NEAREST = 5


@dataclass(frozen=True)
class Done:
    group: Hashable  # the task
    elements: int
    seconds: float


@dataclass(frozen=True)
class Left:
    group: Hashable
    elements: int
    running_for: float | None = None  # seconds it has been running, None when not started
    cap: float | None = None  # the config's time budget (it is cut there); None: no cap
    skipped: bool = False  # over the memory budget: the runner skips it at once


@dataclass(frozen=True)
class Estimate:
    low: float
    expected: float
    high: float
    basis: int  # how many done results the curve stands on

    def as_dict(self) -> dict:
        return {"low": round(self.low, 1), "expected": round(self.expected, 1), "high": round(self.high, 1),
                "basis": self.basis}


class Shape:
    """How a config's cost grows with its input elements, in this run: ``overhead + per_element * elements``.

    ``overhead``: the median seconds of the configs of at most OVERHEAD_UP_TO elements; ``per_element``: a quantile of
    (seconds - overhead) / elements over the configs of more than LINEAR_FROM elements (the median for the expected
    time, the quartiles for the range). Used as a ratio only: a task's own results fix its level."""

    def __init__(self, done: Sequence[Done], quantile: float):
        small = [d.seconds for d in done if d.elements <= OVERHEAD_UP_TO]
        self.overhead = max(MIN_SECONDS, median(small)) if small else MIN_SECONDS
        slopes = [max(0.0, d.seconds - self.overhead) / d.elements for d in done if d.elements > LINEAR_FROM]
        self.per_element = _quantile(slopes, quantile) if slopes else 0.0

    def __call__(self, elements: int) -> float:
        return self.overhead + self.per_element * max(0, elements)


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    lo, hi = math.floor(position), math.ceil(position)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo)


class TaskCosts:
    """A config's expected seconds: its task's done configs nearest in size, scaled along the run's Shape; a task
    with no result yet is costed by every done config nearest in size (the run's typical task)."""

    def __init__(self, done: Sequence[Done], shape: Shape):
        self.shape = shape
        self.by_task: dict[Hashable, list[Done]] = defaultdict(list)
        for item in done:
            self.by_task[item.group].append(item)
        self.everyone = list(done)

    def __call__(self, group: Hashable, elements: int) -> float:
        own = self.by_task.get(group) or self.everyone
        x = math.log(max(1, elements))
        nearest = sorted(own, key=lambda d: abs(math.log(max(1, d.elements)) - x))[:NEAREST]
        scaled = [max(MIN_SECONDS, d.seconds) * self.shape(elements) / self.shape(d.elements) for d in nearest]
        return max(MIN_SECONDS, sum(scaled) / len(scaled))  # the mean: a sum of costs is what is wanted


def _cost(item: Left, costs: TaskCosts) -> float:
    if item.skipped:
        return 0.0
    cost = costs(item.group, item.elements)
    if item.cap is not None:
        cost = min(cost, item.cap)
    if item.running_for is not None:
        # In flight: what it still needs; one that has outlived its estimate is given as long again as it ran.
        cost = cost - item.running_for if cost > item.running_for else max(item.running_for, MIN_SECONDS)
        if item.cap is not None:
            cost = min(cost, max(0.0, item.cap - item.running_for))
    return cost


def _wall(costs: list[float], workers: int) -> float:
    if not costs:
        return 0.0
    return max(sum(costs) / max(1, workers), max(costs))


def remaining_seconds(done: Iterable[Done], left: Iterable[Left], workers: int) -> Estimate | None:
    """The seconds the run still needs (low, expected, high), or None before any result (nothing to stand on)."""
    done, left = list(done), list(left)
    if not left:
        return Estimate(0.0, 0.0, 0.0, len(done))
    if not done:
        return None
    walls = [_wall([_cost(item, TaskCosts(done, Shape(done, quantile))) for item in left], workers)
             for quantile in (0.25, 0.5, 0.75)]
    low, expected, high = sorted(walls)
    return Estimate(low, expected, high, len(done))


__all__ = ["Done", "Estimate", "Left", "Shape", "TaskCosts", "remaining_seconds"]
