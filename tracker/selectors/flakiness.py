"""Flakiness (issue #47; docs/board.md#flaky-configs): one config's repeated results on one Paddle build disagree.

Every result of a config in a lane on one build (Paddle version and commit; re-runs, other hosts, other thread counts: each stored verdict is
one observation) is read as its class (passing, failing, no verdict, … — tracker.bisection.outcome, what a release
bisection compares). The config's usual outcome is its most frequent class; the disagreeing results are the others.
The flakiness score is the Wilson lower bound (95 %) of the disagreeing share, the ranking PyTorch's HUD uses for
flaky tests: one disagreement in 2 results scores 0.09, in 20 results 0.009, none 0. A config is flaky when any of
its results disagree (score > 0), and a flaky config never counts toward a verified fix (selectors.runs).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Q, Sum

from ..bisection import outcome
from ..models import FailingConfig, ResultCount, Task
from ..vocab import lane_of
from .envs import main_version

Z_95 = 1.959963984540054  # the normal quantile of a two-sided 95 % interval


def wilson_lower_bound(k: int, n: int, z: float = Z_95) -> float:
    """The lower end of the Wilson score interval of the share k / n (0 when n is 0)."""
    if n <= 0:
        return 0.0
    if not 0 <= k <= n:
        raise ValueError(f"wilson_lower_bound: k={k} must be between 0 and n={n}")
    p = k / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))


@dataclass
class Flakiness:
    config_id: int
    task_id: int
    lane: str
    release: str                                       # the build's Paddle version (the run's)
    commit: str = ""                                   # and its commit: a nightly with a fix is another build
    outcomes: Counter = field(default_factory=Counter)  # class -> results
    statuses: Counter = field(default_factory=Counter)  # status -> results

    @property
    def results(self) -> int:
        return sum(self.outcomes.values())

    @property
    def usual(self) -> str:
        """The most frequent class (ties: the name first in alphabetical order, so the answer is stable)."""
        return min(self.outcomes, key=lambda name: (-self.outcomes[name], name)) if self.outcomes else ""

    @property
    def disagreeing(self) -> int:
        return self.results - (self.outcomes[self.usual] if self.outcomes else 0)

    @property
    def score(self) -> float:
        return wilson_lower_bound(self.disagreeing, self.results)

    @property
    def flaky(self) -> bool:
        return self.disagreeing > 0

    @property
    def status_counts(self) -> list[tuple[str, int]]:
        """(status, results), most frequent first (a template cannot call a Counter's items: it reads a key)."""
        return sorted(self.statuses.items(), key=lambda item: (-item[1], item[0]))

    def as_dict(self) -> dict:
        return {"results": self.results, "disagreeing": self.disagreeing, "score": round(self.score, 4),
                "usual": self.usual, "outcomes": dict(self.outcomes), "statuses": dict(self.statuses),
                "release": self.release, "commit": self.commit, "lane": self.lane}


def config_flakiness(*, task_ids=None, main_release_only: bool = False) -> dict[tuple[int, str, str, str], Flakiness]:
    """(config id, lane, release, commit) -> its Flakiness, over every stored result (of these tasks; of runs on the
    main environment's release only). Read from the results' counts (ResultCount, kept by services.latest): a row per
    (config, lane, build, status), whatever the number of runs. Runs judged against another Torch are not counted:
    a verdict that moves with Torch is drift, not flakiness."""
    qs = ResultCount.objects.all()
    if main_release_only:
        qs = qs.filter(Q(release="") | Q(release=main_version()))
    if task_ids is not None:
        qs = qs.filter(task_id__in=list(task_ids))
    rows = qs.values("failing_config_id", "task_id", "lane", "version", "commit", "status").annotate(
        total=Sum("n")).order_by()
    found: dict[tuple[int, str, str, str], Flakiness] = {}
    for row in rows:
        if not row["total"]:
            continue
        key = (row["failing_config_id"], row["lane"], row["version"], row["commit"])
        item = found.setdefault(key, Flakiness(key[0], row["task_id"], key[1], key[2], key[3]))
        item.outcomes[outcome(row["status"])] += row["total"]
        item.statuses[row["status"]] += row["total"]
    return found


def flaky_configs(*, task_ids=None, own_lane: dict[int, str] | None = None) -> list[Flakiness]:
    """The flaky (config, lane, build)s, highest score first; ``own_lane`` (task id -> its lane) keeps each task's
    own lane only."""
    found = [f for f in config_flakiness(task_ids=task_ids).values() if f.flaky]
    if own_lane is not None:
        found = [f for f in found if f.lane == own_lane.get(f.task_id)]
    return sorted(found, key=lambda f: (-f.score, f.config_id, f.release))


@dataclass
class FlakyRow:
    """One flaky config as the pages list it."""
    flakiness: Flakiness
    task_number: int
    api: str
    config: str


# The flaky rows a page lists, highest scores first (a year-old board's task page carried 1.57 MB of them); the page
# counts the rest, /api/flaky lists them all.
FLAKY_LISTED = 50


def flaky_rows(*, task_ids=None, lane: str | None = None, found: list[Flakiness] | None = None) -> list[FlakyRow]:
    """The flaky configs in their task's own lane (of these tasks; of this lane), highest score first, with their
    task number and config text; ``found``: those flaky configs already read (flaky_configs_in_own_lane)."""
    if found is None:
        found = flaky_configs_in_own_lane(task_ids=task_ids, lane=lane)
    configs = dict(FailingConfig.objects.filter(pk__in={f.config_id for f in found}).values_list("id", "config"))
    tasks = {pk: (number, api) for pk, number, api in
             Task.objects.filter(pk__in={f.task_id for f in found}).values_list("id", "number", "api")}
    return [FlakyRow(f, *tasks[f.task_id], configs.get(f.config_id, "")) for f in found]


def flaky_configs_in_own_lane(*, task_ids=None, lane: str | None = None) -> list[Flakiness]:
    """The flaky (config, lane, build)s in their task's own lane (of these tasks; of this lane), highest score first."""
    own_lane = {task_id: lane_of(kernel) for task_id, kernel in Task.objects.values_list("id", "kernel")}
    return [f for f in flaky_configs(task_ids=task_ids, own_lane=own_lane) if lane is None or f.lane == lane]


def flaky_listing(*, task_ids=None, lane: str | None = None, limit: int | None = None) -> dict:
    """What a page lists: the ``limit`` (FLAKY_LISTED) highest-scored flaky rows (their config texts only are read)
    and how many more there are (``hidden``)."""
    limit = FLAKY_LISTED if limit is None else limit
    found = flaky_configs_in_own_lane(task_ids=task_ids, lane=lane)
    return {"rows": flaky_rows(found=found[:limit]), "hidden": max(0, len(found) - limit), "total": len(found)}
