"""The "fixed in / partly / regressed / never" answer, computed from synthetic configs × releases grids."""
from tracker.selectors.releases import describe, fixed_in, regressed_in

R = ["3.0.0", "3.1.0", "3.2.0", "3.3.1"]


def grid(*rows):
    """rows of statuses, one per config, aligned with R ('' = not tested on that release)."""
    return {i: {r: s for r, s in zip(R, row) if s} for i, row in enumerate(rows)}


def test_fixed_in_the_first_release_of_the_final_all_pass_stretch():
    g = grid(*[["accuracy_error", "pass", "pass", "pass"]] * 8)
    answer = fixed_in(g)
    assert (answer.kind, answer.release, answer.before, answer.failing_before) == ("fixed", "3.1.0", "3.0.0", 8)
    assert describe(answer) == "fixed in Paddle 3.1.0 (all 8 configs pass from 3.1.0 on; 8 fail on 3.0.0)"


def test_releases_are_ordered_by_version_not_by_text_or_insertion():
    g = {1: {"3.10.0": "pass", "3.2.0": "crash", "3.9.0": "pass"}}
    assert fixed_in(g).release == "3.9.0"


def test_partly_fixed_counts_the_newest_release():
    g = grid(*([["accuracy_error"] * 3 + ["pass"]] * 5 + [["accuracy_error"] * 4] * 3))
    answer = fixed_in(g)
    assert (answer.kind, answer.passing_latest, answer.judged_latest, answer.latest) == ("partly_fixed", 5, 8, "3.3.1")
    assert describe(answer) == "partly fixed: 5 of 8 pass on 3.3.1"


def test_failing_everywhere():
    answer = fixed_in(grid(["accuracy_error", "paddle_error", "crash", "timeout"]))
    assert answer.kind == "never"
    assert describe(answer).startswith("failing on every release tested")


def test_regressed_names_the_release_that_broke_it():
    g = grid(["pass", "pass", "accuracy_error", "accuracy_error"], ["pass", "pass", "pass", "pass"])
    answer = fixed_in(g)
    assert (answer.kind, answer.release, answer.before) == ("regressed", "3.2.0", "3.1.0")
    assert describe(answer).startswith("regressed in 3.2.0")


def test_fixed_after_a_regression_is_fixed_from_the_last_stretch():
    answer = fixed_in(grid(["accuracy_error", "pass", "crash", "pass"]))
    assert (answer.kind, answer.release, answer.before) == ("fixed", "3.3.1", "3.2.0")


def test_engine_gaps_say_nothing_about_a_release():
    # An unsupported verdict neither passes nor fails: the 3.3.1 column judges only the other config.
    g = grid(["accuracy_error", "", "", "unsupported"], ["accuracy_error", "", "", "pass"])
    answer = fixed_in(g)
    assert (answer.kind, answer.release, answer.judged_latest) == ("fixed", "3.3.1", 1)


def test_passing_everywhere_and_untested():
    assert fixed_in(grid(["pass", "pass", "", "pass"])).kind == "passing"
    assert fixed_in(grid(["unsupported", "skipped_too_large", "", ""])).kind == "untested"
    assert fixed_in({}).kind == "untested"


def test_only_the_strict_pass_counts_as_passing():
    # flaky_crash on the newest release is a failure (tracker.vocab), so nothing is fixed yet.
    assert fixed_in(grid(["accuracy_error", "", "", "flaky_crash"])).kind == "never"


def test_a_status_that_is_not_a_strict_pass_keeps_a_task_from_being_fixed():
    # e.g. a documented difference: Paddle still differs from the plain Torch call on the newest release.
    answer = fixed_in(grid(["accuracy_error", "", "", "pass"], ["accuracy_error", "", "", "documented_difference"]))
    assert (answer.kind, answer.passing_latest, answer.judged_latest) == ("partly_fixed", 1, 2)


def test_a_documented_difference_after_a_pass_is_no_regression_as_between_runs():
    # regressed_in (between releases) reads passes and failures only, like selectors.runs.regressions.
    g = grid(["pass", "pass", "documented_difference", "documented_difference"], ["pass"] * 4)
    assert regressed_in(g, R) is None
    answer = fixed_in(g)
    assert (answer.kind, answer.passing_latest, answer.judged_latest) == ("partly_fixed", 1, 2)
    # A documented difference between the pass and the failure neither makes nor hides the step.
    g = grid(["pass", "documented_difference", "accuracy_error", "accuracy_error"])
    assert regressed_in(g, R) == ("3.2.0", "3.1.0")
    assert fixed_in(g).kind == "regressed"


def test_only_documented_differences_on_the_newest_release_differ_and_do_not_fail():
    answer = fixed_in(grid(["accuracy_error", "", "", "documented_difference"], ["", "", "", "torch_suspect"]))
    assert (answer.kind, answer.judged_latest, answer.passing_latest) == ("differs_on_latest", 2, 0)
    assert describe(answer).startswith("differs from Torch on 3.3.1")


def test_inferred_cells_count_and_the_line_names_the_releases_actually_run():
    releases = ["3.0.0", "3.1.0", "3.1.1", "3.2.0", "3.3.0", "3.3.1"]
    run = {1: {"3.0.0": "accuracy_error", "3.1.0": "pass", "3.3.1": "pass"}}
    inferred = {1: {"3.1.1": "pass", "3.2.0": "pass", "3.3.0": "pass"}}
    answer = fixed_in(run, inferred)
    assert (answer.kind, answer.release, answer.releases, answer.not_run) == (
        "fixed", "3.1.0", releases, ["3.1.1", "3.2.0", "3.3.0"])
    assert describe(answer) == "fixed in Paddle 3.1.0: fails on 3.0.0, passes on 3.1.0 and 3.3.1; 3.1.1–3.3.0 not run"
    # Without them the same run cells read the same release, and nothing is "not run".
    assert fixed_in(run).not_run == [] and fixed_in(run).release == "3.1.0"
    # A second config run on 3.1.1 makes that release run: only 3.2.0–3.3.0 are left not run.
    both = fixed_in({**run, 2: {"3.0.0": "pass", "3.1.1": "pass", "3.3.1": "pass"}},
                    {**inferred, 2: {"3.1.0": "pass", "3.2.0": "pass", "3.3.0": "pass"}})
    assert both.not_run == ["3.2.0", "3.3.0"] and describe(both).endswith("; 3.2.0–3.3.0 not run")
    passing = fixed_in({1: {"3.0.0": "pass", "3.3.1": "pass"}}, {1: {"3.1.0": "pass"}})
    assert describe(passing) == "passing on every release tested (3.0.0, 3.3.1); 3.1.0 not run (inferred)"
