"""The board's regressions (configs failing now after an earlier pass) and the pass → fail transitions
(every such step, fixed ones too) on one dataset: what each lists, how they relate, what each page says."""
import re

import pytest

from tracker.selectors import charts as chart_sel
from tracker.selectors import runs as run_sel

from .test_chart_data import make_config, make_run, make_task, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def history():
    """Eight configs of one CPU task over four CPU runs and one GPU run (statuses per run, None = not run)."""
    task = make_task(11)
    runs = [make_run(days_ago=10 - i, version=f"3.3.{i}") for i in range(4)]
    gpu = make_run("gpu", days_ago=1, version="3.3.9")
    plan = {
        "still_failing": ["pass", "accuracy_error", "paddle_error", None],
        "fixed_again": ["pass", "accuracy_error", "pass", None],
        "now_a_gap": ["pass", "crash", "unsupported", None],      # newest judged verdict still fails
        "regressed_twice": ["pass", "accuracy_error", "pass", "timeout"],
        "gap_between_passes": ["pass", "unsupported", "pass", None],
        "fail_after_gap": ["pass", "torch_error", "shape_mismatch", None],
        "fixed": ["accuracy_error", "pass", None, None],
        "other_lane": ["pass", None, None, None],
    }
    configs = {}
    for i, (name, statuses) in enumerate(plan.items()):
        configs[name] = make_config(task, i)
        for run, status in zip(runs, statuses):
            if status:
                result(run, configs[name], status)
    result(gpu, configs["other_lane"], "accuracy_error")  # a GPU failure never follows a CPU pass
    return task, runs, configs


def test_regressions_are_the_configs_failing_now_and_transitions_every_pass_to_fail_step(history, client):
    task, (r1, r2, r3, r4), c = history
    ids = {cfg.id: name for name, cfg in c.items()}

    regressions = {(ids[r.failing_config_id], r.lane, r.passed_run_id, r.failed_run_id, r.status)
                   for r in run_sel.regressions()}
    assert regressions == {
        ("still_failing", "cpu", r1.pk, r3.pk, "paddle_error"),   # fails in its newest judged run
        ("now_a_gap", "cpu", r1.pk, r2.pk, "crash"),              # the later engine gap hides nothing
        ("regressed_twice", "cpu", r3.pk, r4.pk, "timeout"),      # passed last in r3
        ("fail_after_gap", "cpu", r1.pk, r3.pk, "shape_mismatch"),
    }
    transitions = sorted((ids[t.failing_config_id], t.lane, t.passed_run_id, t.failed_run_id, t.status)
                         for t in chart_sel.pass_fail_transitions())
    assert transitions == sorted([
        ("still_failing", "cpu", r1.pk, r2.pk, "accuracy_error"),  # the first failure after the pass
        ("fixed_again", "cpu", r1.pk, r2.pk, "accuracy_error"),    # history: stays after the fix
        ("now_a_gap", "cpu", r1.pk, r2.pk, "crash"),
        ("regressed_twice", "cpu", r1.pk, r2.pk, "accuracy_error"),
        ("regressed_twice", "cpu", r3.pk, r4.pk, "timeout"),
        ("fail_after_gap", "cpu", r1.pk, r3.pk, "shape_mismatch"),  # the gap in r2 is skipped, not a step
    ])

    # How they relate: a regression is the latest transition of a config and lane that has not passed since
    # (same passing run) ...
    def passed_after(name, lane, run_id):
        return c[name].results.filter(status="pass", run__lane=lane, run_id__gt=run_id).exists()

    latest = {}
    for t in transitions:
        latest[t[:2]] = max(latest.get(t[:2], t), t, key=lambda step: step[2])
    assert {r[:3] for r in regressions} == {t[:3] for t in latest.values() if not passed_after(t[0], t[1], t[3])}
    # ... and every transition without a regression belongs to a config that passed again later.
    unmatched = [t for t in transitions if t[:3] not in {r[:3] for r in regressions}]
    assert [t[:3] for t in unmatched] == [("fixed_again", "cpu", r1.pk), ("regressed_twice", "cpu", r1.pk)]
    assert all(passed_after(t[0], t[1], t[3]) for t in unmatched)

    # A run records the regressions it found: its own failures after an earlier pass.
    assert {ids[r.failing_config_id] for r in run_sel.regressions(lane="cpu", run=r3)} == {"still_failing",
                                                                                          "fail_after_gap"}
    assert {ids[r.failing_config_id] for r in run_sel.regressions(lane="cpu", run=r4)} == {"regressed_twice"}
    assert run_sel.regressions(lane="gpu") == [] and run_sel.regressions(task=task, lane="cpu") != []

    # The pages say what they show and list exactly those rows.
    listed = client.get("/regressions").content.decode()
    assert "Configs that fail now" in listed and "neither make nor hide a regression" in listed
    assert "/charts/pass-fail-transitions" in listed
    for name, cfg in c.items():
        assert (cfg.config.replace('"', "&quot;") in listed) == (name in {r[0] for r in regressions}), name

    chart = client.get("/charts/pass-fail-transitions").content.decode()
    assert "<h1>Pass → fail transitions</h1>" in chart and "including configs that passed again since" in chart
    assert 'href="/regressions"' in chart and 'id="pass-fail-transitions"' in chart
    body = chart.split('id="pass-fail-transitions-table"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr><th>.*?</tr>", body)
    assert len(rows) == len(transitions) == 6
    for name, lane, passed, failed, status in transitions:
        cell = c[name].config.replace('"', "&quot;")
        assert any(cell in row and f"#{passed}<" in row and f"#{failed}<" in row and status in row for row in rows)

    # The chart page's old address redirects to it.
    old = client.get("/charts/regressions")
    assert old.status_code == 301 and old["Location"] == "/charts/pass-fail-transitions"
