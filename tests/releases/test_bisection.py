"""The pure release-bisection planner (tracker.bisection): probes, inferred cells, contradictions → full scan."""
import math

import pytest

from tracker.bisection import change_points, infer, next_probes, plan_group

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


# ---- a task's configs bisected together: a scout first, the others guided by the change points found

def bisect_group(truths: dict, cost=lambda key: 0) -> tuple[dict, int]:
    """Run plan_group over a group {config: truth} until it asks for nothing; (observed per config, runs)."""
    observed = {key: {} for key in truths}
    runs = 0
    while plan := plan_group(R, observed, cost):
        for key, probes in plan.items():
            observed[key].update({r: truths[key][r] for r in probes})
            runs += len(probes)
    return observed, runs


def truth_fixed_at(index: int) -> dict:
    return {r: "fail" if i < index else "pass" for i, r in enumerate(R)}


def plain_runs(truth: dict) -> int:
    observed, _ = bisect(truth)
    return len(observed)


def assert_located(truth: dict, observed: dict):
    """Every cell is run or inferred, and each inferred cell is the truth (one change point)."""
    inferred = infer(R, observed)
    assert set(inferred) | set(observed) == set(R)
    assert all(truth[source] == truth[r] for r, source in inferred.items())
    assert all(truth[r] == outcome for r, outcome in observed.items())


@pytest.mark.parametrize("fixed_at", range(1, len(R)))
def test_a_task_fixed_at_one_release_runs_fewer_probes_than_bisecting_each_config(fixed_at):
    truths = {f"config {i}": truth_fixed_at(fixed_at) for i in range(6)}
    costs = {"config 0": 9, "config 1": 9, "config 2": 1, "config 3": 9, "config 4": 9, "config 5": 9}
    first = plan_group(R, {key: {} for key in truths}, costs.get)
    assert all(probes == ["3.0.0", "3.3.1"] for probes in first.values())  # round 1: every config's ends
    ends = {key: {r: truths[key][r] for r in ("3.0.0", "3.3.1")} for key in truths}
    assert list(plan_group(R, ends, costs.get)) == ["config 2"]  # no change point known: the cheapest scouts
    observed, runs = bisect_group(truths, costs.get)
    for key, truth in truths.items():
        assert_located(truth, observed[key])
    plain = sum(plain_runs(t) for t in truths.values())
    # the five guided configs take one or two probes each, never more than plain bisection
    assert runs <= plain and runs <= 6 * 2 + plain_runs(truths["config 2"]) - 2 + 5 * 2
    if fixed_at in (1, len(R) - 1) or plain_runs(truth_fixed_at(fixed_at)) - 2 > 2:
        assert runs < plain


def test_configs_of_one_task_that_change_at_different_releases_are_each_located():
    truths = {"a": truth_fixed_at(1), "b": truth_fixed_at(5), "c": truth_fixed_at(3),
              "d": {r: "pass" for r in R}, "e": truth_fixed_at(1)}
    observed, _runs = bisect_group(truths, cost={"a": 1, "b": 2, "c": 3, "d": 0, "e": 4}.get)
    for key, truth in truths.items():
        assert_located(truth, observed[key])
    assert sorted(observed["d"]) == ["3.0.0", "3.3.1"]  # agreeing ends: nothing to bisect, never a scout


def test_a_contradicting_config_is_scanned_fully_at_once_and_its_change_points_become_hints():
    flaky = {r: "fail" for r in R} | {"3.2.0": "pass"}  # fixed in 3.2.0, broken again in 3.2.1
    observed = {"flaky": {"3.0.0": "fail", "3.2.0": "pass", "3.3.1": "fail"},
                "other": {"3.0.0": "fail", "3.3.1": "pass"}, "third": {"3.0.0": "fail", "3.3.1": "pass"}}
    plan = plan_group(R, observed, cost={"flaky": 0, "other": 1, "third": 2}.get)
    # the full scan at once; of the configs with an open gap only the cheapest scouts (no change point yet)
    assert plan == {"flaky": [r for r in R if r not in observed["flaky"]], "other": ["3.2.0"]}
    observed["flaky"].update({r: flaky[r] for r in plan["flaky"]})
    assert change_points(R, observed["flaky"]) == ["3.2.0", "3.2.1"]
    observed["other"]["3.2.0"] = "fail"
    # the fix hint is 3.2.0 (3.2.1 is pass -> fail: a regression, no hint for a fix).
    # third (whole range) probes both sides of 3.2.0 in one round; other's gap is now (3.2.0, 3.3.1], where
    # no fix was located: its middle
    assert plan_group(R, observed, cost=lambda key: 0) == {"other": ["3.2.2"], "third": ["3.1.1", "3.2.0"]}


def test_a_hint_outside_a_configs_gap_falls_back_to_the_middle():
    observed = {"3.0.0": "fail", "3.2.0": "fail", "3.3.1": "pass"}
    assert next_probes(R, observed, hints={"3.1.0": 5}).probe == ["3.2.2"]  # (3 + 7) // 2
    assert next_probes(R, observed, hints={"3.1.0": 5, "3.3.0": 1}).probe == ["3.2.2", "3.3.0"]
    assert next_probes(R, observed, hints={"3.3.1": 2}).probe == ["3.3.0"]  # at the gap's end: one probe


def test_a_change_in_the_other_direction_is_no_hint_for_a_fix():
    # No.57 paddle.sum on the real matrix: one config regressed at 3.3.0 (pass -> fail) while 634 were
    # fixed at 3.1.0; the regression is no hint for the fixes (it cost them two wasted probes each).
    regressed = {r: "pass" for r in R} | {"3.3.0": "fail", "3.3.1": "fail"}
    fixed = truth_fixed_at(1)
    observed = {"regressed": dict(regressed), "fixed 1": {"3.0.0": "fail", "3.3.1": "pass"},
                "fixed 2": {"3.0.0": "fail", "3.3.1": "pass"}}
    assert plan_group(R, observed, cost={"regressed": 0, "fixed 1": 2, "fixed 2": 1}.get) == {"fixed 2": ["3.2.0"]}
    observed["fixed 2"].update({"3.2.0": "pass", "3.1.0": "pass"})
    assert plan_group(R, observed, cost=lambda key: 0) == {"fixed 1": ["3.1.0"]}  # the fix's change point
    truths = {"regressed": regressed, "fixed 1": fixed, "fixed 2": fixed, "fixed 3": fixed}
    located, runs = bisect_group(truths, cost={"regressed": 0, "fixed 1": 3, "fixed 2": 1, "fixed 3": 2}.get)
    for key, truth in truths.items():
        assert_located(truth, located[key])
    # ends 8, the regression's bisection 3, the fix scout 2, the other fixes 1 each
    assert runs == 8 + 3 + 2 + 2
