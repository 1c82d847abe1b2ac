"""The chart pages in a real browser: Debian's chromium driven by Playwright against a live server."""
import os
from pathlib import Path

import pytest
from django.db.models import Max

from tracker.models import ConfigResult, Task
from tracker.selectors import charts as sel
from tracker.services.synthetic import generate_results

from .board_history import DAYS, seed_history

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", "")) if os.environ.get("SCREENSHOT_DIR") else None


def wait_for_figures(page, count_at_least=1):
    page.wait_for_function(
        f"document.querySelectorAll('.plotly-figure[data-ready=\"1\"]').length >= {count_at_least}", timeout=20000
    )


def figure_points(page, figure_id):
    return int(page.get_attribute(f"#{figure_id}", "data-points") or 0)


@pytest.fixture
def filled_board(db):
    info = generate_results(runs=6, results=1500, seed=3, diff_maps=5)
    # Synthetic results carry no claims or board events: add a known history (webhooks and a real run)
    # so the burn-down and the contributor chart have data to draw.
    seed_history(first_number=Task.objects.aggregate(top=Max("number"))["top"] + 1)
    return info


def drawn_traces(page, figure_id):
    """What plotly.js holds for the drawn figure: name, x, y per trace, and the marks it put in the SVG."""
    return page.evaluate(
        """(id) => {
        const gd = document.getElementById(id);
        return {traces: gd.data.map(t => ({name: t.name, x: Array.from(t.x), y: Array.from(t.y)})),
                markers: gd.querySelectorAll('.scatterlayer path.point').length,
                bars: gd.querySelectorAll('.barlayer path').length};
        }""", figure_id)


def test_chart_pages_load_without_console_errors_and_draw_data(live_server, page, filled_board):
    for path, figures in (("/charts/overview", ["funnel", "burndown"]), ("/charts/heatmap", ["task-heatmap"]),
                          ("/charts/contributors", ["contributors"]), ("/charts/pass-fail-transitions", ["pass-fail-transitions"])):
        page.goto(live_server.url + path)
        wait_for_figures(page, len(figures))
        for figure_id in figures:
            assert figure_points(page, figure_id) > 0, (path, figure_id)
            # plotly drew SVG/WebGL marks for the data, not just an empty frame
            assert page.locator(f"#{figure_id} .plot-container").count() == 1
        assert page.console_errors == [], (path, page.console_errors)


def test_burndown_and_contributor_charts_draw_the_boards_numbers(live_server, page, filled_board):
    burndown, history = sel.burndown_from_events(), sel.report_history()
    page.goto(live_server.url + "/charts/overview")
    wait_for_figures(page, 2)
    drawn = drawn_traces(page, "burndown")
    by_name = {t["name"]: t for t in drawn["traces"]}
    for key, name in (("unclaimed", "tasks without a claim"), ("claims", "tasks claimed"), ("prs", "tasks with a PR"),
                      ("merged", "tasks with a merged PR"), ("verified", "tasks with a verified fix")):
        assert by_name[name]["x"] == burndown["days"] == DAYS and by_name[name]["y"] == burndown[key], name
    assert by_name["tasks claimed"]["y"] == [1, 2, 3] and by_name["tasks with a verified fix"]["y"] == [0, 0, 1]
    cpu_history = by_name["failing configs in the CPU report"]
    assert cpu_history["x"] == history["CPU"]["days"] and cpu_history["y"] == history["CPU"]["configs"]
    # One SVG marker per point of every line (lines+markers), so no series is drawn empty.
    assert drawn["markers"] == sum(len(t["x"]) for t in drawn["traces"]) > 0

    rows = sel.contributor_stats()
    page.goto(live_server.url + "/charts/contributors")
    wait_for_figures(page)
    drawn = drawn_traces(page, "contributors")
    by_name = {t["name"]: t for t in drawn["traces"]}
    assert [r["login"] for r in rows] == ["alice", "bob"]
    for key, name in (("claimed", "claimed"), ("pr_submitted", "PR submitted"), ("completed", "completed"),
                      ("verified", "fix verified")):
        assert by_name[name]["x"] == ["alice", "bob"] and by_name[name]["y"] == [r[key] for r in rows], name
    assert by_name["claimed"]["y"] == [2, 1] and by_name["completed"]["y"] == [1, 0]
    assert drawn["bars"] == len(rows) * 4  # a bar per contributor and series
    assert page.console_errors == []
    if SCREENSHOTS:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.goto(live_server.url + "/charts/heatmap")
        wait_for_figures(page)
        page.screenshot(path=str(SCREENSHOTS / "heatmap.png"), full_page=False)


def test_clicking_a_heatmap_cell_opens_that_task(live_server, page, filled_board):
    page.goto(live_server.url + "/charts/heatmap")
    wait_for_figures(page)
    # Find the pixel position of the first non-empty cell from plotly's own axes.
    target = page.evaluate(
        """() => {
        const gd = document.getElementById('task-heatmap');
        const trace = gd._fullData[0];
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        for (let r = 0; r < trace.z.length; r++) {
          for (let c = 0; c < trace.z[r].length; c++) {
            if (trace.z[r][c] !== null) {
              const box = gd.getBoundingClientRect();
              return {x: box.left + xa._offset + xa.l2p(c), y: box.top + ya._offset + ya.l2p(r),
                      number: trace.customdata[r][c][0]};
            }
          }
        }
        return null;
      }"""
    )
    assert target is not None
    assert Task.objects.filter(number=target["number"]).exists()
    with page.expect_navigation(timeout=15000):
        page.mouse.click(target["x"], target["y"])
    assert page.url.rstrip("/").endswith(f"/tasks/{target['number']}")
    assert page.console_errors == []


def test_task_page_shows_config_heatmap_repro_command_and_diff_map(live_server, page, filled_board):
    result = ConfigResult.objects.filter(diff_map__isnull=False).select_related("task").first()
    page.goto(f"{live_server.url}/tasks/{result.task.number}")
    wait_for_figures(page)
    assert figure_points(page, "task-config-heatmap") > 0
    repro = page.locator("input.repro").first.input_value()
    assert repro.startswith("python -m apitester --accuracy=True --api_config='")
    page.goto(f"{live_server.url}/tasks/{result.task.number}/results/{result.id}/diff")
    wait_for_figures(page)
    masked = sum(flag for row in result.diff_map["mask"] for flag in row)
    # every cell of the 16×16 map is drawn, plus one marker per NaN/inf mismatch
    assert figure_points(page, "diff-map") == 16 * 16 + masked
    assert page.console_errors == []


def test_language_switch_changes_the_chart_page_language(live_server, page, filled_board):
    page.goto(live_server.url + "/charts/overview")
    assert page.locator("h1").first.inner_text() == "Overview"
    page.select_option("form.lang-switch select[name=language]", "zh-hans")
    page.locator("form.lang-switch button[type=submit]").click()
    page.wait_for_function("document.documentElement.lang === 'zh-hans'", timeout=10000)
    assert page.locator("h1").first.inner_text() == "概览"
    wait_for_figures(page, 2)
    assert page.console_errors == []
