"""The chart pages in a real browser: Debian's chromium driven by Playwright against a live server."""
import os
from pathlib import Path

import pytest

from tracker.models import ConfigResult, Task
from tracker.services.synthetic import generate_results

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
    return generate_results(runs=6, results=1500, seed=3, diff_maps=5)


def test_chart_pages_load_without_console_errors_and_draw_data(live_server, page, filled_board):
    for path, figures in (("/charts/overview", ["funnel", "burndown"]), ("/charts/heatmap", ["task-heatmap"]),
                          ("/charts/contributors", ["contributors"]), ("/charts/pass-fail-transitions", ["pass-fail-transitions"])):
        page.goto(live_server.url + path)
        wait_for_figures(page, len(figures))
        for figure_id in figures:
            if figure_id in ("burndown", "contributors"):
                continue  # synthetic data has no events or claims; these draw empty axes
            assert figure_points(page, figure_id) > 0, (path, figure_id)
            # plotly drew SVG/WebGL marks for the data, not just an empty frame
            assert page.locator(f"#{figure_id} .plot-container").count() == 1
        assert page.console_errors == [], (path, page.console_errors)
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
