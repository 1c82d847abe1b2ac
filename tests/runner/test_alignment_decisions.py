"""The alignment page as the maintainer's decision table (issue #47): per API × dtype keep Paddle's kernel, align to
Torch or undecided, with its evidence (exact share, dULP histogram, who is closer on how many configs and readings,
the sensitivities not measured yet), from stored verdicts read by the real selectors and views."""
import pytest
from django.utils import timezone

from tracker.models import Task, TestRun
from tracker.selectors.alignment import alignment_table, ulp_bin
from tracker.services.runs import store_result
from tracker.templatetags.board_tags import compact

from .conftest import make_task

pytestmark = pytest.mark.django_db


def reading(ulp, closer="", nondeterministic="", status="pass"):
    """A stored verdict that is not exact (``ulp`` 0: exact) with its readings."""
    return {"status": status, "exact": ulp == 0, "max_ulp": ulp, "stable": None if ulp == 0 else not nondeterministic,
            "nondeterministic": nondeterministic, "closer": closer,
            "paddle_rmse": 2.0 if closer == "paddle_off" else 1.0 if closer else None,
            "torch_rmse": 2.0 if closer == "torch_off" else 1.0 if closer else None}


def run_on(release: str) -> TestRun:
    return TestRun.objects.create(scope={"kind": "tasks"}, lane="cpu", release=release, paddle_version=release,
                                  total=1, state="done", finished_at=timezone.now())


def board(rows: dict, release: str = "3.3.1", runs: int = 1):
    """rows: api -> [verdict, ...] (one float32 config each), every config stored in ``runs`` runs."""
    made = [run_on(release) for _ in range(runs)]
    for api, verdicts in rows.items():
        configs = [f'{api}(Tensor([{i + 2}],"float32"), )' for i in range(len(verdicts))]
        task = Task.objects.filter(api=api).first() or make_task(Task.objects.count() + 10, api, configs)
        for config, verdict in zip(configs, verdicts):
            for run in made:
                store_result(run, task.failing_configs.get(config=config), verdict, 0.1)


def test_each_row_gets_a_decision_with_its_evidence():
    board({
        "paddle.keep": [reading(1, "torch_off"), reading(2, "torch_off"), reading(0), reading(5, "paddle_off")],
        "paddle.align": [reading(1, "paddle_off"), reading(1234567890, "paddle_off", status="accuracy_error")],
        "paddle.even": [reading(1, "within_rounding")],
        "paddle.noisy": [reading(3, "torch_off", nondeterministic="paddle")],
        "paddle.unread": [reading(4), reading(1, "no_oracle")],
        "paddle.same": [reading(0), reading(0)],
    }, runs=2)
    rows = {row.api: row for row in alignment_table("3.3.1")}
    decisions = {api: (row.decision, row.advice) for api, row in rows.items()}
    assert decisions == {
        "paddle.keep": ("keep_paddle", "keep_paddle"), "paddle.align": ("align_torch", "align_paddle"),
        "paddle.even": ("align_torch", "align_for_consistency"), "paddle.noisy": ("undecided", "fix_nondeterminism"),
        "paddle.unread": ("undecided", "not_read"), "paddle.same": ("keep_paddle", "exact")}
    keep = rows["paddle.keep"]
    assert (keep.configs, keep.exact, keep.exact_share) == (4, 1, 0.25)
    assert keep.ulp_histogram == {"0": 1, "1": 1, "2-3": 1, ">3": 1}
    assert (keep.closer["torch_off"], keep.closer["paddle_off"], keep.read_configs) == (2, 1, 3)
    assert keep.readings == 6  # three configs read, in each of the two runs
    assert keep.decision_text == "keep Paddle's kernel"
    assert rows["paddle.unread"].read_configs == 1 and rows["paddle.unread"].not_read == 1
    assert rows["paddle.align"].ulp_histogram[">3"] == 1 and rows["paddle.align"].max_ulp == 1234567890
    assert (keep.thread_sensitivity, keep.torch_sensitivity) == ("not_measured", "not_measured")
    assert [ulp_bin(u) for u in (0, 1, 2, 3, 4)] == ["0", "1", "2-3", "2-3", ">3"]


def test_the_decision_table_in_the_api_and_on_the_page(client):
    board({"paddle.keep": [reading(1, "torch_off")], "paddle.align": [reading(1234567890, "paddle_off")]})
    board({"paddle.keep": [reading(1, "paddle_off")]}, release="3.0.0")  # another release, another decision
    for prefix in ("/api", "/api/v1"):
        data = client.get(f"{prefix}/alignment").json()
        assert data["totals"]["decision"] == {"keep_paddle": 1, "align_torch": 1, "undecided": 0}
        row = {r["api"]: r for r in data["rows"]}["paddle.keep"]
        assert (row["decision"], row["read_configs"], row["readings"], row["ulp_histogram"]["1"]) == (
            "keep_paddle", 1, 1, 1)
    old = {r["api"]: r for r in client.get("/api/v1/alignment?release=3.0.0").json()["rows"]}
    assert old["paddle.keep"]["decision"] == "align_torch"
    assert client.get("/api/v1/alignment?sort=-decision").json()["rows"][0]["api"] == "paddle.keep"

    page = client.get("/alignment").content.decode()
    assert 'data-api="paddle.align" data-dtype="float32" data-decision="align_torch"' in page
    assert ">1.2e9<" in page and "1234567890<" not in page  # compact in the cell, exact in its title
    assert "Decisions: keep Paddle's kernel 1, align to Torch 1, undecided 0" in page


def test_compact_keeps_a_distance_short():
    assert [compact(v) for v in (None, 0, 7, 9999, 12345, 1234567890, 0.0123, 2.5e-07, 651.234, float("inf"))] == [
        "–", "0", "7", "9999", "1.2e4", "1.2e9", "0.0123", "2.5e-07", "651", "inf"]


def test_a_later_run_without_readings_keeps_the_last_reading_on_the_release(client):
    board({"paddle.keep": [reading(2, "torch_off")]})
    board({"paddle.keep": [{"status": "pass", "exact": False, "max_ulp": 2}]})  # a plain re-run: no readings
    (row,) = alignment_table("3.3.1", api="paddle.keep")
    assert (row.decision, row.read_configs, row.readings, row.not_read) == ("keep_paddle", 1, 1, 0)
    (config,) = client.get("/api/v1/alignment?api=paddle.keep").json()["rows"][0]["config_rows"]
    first, second = TestRun.objects.order_by("id")
    assert (config["run"], config["reading_run"], config["closer"]) == (second.pk, first.pk, "torch_off")
