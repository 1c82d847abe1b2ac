"""The configs × releases grid and /charts/releases in a real browser (Debian's chromium via Playwright)."""
import pytest

from .grids import store_grid

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FAIL, OK = "accuracy_error", "pass"


def _ready(page, n):
    page.wait_for_function(
        f"document.querySelectorAll('.plotly-figure[data-ready=\"1\"]').length >= {n}", timeout=20000)


@pytest.fixture
def grids(db):
    store_grid(11, "paddle.clip", {"3.0.0": [FAIL, FAIL], "3.1.0": [OK, FAIL], "3.3.1": [OK, OK]})
    store_grid(12, "paddle.cumsum", {"3.0.0": [FAIL, "crash"], "3.3.1": [OK, FAIL]})


def test_task_grid_draws_colours_and_hover_diffs(live_server, page, grids):
    page.goto(live_server.url + "/tasks/11")
    _ready(page, 1)
    grid = page.evaluate("""() => {
        const gd = document.getElementById('release-grid'); const t = gd._fullData[0];
        return {x: t.x, z: t.z, text: t.text, points: gd.dataset.points};
    }""")
    assert grid["x"] == ["3.0.0", "3.1.0", "3.3.1"]
    assert grid["z"] == [[1, 0, 0], [1, 1, 0]]  # red = fail, green = pass
    assert "max abs 3.4e+38" in grid["text"][0][0] and "6ed5dd3833" in grid["text"][0][0]
    assert page.locator("#fixed-in").inner_text().startswith("fixed in Paddle 3.3.1")
    assert page.locator("#release-grid-table tbody tr").count() == 2
    # hovering a cell shows plotly's tooltip with the diff numbers
    box = page.evaluate("""() => {
        const gd = document.getElementById('release-grid'); gd.scrollIntoView(); const r = gd.getBoundingClientRect();
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        return {x: r.left + xa._offset + xa.l2p(0), y: r.top + ya._offset + ya.l2p(0)};
    }""")
    page.mouse.move(box["x"] - 5, box["y"] - 5)
    page.mouse.move(box["x"], box["y"])
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10000)
    assert "max rel" in page.locator(".hoverlayer .hovertext").text_content()
    assert page.console_errors == []


def test_releases_chart_draws_and_the_heatmap_links_to_tasks(live_server, page, grids):
    page.goto(live_server.url + "/charts/releases")
    _ready(page, 3)
    for figure in ("fixed-per-release", "passing-per-release", "task-release-heatmap"):
        assert int(page.get_attribute(f"#{figure}", "data-points") or 0) > 0, figure
    target = page.evaluate("""() => {
        const gd = document.getElementById('task-release-heatmap'); gd.scrollIntoView(); const t = gd._fullData[0];
        const r = gd.getBoundingClientRect(), xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        return {x: r.left + xa._offset + xa.l2p(0), y: r.top + ya._offset + ya.l2p(1), number: t.customdata[1][0][0]};
    }""")
    assert target["number"] == 12
    with page.expect_navigation(timeout=15000):
        page.mouse.click(target["x"], target["y"])
    assert page.url.endswith("/tasks/12")
    assert page.console_errors == []
