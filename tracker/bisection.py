"""Release bisection, pure (no Django): which releases to probe next for one config, and which cells of its
configs × releases row can be inferred from the releases actually run.

A config's outcome along the releases (oldest first) is assumed to change at most once (a fix or a
regression). Both ends are run first; if they agree, every release between is inferred; if they differ,
the middle of the unresolved gap is probed until the change point sits between two adjacent releases.
Observed outcomes that change more than once contradict the assumption: the config is scanned fully.

Outcomes are opaque values compared with ``==`` (the caller maps statuses to classes: pass, fail, …);
None is an outcome too (ran, but no verdict).
"""
from __future__ import annotations

from dataclasses import dataclass, field


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


def next_probes(releases: list[str], observed: dict) -> Plan:
    """What to run next for one config, given {release: outcome} of the releases run so far."""
    if not releases:
        return Plan([])
    ends = [r for r in dict.fromkeys((releases[0], releases[-1])) if r not in observed]
    if ends:
        return Plan(ends)
    if changes(releases, observed) > 1:
        return Plan([r for r in releases if r not in observed], full_scan=True)
    run = _runs(releases, observed)
    gaps = [(lo, hi) for lo, hi in zip(run, run[1:]) if hi - lo > 1 and observed[releases[lo]] != observed[releases[hi]]]
    probe = [releases[(lo + hi) // 2] for lo, hi in gaps]
    return Plan(probe, infer(releases, observed))
