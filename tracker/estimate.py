"""How long a run has left, from what is left in it (plain Python: no Django, tested on a replayed run).

The old estimate divided the configs left by the rate of the last minute. The runner hands each task's smallest
config out first and then the rest largest first (``apitester.pool.dispatch_order``), so at minute 8 of the first
start the last minute's rate was that of the largest configs, and "6.4 hours to go" was said of a run that ended
30 minutes later. Here each config left is costed by its own size and API, as ``overhead + per_element x
elements``:

* **a cost profile per API** (``Profile``: tracker/data/config_costs.json, made by ``benchmarks/estimate_replay.py
  --profile`` from a recorded whole-set run): an API's configs cost alike per element, and APIs differ a
  hundredfold (a minimum/maximum backward costs ~15x a sum per element, a deform_conv2d ~300x). Nothing in the
  first minute of a run can tell that: its results are each task's smallest config and the very largest ones;
* **calibrated by this run**: the seconds measured so far against what the profile predicts for the same configs
  (this machine, its load, this release) — one factor for the run, weighed in as its predicted seconds done grow
  (``RUN_PRIOR_SECONDS``);
* **measured in this run alone** where the profile has no entry (a new API): the task's own overhead and cost per
  element, else the other tasks' (their upper quartile);
* **the runner's caps**: a config never costs more than its time budget (it is cut there) and a config over the
  memory budget costs nothing (it is skipped at once).

The work left is divided among the workers, and the run cannot end before its longest single config does. The
range: the run's factor from the lower and upper quartiles of the done configs' measured/predicted ratios.

A config also costs the run time outside its worker (handing it out, storing its verdict): nothing beside a
second-long config, most of the wall time of a run of small ones (the GPU tasks' CPU evidence up to 1e5 elements:
0.03 s in the worker, ~0.13 s of wall time each, and the page said 2 minutes left of 25). Given the wall time the
done results span (``elapsed``), that overhead is measured -- the worker-seconds the span held beyond the results'
own seconds, per result, over the run's latest results (a run that waited for a worker between two results is
not charged for the wait) -- and charged to every config left.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Hashable, Iterable, Sequence

# Configs up to this many input elements cost the start-up of a call (the overhead); over LINEAR_FROM their cost
# per element is what the slope is measured from.
OVERHEAD_UP_TO = 1024
LINEAR_FROM = 10_000
# A config costs at least this (a verdict is never free).
MIN_SECONDS = 1e-3
# The run's own factor counts as much as the profile's 1.0 once this many of its predicted seconds are done.
RUN_PRIOR_SECONDS = 600.0
PROFILE_PATH = Path(__file__).resolve().parent / "data" / "config_costs.json"
# A config's elements are read from its text, which staff may edit to any shape: past this (no config could be
# allocated anyway) they count as this many, so sums and ratios stay floats instead of raising OverflowError.
MAX_ELEMENTS = 1 << 62


def _bounded(elements: int) -> int:
    return min(max(0, int(elements)), MAX_ELEMENTS)


@dataclass(frozen=True)
class Done:
    group: Hashable  # the task
    elements: int
    seconds: float
    api: str = ""  # the profile's key

    def __post_init__(self):
        object.__setattr__(self, "elements", _bounded(self.elements))


@dataclass(frozen=True)
class Left:
    group: Hashable
    elements: int
    api: str = ""
    cap: float | None = None  # the config's time budget (it is cut there); None: no cap
    skipped: bool = False  # over the memory budget: the runner skips it at once

    def __post_init__(self):
        object.__setattr__(self, "elements", _bounded(self.elements))


@dataclass(frozen=True)
class Estimate:
    low: float
    expected: float
    high: float
    basis: int  # how many done results it stands on

    def as_dict(self) -> dict:
        return {"low": round(self.low, 1), "expected": round(self.expected, 1), "high": round(self.high, 1),
                "basis": self.basis}


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    lo, hi = math.floor(position), math.ceil(position)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo)


def fit(rows: Iterable[tuple[int, float]]) -> tuple[float, float]:
    """(overhead, per_element) of one API's (elements, seconds): the median seconds of its configs of at most
    OVERHEAD_UP_TO elements (else its fastest config's), and the sum of the larger configs' seconds over the overhead
    divided by their elements (a ratio: what sums of costs need, not a typical config's)."""
    rows = list(rows)
    small = [t for e, t in rows if e <= OVERHEAD_UP_TO]
    overhead = max(MIN_SECONDS, median(small) if small else min((t for _, t in rows), default=MIN_SECONDS))
    large = [(e, t) for e, t in rows if e > LINEAR_FROM]
    per_element = sum(max(0.0, t - overhead) for _, t in large) / sum(e for e, _ in large) if large else 0.0
    return overhead, per_element


def size_bin(elements: int) -> int:
    """Configs are compared with configs of their API of about their size: a power of two of input elements."""
    return int(math.log2(max(1, elements)))


@dataclass
class Profile:
    """What a config of each API costs by its size, on the run that recorded it: the mean seconds of the API's
    configs in each size bin (a power of two of input elements). An API's cost is far from proportional to size (a
    minimum/maximum of 8e5 elements took 13 s, one of 1.3e7 took 10 s: broadcast and reduction shapes matter), so a
    fit over all sizes mis-costs the middle; a bin without a config of the API takes its nearest smaller bin's, in
    proportion to elements, or its nearest larger bin's."""

    apis: dict[str, dict[int, float]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path = PROFILE_PATH) -> "Profile":
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            return cls()  # no profile: the run's own measurements alone
        return cls({api: {int(b): float(t) for b, t in bins.items()} for api, bins in data.get("apis", {}).items()})

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, int, float]]) -> "Profile":
        sums: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        for api, elements, seconds in rows:
            sums[api][size_bin(int(elements))].append(max(MIN_SECONDS, float(seconds)))
        return cls({api: {b: sum(ts) / len(ts) for b, ts in sorted(bins.items())} for api, bins in sums.items()})

    def as_json(self) -> dict:
        return {api: {str(b): round(t, 4) for b, t in bins.items()} for api, bins in sorted(self.apis.items())}

    def predict(self, api: str, elements: int) -> float | None:
        bins = self.apis.get(api)
        if not bins:
            return None
        b = size_bin(elements)
        if b in bins:
            return bins[b]
        lower = [k for k in bins if k < b]
        if lower:
            k = max(lower)
            return bins[k] * max(1.0, elements / 2 ** (k + 0.5))
        return bins[min(bins)]


