"""The alignment page in a real browser (issue #35): rows per API x dtype from real engine verdicts (real paddle and
torch in this process, stored through store_result), sorted by clicking a column, a row's configs, another release."""
import pytest
from django.utils import timezone

import tests.fake_specs.exact  # noqa: F401  (apitester_test.noisy_paddle)
from apitester.readings import run_with_readings
from tracker.models import TestRun
from tracker.services.runs import create_run, store_result

from .conftest import make_task
from .test_exact_rule_board import EXACT, INTERPOLATE, NOISY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def run_and_store(run, task, config):
    verdict = run_with_readings(config)
    store_result(run, task.failing_configs.get(config=config), verdict.to_dict(), verdict.seconds)


def test_the_alignment_page_sorts_links_to_configs_and_switches_release(live_server, page):
    tasks = {7: make_task(7, "paddle.nn.functional.interpolate", [INTERPOLATE]),
             8: make_task(8, "apitester_test.noisy_paddle", [NOISY]), 9: make_task(9, "paddle.maximum", [EXACT])}
    run = create_run("tasks", tasks=[7, 8, 9], lane="cpu")
    for number, config in ((7, INTERPOLATE), (8, NOISY), (9, EXACT)):
        run_and_store(run, tasks[number], config)
    TestRun.objects.filter(pk=run.pk).update(state="done", done=3, finished_at=timezone.now(), paddle_version="3.3.1")
    old = TestRun.objects.create(scope={"kind": "task", "tasks": [9]}, lane="cpu", release="3.0.0",
                                 paddle_version="3.0.0", total=1, state="done")
    store_result(old, tasks[9].failing_configs.get(), {"status": "pass", "exact": False, "max_ulp": 1}, 0.1)

    page.goto(f"{live_server.url}/alignment")
    rows = page.locator("#alignment tbody tr")
    assert rows.count() == 3
    assert [rows.nth(i).get_attribute("data-api") for i in range(3)] == [
        "apitester_test.noisy_paddle", "paddle.maximum", "paddle.nn.functional.interpolate"]
    bilinear = page.locator('#alignment tr[data-api="paddle.nn.functional.interpolate"]')
    assert bilinear.locator("td.advice").get_attribute("title") == "Torch is closer: align Paddle"
    assert bilinear.locator("td.decision").text_content() == "align to Torch"
    noisy = page.locator('#alignment tr[data-api="apitester_test.noisy_paddle"] td.advice')
    assert noisy.get_attribute("title") == "Paddle is nondeterministic here: fix that first"
    assert noisy.text_content() == "undecided"

    page.click('#alignment th a[data-sort="max_ulp"]')  # descending first
    page.wait_for_url("**sort=-max_ulp**")
    order = [rows.nth(i).get_attribute("data-api") for i in range(3)]
    assert order[-1] == "paddle.maximum"  # 0 ULP: last
    page.click('#alignment th a[data-sort="max_ulp"]')  # again: ascending
    page.wait_for_url("**sort=max_ulp**")
    assert rows.first.get_attribute("data-api") == "paddle.maximum"

    bilinear.locator("td.api a").click()
    page.wait_for_url("**dtype=float16**")
    configs = page.locator("#alignment-configs tbody tr")
    assert configs.count() == 1 and "within_tolerance" in configs.first.text_content()
    assert "paddle_off" in configs.first.text_content() and "stable" in configs.first.text_content()
    configs.first.locator('a[href$="#latest-verdicts"]').click()
    page.wait_for_url("**/tasks/7#latest-verdicts")
    assert "paddle_off" in page.locator("#latest-verdicts td.exact-rule").first.text_content()

    page.goto(f"{live_server.url}/alignment")
    page.select_option('select[name="release"]', "3.0.0")
    page.click('form.filters button[type="submit"]')
    page.wait_for_url("**release=3.0.0**")
    assert rows.count() == 1 and rows.first.get_attribute("data-api") == "paddle.maximum"
    assert "Paddle 3.0.0: 1 configs, 0 exact, 1 within tolerance, 0 failing" in page.text_content("#alignment-totals")
