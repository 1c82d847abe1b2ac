"""Release bisection, pure (no Django): which releases to probe next for one config, and which cells of its
configs × releases row can be inferred from the releases actually run.

A config's outcome along the releases (oldest first) is assumed to change at most once (a fix or a
regression). Both ends are run first; if they agree, every release between is inferred; if they differ,
the middle of the unresolved gap is probed until the change point sits between two adjacent releases.
Observed outcomes that change more than once contradict the assumption: the config is scanned fully.

Outcomes are opaque values compared with ``==``; ``outcome`` maps a verdict status to the one both the matrix
planner (services/runs/matrix.py) and the release grid (selectors/releases.py) compare: its class. None is an
outcome too (ran, but no verdict).

Configs of one task usually change at the same release (one fix lands for all). ``plan_group`` uses that:
while no config of the group has a change point located in the same direction (fail → pass, pass → fail,
…), only the cheapest open config of that direction (the scout) is bisected; once change points are
located, the others probe them first (the releases on both sides
of the hinted change, ≤ 2 runs instead of ~log2 of the gap) and fall back to plain bisection of whatever
gap is left. Hints only order the probes: which cells are inferred is decided by ``infer`` alone, the same
rule with or without hints.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping

from apitester.vocab import status_class


def outcome(status: str) -> str:
    """What bisection compares for a verdict: its class (a fix turns failing into passing, whatever the failure);
    a status outside the vocabulary is its own outcome."""
    try:
        return status_class(status)
    except KeyError:
        return status


@dataclass(frozen=True)
class Plan:
    probe: list[str]  # releases to run next (empty: nothing left to learn)
    inferred: dict[str, str] = field(default_factory=dict)  # release -> the run release its outcome is copied from
    full_scan: bool = False  # the observations contradict one change point


def _runs(releases: list[str], observed: dict) -> list[int]:
    return [i for i, r in enumerate(releases) if r in observed]


def changes(releases: list[str], observed: dict) -> int:
    """How many times the observed outcome changes along the releases."""
    values = [observed[releases[i]] for i in _runs(releases, observed)]
    return sum(1 for a, b in zip(values, values[1:]) if a != b)


def infer(releases: list[str], observed: dict) -> dict[str, str]:
    """Unrun releases between two run releases with the same outcome -> the older of the two (whose outcome
    they take). Under one change point that is all a gap can be; gaps between different outcomes stay open."""
    inferred = {}
    run = _runs(releases, observed)
    for lo, hi in zip(run, run[1:]):
        if observed[releases[lo]] == observed[releases[hi]]:
            inferred.update({releases[i]: releases[lo] for i in range(lo + 1, hi)})
    return inferred


def change_points(releases: list[str], observed: dict) -> list[str]:
    """Releases whose outcome differs from the adjacent older release's, both run: change points located."""
    return [releases[i] for i in range(1, len(releases))
            if releases[i] in observed and releases[i - 1] in observed
            and observed[releases[i]] != observed[releases[i - 1]]]


def _gap_probes(releases: list[str], lo: int, hi: int, hints: Mapping[str, int]) -> list[str]:
    """The probes for one open gap: the two releases around the most hinted change point inside it (those
    not already run), else its middle."""
    inside = [(count, -releases.index(r)) for r, count in hints.items() if r in releases and lo < releases.index(r) <= hi]
    if not inside:
        return [releases[(lo + hi) // 2]]
    at = -max(inside)[1]
    return [releases[i] for i in (at - 1, at) if lo < i < hi]


def next_probes(releases: list[str], observed: dict, hints: Mapping[str, int] | None = None) -> Plan:
    """What to run next for one config, given {release: outcome} of the releases run so far.

    ``hints``: {release: how many sibling configs change there} (change_points of the others), tried first."""
    if not releases:
        return Plan([])
    ends = [r for r in dict.fromkeys((releases[0], releases[-1])) if r not in observed]
    if ends:
        return Plan(ends)
    if changes(releases, observed) > 1:
        return Plan([r for r in releases if r not in observed], full_scan=True)
    run = _runs(releases, observed)
    gaps = [(lo, hi) for lo, hi in zip(run, run[1:]) if hi - lo > 1 and observed[releases[lo]] != observed[releases[hi]]]
    probe = [r for lo, hi in gaps for r in _gap_probes(releases, lo, hi, hints or {})]
    return Plan(probe, infer(releases, observed))


def _direction(releases: list[str], observed: dict) -> tuple:
    """(oldest outcome, newest outcome): which change a config with an open gap is looking for."""
    return observed.get(releases[0]), observed.get(releases[-1])


def plan_group(releases: list[str], observed: Mapping[Hashable, dict],
               cost: Callable[[Hashable], float]) -> dict[Hashable, list[str]]:
    """{config: releases to run next} for one group of configs (a task's) of a bisecting matrix.

    Configs still missing an end, or scanned fully, probe what next_probes says. The rest are bisected
    guided by the change points the group has located in the same direction (fail → pass hints a fix,
    never a regression elsewhere in the task; every config's located changes counted); while a direction
    has none, only its cheapest open config by ``cost`` (ties: the first) probes, and the others wait.
    """
    hints: dict[tuple, Counter] = {}
    for obs in observed.values():
        for release in change_points(releases, obs):
            before = obs[releases[releases.index(release) - 1]]
            hints.setdefault((before, obs[release]), Counter())[release] += 1
    wanted: dict[Hashable, list[str]] = {}
    waiting: dict[tuple, list] = {}
    for key, obs in observed.items():
        plain = next_probes(releases, obs)
        if not plain.probe:
            continue
        if plain.full_scan or any(r not in obs for r in dict.fromkeys((releases[0], releases[-1]))):
            wanted[key] = plain.probe
            continue
        direction = _direction(releases, obs)
        if direction in hints:
            wanted[key] = next_probes(releases, obs, hints[direction]).probe
        else:
            waiting.setdefault(direction, []).append(key)
    for keys in waiting.values():
        scout = min(enumerate(keys), key=lambda item: (cost(item[1]), item[0]))[1]
        wanted[scout] = next_probes(releases, observed[scout]).probe
    return wanted