class InRun:
    """Costs from this run's results alone (an API the profile lacks): the task's own fit, else the run's overhead
    and the upper quartile of the other tasks' costs per element."""

    def __init__(self, done: Sequence[Done]):
        by_task: dict[Hashable, list[tuple[int, float]]] = defaultdict(list)
        for d in done:
            by_task[d.group].append((d.elements, d.seconds))
        self.fits = {g: fit(rows) for g, rows in by_task.items()}
        small = [d.seconds for d in done if d.elements <= OVERHEAD_UP_TO]
        self.overhead = max(MIN_SECONDS, median(small)) if small else MIN_SECONDS
        rates = [r for g, (_, r) in self.fits.items() if any(e > LINEAR_FROM for e, _ in by_task[g])]
        self.rate = _quantile(rates, 0.75) if rates else 0.0
        self.has_rate = {g for g, rows in by_task.items() if any(e > LINEAR_FROM for e, _ in rows)}

    def __call__(self, group: Hashable, elements: int) -> float:
        overhead, rate = self.fits.get(group, (self.overhead, self.rate))
        if group not in self.has_rate:
            rate = self.rate
        return max(MIN_SECONDS, overhead + rate * max(0, elements))


class Costs:
    """The expected seconds of each config left: the profile's prediction times the run's factor, else InRun."""

    def __init__(self, done: Sequence[Done], profile: Profile, run_factor_quantile: float | None = None):
        self.profile, self.in_run = profile, InRun(done)
        measured = predicted = 0.0
        ratios = []
        for d in done:
            p = profile.predict(d.api, d.elements)
            if p is not None:
                measured += d.seconds
                predicted += p
                ratios.append(max(MIN_SECONDS, d.seconds) / p)
        # This run's measured seconds over the profile's for the same configs (this machine, its load, this release),
        # weighed in as the predicted seconds done grow: the runner hands out the largest configs early, and one
        # API's configs of one size differ severalfold by shape, so a few large ones must not set it alone. No factor
        # per task, for the same reason: on a held-out half of a run, task factors made the estimate worse.
        self.run_factor = (measured + RUN_PRIOR_SECONDS) / (predicted + RUN_PRIOR_SECONDS)
        if run_factor_quantile is not None and ratios:
            # the range: the run's factor moved as the ratios' quartile is from their median
            self.run_factor *= _quantile(ratios, run_factor_quantile) / median(ratios)

    def __call__(self, item: Left) -> float:
        if item.skipped:
            return 0.0
        p = self.profile.predict(item.api, item.elements)
        cost = self.in_run(item.group, item.elements) if p is None else p * self.run_factor
        return min(cost, item.cap) if item.cap is not None else cost


def _wall(costs: list[float], workers: int) -> float:
    if not costs:
        return 0.0
    return max(sum(costs) / max(1, workers), max(costs))


def per_config_overhead(done: Sequence[Done], workers: int, elapsed: float | None) -> float:
    """The seconds of a worker's time each done result took beyond its own (handing out, storing): the worker-seconds
    ``elapsed`` (the wall time from the first result's start to the last one's end) held, less the results' seconds,
    per result; 0 without a span."""
    if not elapsed or not done:
        return 0.0
    return max(0.0, elapsed * max(1, workers) - sum(d.seconds for d in done)) / len(done)


def remaining_seconds(done: Iterable[Done], left: Iterable[Left], workers: int,
                      profile: Profile | None = None, overhead: float = 0.0) -> Estimate | None:
    """The seconds the run still needs (low, expected, high), or None before any result (nothing to stand on).
    ``overhead``: what each config left costs beyond its own seconds (``per_config_overhead``)."""
    done, left = list(done), list(left)
    if not left:
        return Estimate(0.0, 0.0, 0.0, len(done))
    if not done:
        return None
    profile = profile if profile is not None else Profile()
    low, expected, high = (_wall([costs(item) + overhead for item in left], workers)
                           for costs in (Costs(done, profile, 0.25), Costs(done, profile), Costs(done, profile, 0.75)))
    return Estimate(min(low, expected), expected, max(high, expected), len(done))


__all__ = ["Costs", "Done", "Estimate", "InRun", "Left", "Profile", "fit", "per_config_overhead", "remaining_seconds"]
