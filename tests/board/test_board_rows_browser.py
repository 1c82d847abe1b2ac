"""The board at 1440 px in a real browser (Debian's chromium through Playwright), in English and Chinese: every row
is one line (its height measured), "fixed in" and the run's progress are badges with the sentence in their tooltip,
the chips say "unknown offline" beside the tracking issue's own figures, and the burn-down's first point is the
first dated event, not the import day (issue 37 items 3 and 4).

One server and one board for the module: the committed board fixture (the seed as imported: undated claims, the
issue's summary), two claims made later in dated comments, two tasks with per-release verdicts, a running run.
"""
from datetime import datetime, timezone

import pytest
from django.core.management import call_command
from django.utils import timezone as dj_timezone
from pytest_django.live_server_helper import LiveServer

from tests.releases.grids import BUILDS, store_grid
from tracker.models import Source, Task, TestRun
from tracker.selectors import board as board_selectors
from tracker.selectors import charts as chart_selectors
from tracker.services.claim_rules import claim_task, contributor_for
from tracker.services.runs import create_run, store_result

from .conftest import FIXTURE, wipe_board

pytestmark = [pytest.mark.browser, pytest.mark.django_db]  # the mark makes pytest-django set up the test database

WIDTH = 1440
# One line of 14 px text at line-height 1.5 plus the cell's padding and border: about 31 px; two lines are 50+.
ONE_LINE_PX = 36
FAIL, OK = "accuracy_error", "pass"
MAIN = {"paddle_version": "3.3.1", "paddle_commit": BUILDS["3.3.1"], "torch_version": "2.13.0+cpu"}
FIRST_DATED = datetime(2025, 6, 3, 9, tzinfo=timezone.utc)
LANGUAGES = {
    "en": {"completed": "completed: unknown offline", "figures": "tracking issue: completed 86, submitted 103 / claimed 139 of 183",
           "verified": "fix verified", "fixed": "fixed in a release", "claimed": "tasks claimed", "before": "before import",
           "unclaimed": "tasks without a dated claim"},
    "zh-hans": {"completed": "已完成: 离线未知", "figures": "跟踪 issue：完成 86，提交作品 103 / 任务认领 139，共 183",
                "verified": "修复已验证", "fixed": "已在某版本修复", "claimed": "已报名的任务", "before": "导入前",
                "unclaimed": "没有带日期报名的任务"},
}


def _wipe_runs():
    TestRun.objects.all().delete()


@pytest.fixture(scope="module")
def board(django_db_setup, django_db_blocker):
    """The module's board and server; the expected numbers are read here, through the selectors."""
    with django_db_blocker.unblock():
        wipe_board()
        _wipe_runs()
        call_command("loaddata", str(FIXTURE), verbosity=0)
        for number, login, day in ((22, "bob", FIRST_DATED), (23, "carol", datetime(2025, 6, 10, tzinfo=timezone.utc))):
            assert claim_task(Task.objects.get(number=number), contributor_for(login), source=Source.COMMENT,
                              source_ref=f"https://github.com/o/r/issues/1#issuecomment-{number}", when=day)
        # 184 fixed in 3.3.1, 185 still failing on one config
        fixed = store_grid(184, "paddle.nn.functional.scaled_dot_product_attention",
                           {"3.0.0": [FAIL, FAIL], "3.3.1": [OK, OK]})
        store_grid(185, "paddle.cumsum", {"3.0.0": [FAIL, FAIL], "3.3.1": [OK, FAIL]})
        # 184's fix verified on the main env's release (its own lane), then a run in progress over both tasks
        for state, tasks, stored in (("done", [184], 2), ("running", [184, 185], 1)):
            run = create_run("tasks", tasks=tasks, lane="cpu")
            TestRun.objects.filter(pk=run.pk).update(state=state, started_at=dj_timezone.now(),
                                                     heartbeat_at=dj_timezone.now(), paddle_version=MAIN["paddle_version"])
            for config in fixed.failing_configs.order_by("id")[:stored]:
                store_result(run, config, {"status": OK}, 0.1, build=MAIN)
        expected = {**board_selectors.fix_counts(), "burndown": chart_selectors.burndown_from_events()}
        server = LiveServer("127.0.0.1:0")
        server._live_server_modified_settings.enable()
    yield {"url": server.url, **expected}
    server._live_server_modified_settings.disable()
    server.stop()
    with django_db_blocker.unblock():
        _wipe_runs()
        wipe_board()


@pytest.fixture(scope="module", params=list(LANGUAGES))
def tab(browser, board, request):
    """One 1440 px browser tab per language for the module (the language by its cookie, as the switch sets it)."""
    context = browser.new_context(viewport={"width": WIDTH, "height": 900})
    context.add_cookies([{"name": "django_language", "value": request.param, "url": board["url"]}])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.errors, page.language = errors, request.param
    yield page
    context.close()


