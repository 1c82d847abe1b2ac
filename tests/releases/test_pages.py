"""Per-release verdicts on the task page, the board, /charts/releases and /api/tasks/<n> (real DB, real views)."""
import pytest
from django.contrib.auth.models import User

from tests.charts.figures import page_figure
from tracker.figures.cells import CELL_DIFFERS, CELL_FAIL, CELL_NO_VERDICT, CELL_PASS
from tracker.models import TestRun
from tracker.selectors.releases import release_matrix, task_fixed_in

from .grids import merged_pr, store_grid

pytestmark = pytest.mark.django_db

FAIL, OK = "accuracy_error", "pass"


@pytest.fixture
def board():
    fixed = store_grid(11, "paddle.clip", {"3.0.0": [FAIL] * 3, "3.3.1": [OK] * 3})
    merged_pr(fixed)
    partly = store_grid(12, "paddle.cumsum", {"3.0.0": [FAIL] * 3, "3.3.1": [OK, FAIL, FAIL]})
    done = store_grid(13, "paddle.exp", {"3.0.0": [FAIL], "3.3.1": [OK]}, status="completed")
    return fixed, partly, done


def test_task_page_shows_grid_table_and_fixed_in_line(client, board):
    html = client.get("/tasks/11").content.decode()
    assert "fixed in Paddle 3.3.1 (all 3 configs pass from 3.3.1 on; 3 fail on 3.0.0)" in html
    assert "#72000" in html and "merged 2025-05-06" in html
    assert 'id="release-grid"' in html and 'id="release-grid-table"' in html
    assert html.count('class="status-accuracy_error"') == 3 and "max abs 3.4e+38" in html
    assert "partly fixed: 1 of 3 pass on 3.3.1" in client.get("/tasks/12").content.decode()


def test_task_page_in_chinese(client, board):
    html = client.get("/tasks/11", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "修复于 Paddle 3.3.1" in html


def test_api_carries_per_release_verdicts_and_the_answer(client, board):
    data = client.get("/api/tasks/11").json()
    assert data["releases"]["releases"] == ["3.0.0", "3.3.1"]
    assert data["releases"]["fixed_in"]["kind"] == "fixed" and data["releases"]["fixed_in"]["release"] == "3.3.1"
    row = data["releases"]["verdicts"][0]["by_release"]
    assert row["3.0.0"]["status"] == FAIL and row["3.3.1"]["status"] == OK
    assert row["3.0.0"]["paddle_commit"].startswith("6ed5dd3833")


def test_board_column_and_fixed_upstream_filter(client, board):
    html = client.get("/").content.decode()
    assert "Fixed in" in html
    filtered = client.get("/?fixed_upstream=1").content.decode()
    # No.11 is fixed and open; No.12 only partly; No.13 is fixed but already completed.
    assert 'id="task-11"' in filtered and 'id="task-12"' not in filtered and 'id="task-13"' not in filtered


def test_releases_chart_page_has_figures_and_the_same_data_as_tables(client, board):
    html = client.get("/charts/releases").content.decode()
    for figure in ("fixed-per-release", "passing-per-release", "task-release-heatmap"):
        assert f'id="{figure}"' in html
    # Two CPU tasks fixed in 3.3.1; 1 + 3 + 1 configs pass on 3.3.1 of 7 judged.
    assert "<tr><td>3.3.1</td><td>2</td><td>0</td><td>5</td><td>7</td></tr>" in html
    assert '<a href="/tasks/12">CPU No.12</a>' in html


def test_staff_button_starts_one_matrix_run_and_unknown_release_is_refused(client, board, old_env):
    client.force_login(User.objects.create_user("maint", password="pw", is_staff=True))
    assert "Re-test on every release" in client.get("/tasks/11").content.decode()
    before = TestRun.objects.count()
    response = client.post("/runs/start", {"scope": "task", "task": "11", "lane": "cpu", "releases": "9.9.9",
                                           "next": "/tasks/11"}, follow=True)
    assert "no Paddle environment for release &#x27;9.9.9&#x27;" in response.content.decode()
    assert TestRun.objects.count() == before
    response = client.post("/runs/start", {"scope": "task", "task": "11", "lane": "cpu", "releases": "all"})
    parent = TestRun.objects.filter(release="matrix").get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{parent.pk}"
    assert "3.0.0" in [lane.release for lane in parent.lanes.all()]
    page = client.get(f"/runs/{parent.pk}").content.decode()
    assert 'id="release-lanes"' in page and 'data-release="3.0.0"' in page


def _release_cells(html: str) -> dict[str, list]:
    """The task page's configs × releases grid as drawn: release -> the column's cell values."""
    trace = page_figure(html, "release-grid")["data"][0]
    return {release: [row[i] for row in trace["z"]] for i, release in enumerate(trace["x"])}


def test_release_grid_and_fixed_in_line_read_a_documented_difference_alike(client):
    # One rule (tracker.vocab): a documented difference is a verdict that neither passes nor fails. The
    # grid paints it "differs from Torch", not grey (no verdict); the "fixed in" line counts it among the
    # judged configs (so the task is not fixed) and not among the failures.
    mixed = store_grid(21, "paddle.unique", {"3.0.0": [FAIL, FAIL, FAIL],
                                             "3.3.1": [OK, "documented_difference", "unsupported"]})
    by_design = store_grid(22, "paddle.unique_consecutive", {"3.0.0": [FAIL], "3.3.1": ["documented_difference"]})

    html = client.get("/tasks/21").content.decode()
    cells = _release_cells(html)
    assert cells["3.3.1"] == [CELL_PASS, CELL_DIFFERS, CELL_NO_VERDICT]
    answer = task_fixed_in(mixed)
    assert (answer.kind, answer.passing_latest, answer.judged_latest) == ("partly_fixed", 1, 2)
    assert answer.passing_latest == cells["3.3.1"].count(CELL_PASS)
    assert answer.judged_latest == sum(1 for v in cells["3.3.1"] if v not in (CELL_NO_VERDICT, None))
    assert "partly fixed: 1 of 2 pass on 3.3.1" in html

    html = client.get("/tasks/22").content.decode()
    assert _release_cells(html) == {"3.0.0": [CELL_FAIL], "3.3.1": [CELL_DIFFERS]}
    answer = task_fixed_in(by_design)
    assert answer.kind == "differs_on_latest" and answer.judged_latest == 1
    assert "differs from Torch on 3.3.1: none of its 1 configs passes and none fails" in html
    assert "failing on every release tested" not in html

    # /charts/releases: the same reading (half of No.21's judged configs pass on 3.3.1, none of No.22's).
    matrix = release_matrix()
    fractions = {t["number"]: dict(zip(matrix["releases"], t["fractions"])) for t in matrix["tasks"]}
    assert fractions[21]["3.3.1"] == 0.5 and fractions[22]["3.3.1"] == 0.0
    assert matrix["judged_configs"]["3.3.1"] == 3 and matrix["passing_configs"]["3.3.1"] == 1
