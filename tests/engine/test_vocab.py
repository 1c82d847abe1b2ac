"""The verdict statuses and their classes: one classification for the engine, coverage and the board."""
import pytest

from apitester import coverage, vocab
from apitester.engine import compare
from apitester.vocab import CLASSES, NO_VERDICT, Status, status_class


def test_the_classes_partition_every_status():
    for status in Status:
        assert [name for name, members in CLASSES.items() if status in members] == [status_class(status)], status
    assert set().union(*CLASSES.values()) == set(Status)
    assert sum(len(members) for members in CLASSES.values()) == len(Status)
    assert compare.STATUSES == tuple(Status)


def test_an_unknown_status_has_no_class():
    with pytest.raises(KeyError, match="unknown verdict status 'passed'"):
        status_class("passed")


def test_statuses_are_plain_strings_at_the_json_seam():
    import json

    verdict = compare.Verdict(Status.DOCUMENTED_DIFFERENCE, message="by design").to_dict()
    assert json.loads(json.dumps(verdict))["status"] == "documented_difference"
    assert "pass" in vocab.PASSING and "accuracy_error" in vocab.FAILING


@pytest.mark.parametrize("status", list(Status))
def test_coverage_counts_a_verdict_exactly_where_the_board_sees_one(status):
    # Coverage's "verdict" = the engine judged the config; the runner's crash/timeout are counted apart.
    category = coverage.category({"status": status})
    if status in NO_VERDICT:
        assert category != "verdict"
    elif status in vocab.RUNNER_FAILURES:
        assert category in ("crash", "timeout")
    else:
        assert category == "verdict"


def test_torch_error_is_no_verdict_in_coverage_as_on_the_board():
    assert status_class("torch_error") == "no_verdict"
    assert coverage.category({"status": "torch_error"}) == "torch_error"
