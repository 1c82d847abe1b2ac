"""The pure release-bisection planner (tracker.bisection): probes, inferred cells, contradictions → full scan."""
import math

import pytest

from tracker.bisection import infer, next_probes

R = ["3.0.0", "3.1.0", "3.1.1", "3.2.0", "3.2.1", "3.2.2", "3.3.0", "3.3.1"]


def bisect(truth: dict) -> tuple[dict, int]:
    """Run the planner against a known {release: outcome} until it asks for nothing; (observed, rounds)."""
    observed, rounds = {}, 0
    while True:
        plan = next_probes(R, observed)
        if not plan.probe:
            return observed, rounds
        observed.update({r: truth[r] for r in plan.probe})
        rounds += 1


def test_first_round_runs_only_the_two_ends():
    assert next_probes(R, {}).probe == ["3.0.0", "3.3.1"]
    assert next_probes(R, {"3.0.0": "fail"}).probe == ["3.3.1"]
    assert next_probes(["3.3.1"], {}).probe == ["3.3.1"]


@pytest.mark.parametrize("fixed_at", range(1, len(R)))
def test_one_change_point_is_found_with_log2_probes(fixed_at):
    truth = {r: "fail" if i < fixed_at else "pass" for i, r in enumerate(R)}
    observed, _rounds = bisect(truth)
    middle = len(observed) - 2
    assert middle <= math.ceil(math.log2(len(R) - 1))
    # The change point is bracketed by two adjacent run releases, and every other cell is inferred correctly.
    assert R[fixed_at - 1] in observed and R[fixed_at] in observed
    inferred = infer(R, observed)
    assert set(inferred) | set(observed) == set(R) and not set(inferred) & set(observed)
    assert all(truth[source] == truth[r] for r, source in inferred.items())


@pytest.mark.parametrize("outcome", ["pass", "fail"])
def test_same_outcome_at_both_ends_runs_only_the_ends(outcome):
    observed, rounds = bisect({r: outcome for r in R})
    assert sorted(observed) == ["3.0.0", "3.3.1"] and rounds == 1
    plan = next_probes(R, observed)
    assert plan.inferred == {r: "3.0.0" for r in R[1:-1]} and not plan.full_scan


def test_contradicting_probes_scan_every_release():
    # Fails on both ends but the middle passes (fixed, then regressed): two changes, not one.
    assert next_probes(R, {"3.0.0": "fail", "3.3.1": "pass", "3.2.0": "pass"}).full_scan is False
    observed = {"3.0.0": "fail", "3.2.1": "pass", "3.3.1": "fail"}
    plan = next_probes(R, observed)
    assert plan.full_scan and plan.probe == [r for r in R if r not in observed]


def test_a_gap_between_different_outcomes_is_never_inferred():
    assert infer(R, {"3.0.0": "fail", "3.3.1": "pass"}) == {}
    assert infer(R, {"3.0.0": "fail", "3.2.0": "fail", "3.3.1": "pass"}) == {"3.1.0": "3.0.0", "3.1.1": "3.0.0"}