def row_heights(page) -> dict[str, float]:
    return page.evaluate("""() => Object.fromEntries(Array.from(document.querySelectorAll('table.board tbody tr'))
        .map(tr => [tr.id, tr.getBoundingClientRect().height]))""")


def test_every_board_row_is_one_line_at_1440_px(tab, board):
    tab.goto(board["url"] + "/")
    assert tab.evaluate("document.documentElement.lang") == tab.language
    heights = row_heights(tab)
    assert len(heights) == 185
    tall = {row: h for row, h in heights.items() if h > ONE_LINE_PX}
    assert tall == {}, f"rows taller than one line: {tall}"
    # the table fits the page: no sideways scrolling
    assert tab.evaluate("document.documentElement.scrollWidth") <= WIDTH
    # One more narrow badge column (another item of the issue adds one) still leaves every row one line.
    tab.evaluate("""() => {
        document.querySelector('table.board thead tr').insertAdjacentHTML('beforeend', '<th>exact from</th>');
        document.querySelectorAll('table.board tbody tr').forEach(tr =>
            tr.insertAdjacentHTML('beforeend', '<td><span class="badge fixed-in-fixed">exact from 3.1.0</span></td>'));
    }""")
    assert max(row_heights(tab).values()) <= ONE_LINE_PX
    assert tab.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert tab.errors == []


def test_fixed_in_and_run_progress_are_badges_with_the_sentence_in_the_tooltip(tab, board):
    tab.goto(board["url"] + "/")
    fixed = tab.locator("#task-184 td.fixed-in .badge.fixed-in-fixed")
    assert fixed.inner_text() == "3.3.1"
    assert "3.3.1" in fixed.get_attribute("title") and len(fixed.get_attribute("title")) > 20
    assert tab.locator("#task-185 td.fixed-in .badge.fixed-in-partly_fixed").count() == 1
    progress = tab.locator('#task-184 .badge.run-progress[data-task="184"]')
    assert progress.inner_text() == "1/2 ✓1"
    assert progress.get_attribute("title") == ("1 of 2 configs re-tested: 1 pass" if tab.language == "en"
                                               else tab.evaluate("document.getElementById('task-184')"
                                                                 ".querySelector('.run-progress').title"))
    assert progress.get_attribute("title") != progress.inner_text()
    # a badge is a pill on the row's line, coloured
    box = progress.bounding_box()
    assert box["height"] <= 22
    assert tab.evaluate("getComputedStyle(document.querySelector('#task-184 .fixed-in-fixed')).backgroundColor") \
        not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")
    assert tab.errors == []


def test_chips_say_completed_is_unknown_offline_beside_the_issues_figures(tab, board):
    words = LANGUAGES[tab.language]
    tab.goto(board["url"] + "/")
    completed = " ".join(tab.locator("#chip-completed").inner_text().split())
    assert completed == f"{words['completed']} · {words['figures']}"
    assert board["verified"] >= 1 and board["fixed_in_release"] >= 1
    assert tab.locator("#chip-verified").inner_text() == f"{words['verified']} {board['verified']}"
    assert tab.locator("#chip-fixed-release").inner_text() == f"{words['fixed']} {board['fixed_in_release']}"
    assert tab.errors == []


def test_the_burndown_starts_at_the_first_dated_event_and_labels_the_import(tab, board):
    words = LANGUAGES[tab.language]
    tab.goto(board["url"] + "/charts/overview")
    tab.wait_for_function("document.querySelectorAll('.plotly-figure[data-ready=\"1\"]').length >= 2", timeout=20000)
    claimed = tab.evaluate("""(name) => {
        const t = document.getElementById('burndown').data.find(t => t.name === name);
        return {x: Array.from(t.x), y: Array.from(t.y)};
    }""", words["claimed"])
    assert claimed["x"][0] == FIRST_DATED.date().isoformat() == board["burndown"]["days"][0]
    assert claimed == {"x": board["burndown"]["days"], "y": board["burndown"]["claims"]} and claimed["y"] == [1, 2]
    # the import is one labelled row of the table (and a note on the figure), not a step on the import day
    first_row = tab.locator("#burndown-table tbody tr").first
    assert first_row.locator("td").first.inner_text() == words["before"]
    before = board["burndown"]["before_import"]
    assert [int(td) for td in first_row.locator("td").all_inner_texts()[1:3]] == [before["unclaimed"], before["claims"]]
    assert board["burndown"]["import_day"] not in tab.evaluate(
        "Array.from(document.getElementById('burndown').data).flatMap(t => Array.from(t.x)).join(' ')")
    assert tab.locator("#burndown .annotation-text").count() == 1
    # the undated claims are not subtracted on days they may not have happened yet: the line says what it counts
    names = tab.evaluate("Array.from(document.getElementById('burndown').data).map(t => t.name)")
    assert words["unclaimed"] in names
    assert tab.locator("#burndown-table thead th").nth(1).inner_text() == words["unclaimed"]
    assert tab.errors == []
